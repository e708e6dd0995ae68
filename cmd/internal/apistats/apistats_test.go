package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeModule lays out a small module of two layers for the measures.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

// small is a module whose every name has a known class.
var small = map[string]string{
	"go.mod":               "module example.com/m\n\ngo 1.22\n",
	"docs/architecture.md": "<!-- layers:begin -->\n| layer | packages |\n|---|---|\n| 0 | `a` |\n| 1 | `b` |\n<!-- layers:end -->\n",
	"a/a.go": `// Package a is the lower layer.
package a

import (
	"errors"
	"fmt"
)

// X is named by b.
func X() string { return fmt.Sprint(1) }

// Y is named by a test only.
func Y() {}

func Z() {}

// W is named by its own package only.
func W() {}

// Own names W.
func Own() { W() }

// T is named by b, and so is its field F.
type T struct {
	F int
	// G is named nowhere; its json tag says it is encoded.
	G int ` + "`json:\"g\"`" + `
}

// String makes T a fmt.Stringer.
func (T) String() string { return "t" }

// Request is a request.
type Request struct {
	// Mesh is a mesh.
	Mesh string
}

// Validate checks the request.
func (r Request) Validate() error {
	if r.Mesh == "" {
		return errors.New("--mesh is empty")
	}
	return nil
}

// Run validates the request again.
func Run(r Request) error { return r.Validate() }

// Resolve defaults the mesh.
func Resolve(s string) string {
	if s == "" {
		s = "1x2"
	}
	return s
}

// Pick returns def.
func Pick(def string) string { return def }
`,
	"a/a_test.go": `package a_test

import (
	"testing"

	"example.com/m/a"
	"example.com/m/b"
)

func TestY(t *testing.T) { a.Y(); b.B() }
`,
	"b/b.go": `// Package b is the upper layer.
package b

import "example.com/m/a"

// B names a's names.
func B() {
	_ = a.X()
	_ = a.Pick("1x2")
	var t a.T
	_ = t.F
}
`,
}

// TestMeasureSmallModule checks each class and figure on a module whose
// answers are known by construction.
func TestMeasureSmallModule(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := writeModule(t, small)
	r, err := report(dir)
	require.NoError(t, err)
	assert.Equal(t, "example.com/m", r.Module)
	assert.Empty(t, r.TypeErrors)
	require.Len(t, r.Packages, 2)

	a := r.Packages[0]
	assert.Equal(t, "a", a.Path)
	// Top level: X Y Z W Own T Request Run Resolve Pick; methods
	// T.String, Request.Validate; fields T.F T.G Request.Mesh.
	assert.Equal(t, 10, a.TopLevel)
	assert.Equal(t, 2, a.Methods)
	assert.Equal(t, 3, a.Fields)
	assert.Equal(t, 15, a.Exported)
	assert.Equal(t, 4, a.OtherProduct, "X, T, T.F, Pick")
	assert.Equal(t, 4, a.OwnOnly, "W, Request (Run's parameter), Request.Mesh, Request.Validate")
	assert.Equal(t, []string{"Y"}, a.TestsOnlyNames)
	assert.Equal(t, []string{"Own", "Resolve", "Run", "T.G", "T.String", "Z"}, a.UnnamedNames)
	assert.Equal(t, 1, a.Implicit, "T.String implements fmt.Stringer")
	assert.Equal(t, 1, a.JSONFields, "T.G")
	assert.Equal(t, 1, a.Undocumented, "Z")
	assert.Equal(t, 1, a.TopLevelMethodsTestsOnly)
	assert.Equal(t, 5, a.TopLevelMethodsUnnamed, "Own Resolve Run T.String Z")

	require.Len(t, r.ValidateMethods, 1)
	require.Len(t, r.ValidateCalls, 1)
	assert.Equal(t, "Run", r.ValidateCalls[0].In)
	assert.Equal(t, "a.Request.Validate", r.ValidateCalls[0].What)
	require.Len(t, r.RequestTypes, 1)
	assert.Equal(t, RequestType{Name: "a.Request", Fields: 1, Strings: 1}, r.RequestTypes[0])

	require.Len(t, r.Defaults, 1)
	assert.Equal(t, `"1x2"`, r.Defaults[0].Value)
	assert.Equal(t, 2, r.Defaults[0].Written)

	assert.Equal(t, 1, r.FlagLines)
	assert.Equal(t, []Count{{Name: "--mesh", Count: 1}}, r.FlagNames)

	require.Len(t, r.TestImports, 1)
	assert.Equal(t, TestImport{File: "a/a_test.go", FileLayer: 0, Import: "b", Layer: 1}, r.TestImports[0])
	assert.Empty(t, r.LargeFiles)
	assert.Empty(t, r.Commands, "no cmd/ckpt")
}

// TestCommandName checks the command path of a constructor.
func TestCommandName(t *testing.T) {
	for _, tc := range []struct{ ctor, use, want string }{
		{"newCacheBuildCmd", "build", "cache build"},
		{"newDiffCmd", "diff", "diff"},
		{"newCacheUnpackCmd", "unpack", "cache unpack"},
		{"rootWith", "ckpt", "ckpt"},
	} {
		assert.Equal(t, tc.want, commandName(tc.ctor, tc.use), tc.ctor)
	}
}

// TestFlagRE checks which texts name a flag.
func TestFlagRE(t *testing.T) {
	for text, want := range map[string][]string{
		"--mesh must be 1xN":             {"mesh"},
		"use --sample-bytes with --mode": {"sample-bytes", "mode"},
		"a -- b":                         nil,
		"x--y":                           nil,
		"(--read-data)":                  {"read-data"},
	} {
		var got []string
		for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
			got = append(got, m[1])
		}
		assert.Equal(t, want, got, text)
	}
}

// lineOf is line n (from 1) of a module file.
func lineOf(t *testing.T, root, pos string) string {
	t.Helper()
	file, n, ok := strings.Cut(pos, ":")
	require.True(t, ok, pos)
	line, err := strconv.Atoi(n)
	require.NoError(t, err, pos)
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	require.NoError(t, err, pos)
	lines := strings.Split(string(b), "\n")
	require.LessOrEqual(t, line, len(lines), pos)
	return lines[line-1]
}

// TestRepository runs apistats on this module and checks that the report
// is well-formed and agrees with the files it names.
func TestRepository(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root, err := findRoot(".")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(&out, root, true, false))
	var r Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))

	assert.Equal(t, "github.com/ckpt-dev/ckpt", r.Module)
	assert.Empty(t, r.TypeErrors, "the module type-checks")
	require.NotEmpty(t, r.Packages)
	var sum ExportCounts
	for _, ps := range r.Packages {
		assert.True(t, isLibrary(ps.Path), ps.Path)
		assert.DirExists(t, filepath.Join(root, ps.Path))
		assert.Positive(t, ps.Files, ps.Path)
		assert.Equal(t, ps.Exported, ps.TopLevel+ps.Methods+ps.Fields, ps.Path)
		assert.Equal(t, ps.Exported, ps.OtherProduct+ps.OwnOnly+ps.TestsOnly+ps.Unnamed, ps.Path)
		assert.LessOrEqual(t, ps.Implicit+ps.JSONFields, ps.Exported-ps.OtherProduct, ps.Path)
		assert.Len(t, ps.TestsOnlyNames, ps.TestsOnly, ps.Path)
		assert.Len(t, ps.UnnamedNames, ps.Unnamed, ps.Path)
		assert.LessOrEqual(t, ps.TopLevelMethodsNotOther, ps.Exported-ps.OtherProduct, ps.Path)
		sum.Exported += ps.Exported
		sum.OtherProduct += ps.OtherProduct
		sum.TestsOnly += ps.TestsOnly
	}
	assert.Equal(t, sum.Exported, r.Totals.Exported)
	assert.Equal(t, sum.OtherProduct, r.Totals.OtherProduct)
	assert.Equal(t, sum.TestsOnly, r.Totals.TestsOnly)

	// Every command is named once; its workflows are functions of library
	// packages, and the entry names are their distinct names.
	require.NotEmpty(t, r.Commands)
	seen := map[string]bool{}
	names := map[string]bool{}
	libs := map[string]bool{}
	for _, ps := range r.Packages {
		libs[filepath.Base(ps.Path)] = true
	}
	for _, c := range r.Commands {
		assert.NotEmpty(t, c.Name)
		assert.False(t, seen[c.Name], "command %q twice", c.Name)
		seen[c.Name] = true
		for _, w := range c.Workflows {
			pkgName, fn, ok := strings.Cut(w, ".")
			if assert.True(t, ok, w) {
				assert.True(t, libs[pkgName], "%s is not of a library package", w)
				names[fn] = true
			}
		}
	}
	require.NotEmpty(t, names, "no command runs a library workflow")
	assert.Len(t, r.EntryNames, len(names))
	for _, n := range r.EntryNames {
		assert.True(t, names[n], n)
	}

	// The sizes are those of the files.
	for _, f := range r.LargeFiles {
		b, err := os.ReadFile(filepath.Join(root, f.Name))
		require.NoError(t, err)
		assert.Greater(t, f.Lines, maxFileLines, f.Name)
		assert.InDelta(t, bytes.Count(b, []byte("\n")), f.Lines, 1, f.Name)
		assert.False(t, strings.HasSuffix(f.Name, "_test.go"), f.Name)
	}
	decl := regexp.MustCompile(`^(.*\.go): (\((\w+)\)\.)?(\w+)$`)
	for _, f := range r.LargeFuncs {
		m := decl.FindStringSubmatch(f.Name)
		require.NotNil(t, m, f.Name)
		assert.Greater(t, f.Lines, maxFuncLines, f.Name)
		b, err := os.ReadFile(filepath.Join(root, m[1]))
		require.NoError(t, err)
		assert.Contains(t, string(b), " "+m[4]+"(", f.Name)
	}
	// Each site is a line that says what the report says.
	for _, s := range r.ValidateCalls {
		assert.Contains(t, lineOf(t, root, s.Pos), "Validate(", s.Pos)
		assert.True(t, isLibrary(strings.Split(s.Pos, "/")[0]), s.Pos)
	}
	for _, g := range r.Defaults {
		assert.GreaterOrEqual(t, g.Written, 2, g.Value)
		assert.GreaterOrEqual(t, len(g.Sites), g.Written, g.Value)
		for _, s := range g.Sites {
			lineOf(t, root, s.Pos)
		}
	}
	assert.Len(t, r.FlagSites, r.FlagLines)
	for _, s := range r.FlagSites {
		assert.Contains(t, lineOf(t, root, s.Pos), "--", s.Pos)
	}
	for _, ti := range r.TestImports {
		b, err := os.ReadFile(filepath.Join(root, ti.File))
		require.NoError(t, err)
		assert.Contains(t, string(b), `"`+r.Module+"/"+ti.Import+`"`, ti.File)
		assert.True(t, ti.Layer < 0 || ti.Layer >= ti.FileLayer, ti.File)
	}

	// The text output has every section and one table row per package.
	out.Reset()
	require.NoError(t, run(&out, root, false, true))
	text := out.String()
	for _, h := range []string{"## Exported names per library package", "## Entry points", "## Sizes", "## Requests and their validation",
		"## Defaults written more than once", "## Flag names in library messages", "## Test files importing"} {
		assert.Contains(t, text, h)
	}
	for _, ps := range r.Packages {
		assert.Contains(t, text, "| `"+ps.Path+"` |")
	}
}

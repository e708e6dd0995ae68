package main

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modulePath = "github.com/ckpt-dev/ckpt"

// TestArchitectureLayers holds docs/architecture.md's layer table to the
// code: every package of the module is in the table, and each imports (in
// its non-test files, on every GOOS/GOARCH pair below) only packages of
// lower layers; its tests import lower layers, the package itself and the
// fixture packages the table's "fixtures" row names (testImportAllowed).
// The drawing under the table has one line per layer, each drawing only
// packages of that layer (checkDrawing).
func TestArchitectureLayers(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	layers := parseLayers(t, string(doc))
	fixtures := parseFixtures(t, string(doc), layers)
	checkDrawing(t, string(doc), layers)

	var pkgs []string
	require.NoError(t, filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "../.." && (strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			rel, err := filepath.Rel("../..", filepath.Dir(path))
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if len(pkgs) == 0 || pkgs[len(pkgs)-1] != rel {
				pkgs = append(pkgs, rel)
			}
		}
		return nil
	}))
	require.NotEmpty(t, pkgs)

	for _, p := range pkgs {
		lp, ok := layers[p]
		if !assert.True(t, ok, "package %s is not in the layer table of docs/architecture.md", p) {
			continue
		}
		for _, target := range [][2]string{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
			ctx := build.Default
			ctx.GOOS, ctx.GOARCH = target[0], target[1]
			bp, err := ctx.ImportDir(filepath.Join("../..", filepath.FromSlash(p)), 0)
			if err != nil {
				continue // no files for this target (e.g. the unix-only bench)
			}
			for _, imp := range bp.Imports {
				if !strings.HasPrefix(imp, modulePath+"/") {
					continue
				}
				q := strings.TrimPrefix(imp, modulePath+"/")
				lq, ok := layers[q]
				if assert.True(t, ok, "%s imports %s, which is not in the layer table", p, q) {
					assert.Less(t, lq, lp, "%s (layer %d) imports %s (layer %d) on %s/%s: imports go to lower layers only", p, lp, q, lq, target[0], target[1])
				}
			}
			// The tests (in-package and external) import lower layers,
			// their own package and the fixture packages only.
			for _, imp := range append(append([]string(nil), bp.TestImports...), bp.XTestImports...) {
				if !strings.HasPrefix(imp, modulePath+"/") {
					continue
				}
				q := strings.TrimPrefix(imp, modulePath+"/")
				if _, ok := layers[q]; !assert.True(t, ok, "a test of %s imports %s, which is not in the layer table", p, q) {
					continue
				}
				assert.NoError(t, testImportAllowed(layers, fixtures, p, q), "on %s/%s", target[0], target[1])
			}
		}
	}
}

// parseLayers reads the table between the layers markers: "| N | `pkg` `pkg` |".
func parseLayers(t *testing.T, doc string) map[string]int {
	t.Helper()
	i := strings.Index(doc, "<!-- layers:begin -->")
	j := strings.Index(doc, "<!-- layers:end -->")
	require.True(t, i >= 0 && j > i, "docs/architecture.md has no layers table")
	row := regexp.MustCompile(`^\| (\d+) \| (.*) \|$`)
	name := regexp.MustCompile("`([^`]+)`")
	layers := map[string]int{}
	for _, line := range strings.Split(doc[i:j], "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		for _, p := range name.FindAllStringSubmatch(m[2], -1) {
			_, dup := layers[p[1]]
			require.False(t, dup, "package %s is twice in the layer table", p[1])
			layers[p[1]] = n
		}
	}
	require.NotEmpty(t, layers)
	return layers
}

// testImportAllowed is the rule for the imports of a test of package p:
// a package of a lower layer, p itself, or a fixture package.
func testImportAllowed(layers map[string]int, fixtures map[string]bool, p, q string) error {
	if q == p || fixtures[q] || layers[q] < layers[p] {
		return nil
	}
	return fmt.Errorf("a test of %s (layer %d) imports %s (layer %d): tests import lower layers, their own package and the fixture packages only",
		p, layers[p], q, layers[q])
}

// parseFixtures reads the table's row "| fixtures | `pkg` `pkg` |": the
// packages of test fixtures, each also in a layer.
func parseFixtures(t *testing.T, doc string, layers map[string]int) map[string]bool {
	t.Helper()
	i := strings.Index(doc, "<!-- layers:begin -->")
	j := strings.Index(doc, "<!-- layers:end -->")
	require.True(t, i >= 0 && j > i, "docs/architecture.md has no layers table")
	row := regexp.MustCompile(`(?m)^\| fixtures \| (.*) \|$`)
	m := row.FindStringSubmatch(doc[i:j])
	require.NotNil(t, m, "the layer table has no fixtures row")
	out := map[string]bool{}
	for _, p := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
		_, ok := layers[p[1]]
		require.True(t, ok, "fixture package %s is in no layer", p[1])
		out[p[1]] = true
	}
	require.NotEmpty(t, out)
	return out
}

// checkDrawing holds the text drawing after the table to it: one line per
// layer, "N  pkg pkg ...: what they are" (braces and a trailing /* stand
// for several), every package drawn in the table at that layer, and no
// arrows (the layers say which way imports go).
func checkDrawing(t *testing.T, doc string, layers map[string]int) {
	t.Helper()
	j := strings.Index(doc, "<!-- layers:end -->")
	require.True(t, j >= 0)
	rest := doc[j:]
	a := strings.Index(rest, "```text\n")
	require.True(t, a >= 0, "no text drawing after the layer table")
	rest = rest[a+len("```text\n"):]
	b := strings.Index(rest, "```")
	require.True(t, b >= 0)
	want := map[int]bool{}
	for _, l := range layers {
		want[l] = true
	}
	line := regexp.MustCompile(`^ ?(\d+)  (.*)$`)
	seen := map[int]bool{}
	for _, l := range strings.Split(strings.TrimRight(rest[:b], "\n"), "\n") {
		assert.NotContains(t, l, "►", "the drawing has no arrows: %q", l)
		m := line.FindStringSubmatch(l)
		if !assert.NotNil(t, m, "drawing line %q is not \"N  pkg ...: what\"", l) {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		assert.False(t, seen[n], "layer %d is drawn twice", n)
		seen[n] = true
		pkgs, _, _ := strings.Cut(m[2], ":")
		for _, w := range strings.Fields(pkgs) {
			for _, p := range expandBraces(w) {
				if strings.HasSuffix(p, "/*") {
					found := false
					for q, lq := range layers {
						if strings.HasPrefix(q, strings.TrimSuffix(p, "*")) {
							found = true
							assert.Equal(t, n, lq, "the drawing puts %s (in %s) at layer %d, the table at %d", q, p, n, lq)
						}
					}
					assert.True(t, found, "the drawing names %s, which matches no package of the table", p)
					continue
				}
				lq, ok := layers[p]
				if assert.True(t, ok, "the drawing names %s, which is not in the table", p) {
					assert.Equal(t, lq, n, "the drawing puts %s at layer %d, the table at %d", p, n, lq)
				}
			}
		}
	}
	assert.Equal(t, want, seen, "the drawing has one line per layer of the table")
}

// expandBraces expands one "a/{b,c}" group: a/b, a/c.
func expandBraces(w string) []string {
	i, j := strings.Index(w, "{"), strings.Index(w, "}")
	if i < 0 || j < i {
		return []string{w}
	}
	var out []string
	for _, alt := range strings.Split(w[i+1:j], ",") {
		out = append(out, w[:i]+alt+w[j+1:])
	}
	return out
}

// TestTestImportRule: the rule of test imports on fabricated imports.
func TestTestImportRule(t *testing.T) {
	t.Parallel()
	layers := map[string]int{"ckpt": 2, "ckpt/synth": 4, "mapping": 4, "cache": 5, "cache/cachetest": 6, "cache/build": 6, "cache/check": 7}
	fixtures := map[string]bool{"ckpt/synth": true, "cache/cachetest": true}
	for _, c := range []struct {
		p, q string
		ok   bool
	}{
		{"cache", "ckpt", true},                   // lower
		{"cache", "cache", true},                  // its own package (an external test)
		{"cache", "cache/cachetest", true},        // a fixture, higher
		{"ckpt", "ckpt/synth", true},              // a fixture, higher
		{"cache", "cache/check", false},           // upward
		{"cache/build", "cache/check", false},     // upward
		{"cache/build", "cache/cachetest", true},  // a fixture, same layer
		{"mapping", "ckpt/synth", true},           // a fixture, same layer
		{"cache/cachetest", "cache/build", false}, // sideways
		{"cache/check", "cache/build", true},      // lower
	} {
		err := testImportAllowed(layers, fixtures, c.p, c.q)
		if c.ok {
			assert.NoError(t, err, "%s -> %s", c.p, c.q)
		} else {
			assert.Error(t, err, "%s -> %s", c.p, c.q)
		}
	}
}

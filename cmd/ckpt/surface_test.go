package main

import (
	"encoding/binary"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputSpellings: -o/--out is the one spelling of an output; the old
// spellings still work, hidden, with a note on stderr.
func TestOutputSpellings(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	tests := []struct {
		name     string
		args     func(out string) []string
		wantNote string
	}{
		{"contract --out", func(out string) []string { return []string{"contract", base, "--out", out} }, ""},
		{"contract -o", func(out string) []string { return []string{"contract", base, "-o", out} }, ""},
		{"contract --output (deprecated)", func(out string) []string { return []string{"contract", base, "--output", out} }, "ckpt: note: --output is deprecated, use -o/--out"},
		{"extract -o", func(out string) []string {
			return []string{"extract", base, "--match", "mtp.**", "-o", out, "--progress", "none"}
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "out.safetensors")
			code, _, stderr := runApp(t, tc.args(out)...)
			require.Equal(t, 0, code, stderr)
			_, err := os.Stat(out)
			require.NoError(t, err)
			if tc.wantNote != "" {
				assert.Contains(t, stderr, tc.wantNote)
			} else {
				assert.NotContains(t, stderr, "deprecated")
			}
		})
	}
}

// TestVerifyArchFlag: verify's architecture profile is --arch (--profile
// names the mapping profile of map and cache); --profile still works.
func TestVerifyArchFlag(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	code, _, stderr := runApp(t, "verify", base, "--arch", "none")
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runApp(t, "verify", base, "--profile", "none")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "ckpt: note: --profile is deprecated, use --arch")
	code, _, stderr = runApp(t, "verify", base, "--profile", "llama")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "unknown --arch")
	_, stdout, _ := runApp(t, "verify", "--help")
	assert.Contains(t, stdout, "--arch")
	assert.NotContains(t, stdout, "--profile", "the old spelling is hidden")
}

// TestDidYouMean: a mistyped subcommand or flag exits 2 naming the closest
// one.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"inspekt", "x"}, `unknown command "inspekt" for "ckpt"; did you mean inspect?`},
		{[]string{"cache", "biuld"}, `unknown command "biuld" for "ckpt cache"; did you mean build?`},
		{[]string{"inspect", "--fromat", "json", "x"}, "unknown flag: --fromat; did you mean --format?"},
		{[]string{"verify", "x", "--arc", "none"}, "unknown flag: --arc; did you mean --arch?"},
		{[]string{"cache", "build", "x", "--mesh", "1x2", "--rehash"}, "unknown flag: --rehash (see ckpt cache build --help)"},
		{[]string{"frobnicate"}, `unknown command "frobnicate" for "ckpt" (see ckpt --help)`},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
}

func TestLevenshtein(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"fromat", "format", 2}, {"format", "format", 0}, {"arc", "arch", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}} {
		assert.Equal(t, tc.d, levenshtein(tc.a, tc.b), "%s/%s", tc.a, tc.b)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
		{Key: "vcs.time", Value: "2026-11-30T12:00:00Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	v, err := buildVersionInfo(bi)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef0123456789abcdef01234567", v.Commit)
	assert.True(t, v.Modified)
	assert.Equal(t, "go1.26.8", v.Go)
	var b strings.Builder
	require.NoError(t, printVersion(&b, &v))
	assert.Contains(t, b.String(), "commit: 0123456789abcdef0123456789abcdef01234567 (modified) 2026-11-30T12:00:00Z")
	assert.Contains(t, b.String(), "ttnn/core/tensor/flatbuffer/tensor_flatbuffer.cpp@1104590e4c497e044b2fcda6cfec04bfdc68f356")

	code, stdout, stderr := runApp(t, "version", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.EqualValues(t, 3, doc["schema_version"])
	assert.Equal(t, Version, doc["version"])
	assert.Equal(t, runtime.Version(), doc["go"])
	formats := doc["formats"].(map[string]any)
	assert.Equal(t, "ckpt-tt-cache/1", formats["manifest"])
	assert.EqualValues(t, 2, formats["contract"], "contract_version 2 records the whole config")
	assert.Contains(t, formats["tensorbin"], "tensor.fbs@")
	profs := doc["profiles"].([]any)
	require.Len(t, profs, 2)
	prof := profs[0].(map[string]any)
	assert.Equal(t, "qwen36-mtp@pr55548", prof["name"])
	assert.Equal(t, "acd4eaccf17adb2c3e17c4738cb1c4fa3aa783f5", prof["pinned"].(map[string]any)["commit"])
	assert.Equal(t, "qwen36@main-2026-10", profs[1].(map[string]any)["name"])
	// Per profile: the pinned files not read at the line, and what is open.
	mainPins := profs[1].(map[string]any)["pinned"].(map[string]any)
	assert.Equal(t, "db6dc348aa32b978b8602682dbae1e4aab8b6511", mainPins["commit"])
	assert.Contains(t, mainPins["not_at_line"], "models/demos/blackhole/qwen36/tt/layer.py")
	assert.Contains(t, mainPins["not_at_line"], "models/demos/blackhole/qwen36/tt/model_config.py")
	assert.NotContains(t, mainPins["not_at_line"], "models/demos/blackhole/qwen36/tt/gdn/tp.py")
	for _, p := range profs {
		pins := p.(map[string]any)["pinned"].(map[string]any)
		var open []string
		for _, o := range pins["open"].([]any) {
			open = append(open, o.(string))
		}
		assert.Contains(t, strings.Join(open, "\n"), "prepare_for_fused_swiglu", "%s", p.(map[string]any)["name"])
	}

	code, stdout, _ = runApp(t, "version")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "ckpt "+Version+"\ncommit: ")
	assert.Contains(t, stdout, "  not read at the line (18 of 18 files): models/common/rmsnorm.py")
	assert.Contains(t, stdout, "  not read at the line (13 of 18 files): models/common/rmsnorm.py, models/demos/blackhole/qwen36/tt/layer.py")
	assert.Contains(t, stdout, "  open: prepare_for_fused_swiglu")
}

// walk calls fn for c and every command below it.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walk(s, fn)
	}
}

// TestEveryCommandHasExamples: every command's help shows examples; each
// ckpt command line in them names an existing command and uses only its
// visible flags.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	root := (&App{}).newRootCmd()
	walk(root, func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" {
			return
		}
		require.NotEmpty(t, c.Example, "%s has no Example", c.CommandPath())
		for _, line := range strings.Split(c.Example, "\n") {
			line = strings.TrimSpace(line)
			assert.True(t, strings.HasPrefix(line, "ckpt "), "%s: example %q", c.CommandPath(), line)
			for _, seg := range strings.FieldsFunc(line, func(r rune) bool { return r == '&' || r == '|' || r == '>' }) {
				words := strings.Fields(seg)
				if len(words) == 0 || words[0] != "ckpt" {
					continue
				}
				sub, _, err := root.Find(words[1:])
				require.NoError(t, err, "%s: example %q", c.CommandPath(), seg)
				for _, w := range words[1:] {
					name, ok := strings.CutPrefix(w, "--")
					if !ok || name == "" {
						continue
					}
					name, _, _ = strings.Cut(name, "=")
					fl := sub.Flags().Lookup(name)
					if assert.NotNil(t, fl, "%s: example %q uses unknown --%s", c.CommandPath(), seg, name) {
						assert.False(t, fl.Hidden, "%s: example uses deprecated --%s", c.CommandPath(), name)
					}
				}
			}
		}
	})
}

// TestVerifyStrictOnlyFailed: the base fixture with activation_scheme
// "static" has one warning (fp8.config) and no failure.
func TestVerifyStrictOnlyFailed(t *testing.T) {
	t.Parallel()
	b, _ := fixturePair(t)
	base := copyDir(t, b)
	editJSON(t, filepath.Join(base, "config.json"), func(m map[string]any) {
		m["quantization_config"].(map[string]any)["activation_scheme"] = "static"
	})
	code, out, _ := runApp(t, "verify", base, "--format", "text")
	require.Equal(t, 0, code, "warnings do not fail by default")
	assert.Contains(t, out, "pass ")

	code, out, _ = runApp(t, "verify", base, "--format", "text", "--strict")
	assert.Equal(t, 1, code, "--strict: warnings fail")
	assert.Contains(t, out, "FAILED (--strict: warnings fail): 0 failed, 1 warnings")

	code, out, _ = runApp(t, "verify", base, "--format", "text", "--only-failed")
	assert.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Equal(t, []string{"status", "check", "message"}, strings.Fields(lines[0]))
	assert.True(t, strings.HasPrefix(lines[1], "warn    fp8.config"), lines[1])
	assert.Contains(t, lines[len(lines)-1], "OK: 0 failed, 1 warnings, 22 passed", "the summary still counts every finding")
	assert.NotContains(t, out, "pass ")

	code, out, _ = runApp(t, "verify", base, "--format", "csv", "--only-failed")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "status,check,message\nwarn,fp8.config,"), out)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, "csv: the finding rows only")

	code, out, _ = runApp(t, "verify", base, "--format", "json", "--only-failed", "--strict")
	assert.Equal(t, 1, code)
	var doc struct {
		OK       bool             `json:"ok"`
		Strict   bool             `json:"strict"`
		Findings []map[string]any `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.False(t, doc.OK)
	assert.True(t, doc.Strict)
	require.Len(t, doc.Findings, 1)
	assert.Equal(t, "warn", doc.Findings[0]["status"])
}

// TestQuiet: --quiet leaves only errors on stderr.
func TestQuiet(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	out := filepath.Join(t.TempDir(), "c.json")
	code, _, stderr := runApp(t, "contract", base, "--output", out, "--read-data", "--progress", "plain")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "wrote the contract")
	require.Contains(t, stderr, "deprecated")

	code, stdout, stderr := runApp(t, "--quiet", "contract", base, "--output", out, "--read-data", "--progress", "plain")
	require.Equal(t, 0, code)
	assert.Empty(t, stderr)
	assert.Empty(t, stdout)
	code, _, stderr = runApp(t, "verify", base, "-q", "--read-data", "--progress", "bar", "--format", "json")
	require.Equal(t, 0, code)
	assert.Empty(t, stderr)

	code, _, stderr = runApp(t, "inspect", "-q", filepath.Join(t.TempDir(), "missing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "ckpt: ", "errors are still printed")
}

// rawSafetensors writes a one-tensor safetensors file with header h.
func rawSafetensors(t *testing.T, path, h string) {
	t.Helper()
	for len(h)%8 != 0 {
		h += " "
	}
	b := make([]byte, 8, 8+len(h)+1)
	binary.LittleEndian.PutUint64(b, uint64(len(h)))
	b = append(append(b, h...), 7)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestInspectMetadata(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	with := filepath.Join(dir, "with.safetensors")
	rawSafetensors(t, with, `{"__metadata__":{"format":"pt","note":"a|b"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`)
	without := filepath.Join(dir, "without.safetensors")
	rawSafetensors(t, without, `{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`)

	code, out, stderr := runApp(t, "inspect", with, "--metadata", "--summary", "--format", "text")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "metadata\nfile              key     value\nwith.safetensors  format  pt\nwith.safetensors  note    a|b\n")
	code, out, _ = runApp(t, "inspect", with, "--format", "text")
	require.Equal(t, 0, code)
	assert.NotContains(t, out, "metadata", "only with --metadata")
	code, out, _ = runApp(t, "inspect", with, "--metadata", "--format", "csv")
	require.Equal(t, 0, code)
	assert.Equal(t, "file,key,value\nwith.safetensors,format,pt\nwith.safetensors,note,a|b\n", out)
	code, out, _ = runApp(t, "inspect", with, "--format", "json")
	require.Equal(t, 0, code)
	var doc struct {
		Files []struct {
			Metadata map[string]string `json:"metadata"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, map[string]string{"format": "pt", "note": "a|b"}, doc.Files[0].Metadata)

	code, out, _ = runApp(t, "inspect", without, "--metadata", "--format", "text")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "metadata: none of the 1 file(s) has __metadata__")
}

// TestFormats: each command takes the --format values its help names, the
// same spellings everywhere; csv is a header line and rows, markdown has
// tables, an unknown value exits 2 listing the valid ones.
func TestFormats(t *testing.T) {
	t.Parallel()
	f := newSurfaceFixture(t)
	base, ft, small, cacheRoot, folder := f.base, f.ft, f.small, f.cacheRoot, f.folder
	all := []string{"table", "text", "json", "jsonl", "csv", "markdown"}
	tests := []struct {
		args    []string
		formats []string
	}{
		{[]string{"inspect", base}, all},
		{[]string{"verify", base}, all},
		{[]string{"diff", base, ft, "--progress", "none"}, append(all[:len(all):len(all)], "html")},
		{[]string{"map", small}, all},
		{[]string{"cache", "verify", cacheRoot, "--source", small, "--progress", "none"}, []string{"table", "text", "json", "jsonl", "markdown"}},
		{[]string{"cache", "ls", folder}, all},
		{[]string{"cache", "compare", folder, folder, "--progress", "none"}, all},
		{[]string{"version"}, []string{"text", "json"}},
		{[]string{"extract", base, "--match", "mtp.**", "-o", filepath.Join(f.dir, "x.safetensors"), "--progress", "none"}, all},
	}
	for _, tc := range tests {
		help := strings.Join(tc.args[:1], " ")
		for _, f := range tc.formats {
			code, out, stderr := runApp(t, append(append([]string{}, tc.args...), "--format", f)...)
			require.Contains(t, []int{0, 1}, code, "%s --format %s: %s", help, f, stderr)
			require.NotEmpty(t, out, "%s --format %s", help, f)
			switch f {
			case "csv":
				recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
				require.NoError(t, err, "%s --format csv: a header and rows of the same width, no prose", help)
				assert.Greater(t, len(recs[0]), 2, "%s --format csv: header %v", help, recs[0])
			case "html":
				assert.True(t, strings.HasPrefix(out, "<!DOCTYPE html>"), "%s --format html", help)
			case "markdown":
				if tc.args[0] != "cache" || tc.args[1] == "ls" { // cache verify/compare of a sound cache: only the verdict
					assert.Contains(t, out, "|:--", "%s --format markdown", help)
				}
			}
		}
		code, _, stderr := runApp(t, append(append([]string{}, tc.args...), "--format", "yaml")...)
		assert.Equal(t, 2, code, help)
		assert.Contains(t, stderr, `unknown --format "yaml" (want one of auto, `+strings.Join(tc.formats, ", ")+")", help)
	}
}

// TestREADMEFlagTable: the README's table of common flags says exactly
// which command takes which, and which --format values.
func TestREADMEFlagTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(b), "<!-- flags table: checked by TestREADMEFlagTable -->\n")
	require.True(t, ok, "the README has no flags table")
	root := (&App{}).newRootCmd()
	seen := map[string]bool{}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		require.Len(t, cells, 6, line)
		path := strings.Trim(cells[0], "`")
		seen[path] = true
		c, _, err := root.Find(strings.Fields(path))
		require.NoError(t, err, path)
		require.Equal(t, "ckpt "+path, c.CommandPath())
		// --format: the values the flag's help names.
		if fl := c.Flags().Lookup("format"); fl != nil {
			_, vals, _ := strings.Cut(fl.Usage, "format: ")
			vals, _, _ = strings.Cut(vals, " (")
			assert.Equal(t, vals, cells[1], "%s --format", path)
		} else {
			assert.True(t, strings.HasPrefix(cells[1], "—"), "%s has no --format", path)
		}
		for i, names := range [][]string{{"match", "exclude"}, {"workers"}, {"progress"}, {"out"}} {
			has := c.Flags().Lookup(names[0]) != nil
			for _, n := range names[1:] {
				assert.Equal(t, has, c.Flags().Lookup(n) != nil, "%s: --%s and --%s go together", path, names[0], n)
			}
			assert.Equal(t, has, strings.HasPrefix(cells[2+i], "yes"), "%s --%s: README says %q", path, names[0], cells[2+i])
		}
	}
	walk(root, func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() && !c.HasSubCommands() && c.Name() != "help" && c.Name() != "completion" {
			assert.True(t, seen[strings.TrimPrefix(c.CommandPath(), "ckpt ")], "%s is missing from the README's flags table", c.CommandPath())
		}
	})
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// small writes the small FP8 fixture pair into a temporary directory.
func small(t *testing.T) (dir, base, ft string) {
	t.Helper()
	dir = t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	return dir, base, ft
}

func TestInspectGolden(t *testing.T) {
	t.Parallel()
	dir, base, ft := small(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inspect_text", []string{"inspect", base, "--format", "text"}},
		{"inspect_table", []string{"inspect", base, "--format", "table"}},
		{"inspect_json", []string{"inspect", base, "--format", "json"}},
		{"inspect_jsonl", []string{"inspect", base, "--format", "jsonl"}},
		{"inspect_csv", []string{"inspect", base, "--format", "csv"}},
		{"inspect_markdown", []string{"inspect", base, "--format", "markdown"}},
		{"inspect_summary_text", []string{"inspect", base, "--summary"}},
		{"inspect_ft_mtp_text", []string{"inspect", ft, "--match", "mtp.**", "--format", "text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runApp(t, tc.args...)
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			golden(t, tc.name+".golden", strings.ReplaceAll(stdout, dir, "$DIR"))
		})
	}
}

// TestInspectJSONContract pins the docs/cli.md fields of the inspect JSON.
func TestInspectJSONContract(t *testing.T) {
	t.Parallel()
	_, base, _ := small(t)
	code, stdout, stderr := runApp(t, "inspect", base, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.EqualValues(t, ckpt.SchemaVersion, doc["schema_version"])
	for _, k := range []string{"source", "sharded", "files", "tensors", "summary"} {
		assert.Contains(t, doc, k)
	}
	f := doc["files"].([]any)[0].(map[string]any)
	for _, k := range []string{"path", "size", "header_bytes", "tensors"} {
		assert.Contains(t, f, k)
	}
	tn := doc["tensors"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "dtype", "shape", "file", "offset", "bytes", "parameters"} {
		assert.Contains(t, tn, k)
	}
	s := doc["summary"].(map[string]any)
	for _, k := range []string{"tensors", "bytes", "parameters", "parameters_by_dtype"} {
		assert.Contains(t, s, k)
	}
	// offset is absolute: reading there gives the tensor's bytes.
	var res inspect.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	c, err := ckpt.Open(t.Context(), base, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	for _, it := range res.Tensors[:5] {
		tt, ok := c.Lookup(it.Name)
		require.True(t, ok)
		want := make([]byte, tt.NBytes())
		_, err := tt.ReadAt(want, 0)
		require.NoError(t, err)
		got := make([]byte, it.NBytes)
		fh, err := os.Open(filepath.Join(base, it.File))
		require.NoError(t, err)
		_, err = fh.ReadAt(got, it.Offset)
		fh.Close()
		require.NoError(t, err)
		assert.Equal(t, want, got, it.Name)
	}
	// scales are not parameters; everything else with rank > 0 is.
	for _, it := range res.Tensors {
		if strings.HasSuffix(it.Name, "_scale_inv") {
			assert.Zero(t, it.Parameters, it.Name)
		} else {
			assert.Positive(t, it.Parameters, it.Name)
		}
	}
}

func writeNamed(t *testing.T, path string, names ...string) {
	t.Helper()
	var mts []ckpt.MemTensor
	for _, n := range names {
		mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: n, DType: numfmt.U8, Shape: []int64{2}}, Data: []byte{1, 2}})
	}
	require.NoError(t, ckpt.WriteFile(path, mts, nil))
}

func TestInspectNaturalSort(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.safetensors")
	writeNamed(t, p, "layers.10.w", "layers.2.w", "layers.1.w", "layers.02.x", "a", "layers.100.w", "b.9", "b.10")
	code, stdout, stderr := runApp(t, "inspect", p, "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	var got []string
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for _, line := range lines[:len(lines)-1] {
		var it inspect.Tensor
		require.NoError(t, json.Unmarshal([]byte(line), &it))
		got = append(got, it.Name)
	}
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	assert.Equal(t, "summary", sum["type"])
	assert.EqualValues(t, ckpt.SchemaVersion, sum["schema_version"])
	assert.EqualValues(t, 8, sum["tensors"])
	assert.Equal(t, []string{"a", "b.9", "b.10", "layers.1.w", "layers.2.w", "layers.02.x", "layers.10.w", "layers.100.w"}, got)
}

// TestInspectEscapesControlCharacters: hostile names cannot corrupt a
// terminal or break rows in table, text, markdown or csv output.
func TestInspectEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "m.safetensors")
	hostile := []string{"a\nb", "c\x1b[31mred", "d\te", "e\rf", "bell\a", "del\x7f", "c1\u0085x", "ok.é"}
	writeNamed(t, p, hostile...)
	for _, format := range []string{"text", "table", "markdown", "csv"} {
		code, stdout, stderr := runApp(t, "inspect", p, "--format", format)
		require.Equal(t, 0, code, stderr)
		for _, bad := range []string{"\x1b", "\t", "\r", "\a", "\x7f", "\u0085"} {
			assert.NotContains(t, stdout, bad, format)
		}
		nl, esc := `a\nb`, `c\x1b[31mred`
		if format == "markdown" { // its backslashes and '[' escaped: rendered, it reads as the text
			nl, esc = `a\\nb`, `c\\x1b\[31mred`
		}
		assert.Contains(t, stdout, nl, format)
		assert.Contains(t, stdout, esc, format)
		assert.Contains(t, stdout, "ok.é", format, "printable unicode is kept")
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		rows := 0
		for _, l := range lines {
			if strings.Contains(l, nl) {
				rows++
			}
		}
		assert.Equal(t, 1, rows, "%s: the name stays on one line", format)
	}
	code, stdout, _ := runApp(t, "inspect", p, "--format", "json")
	require.Equal(t, 0, code)
	assert.NotContains(t, stdout, "\x1b")

	// A '|' in a name must not split a markdown column.
	pipe := filepath.Join(t.TempDir(), "pipe.safetensors")
	writeNamed(t, pipe, "a|b")
	code, md, _ := runApp(t, "inspect", pipe, "--format", "markdown")
	require.Equal(t, 0, code)
	assert.Contains(t, md, `| a\|b |`)
	var res inspect.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	var names []string
	for _, it := range res.Tensors {
		names = append(names, it.Name)
	}
	assert.ElementsMatch(t, hostile, names, "JSON keeps the exact names")
}

func TestInspectMatch(t *testing.T) {
	t.Parallel()
	_, base, _ := small(t)
	count := func(args ...string) (int, string) {
		code, stdout, stderr := runApp(t, append([]string{"inspect", base, "--format", "json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var res inspect.Result
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		return len(res.Tensors), stderr
	}
	// An empty selection is an error (exit 2) with the `**` hint.
	code, _, stderr := runApp(t, "inspect", base, "--match", "model.language_model.layers.*.mlp.*")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "did you mean 'model.language_model.layers.*.mlp.**'?")
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 124},
		{[]string{"--match", "mtp.**"}, 22},
		{[]string{"--match", "mtp.**", "--exclude", "**.weight_scale_inv"}, 15},
		{[]string{"--match", "*.weight"}, 1}, // lm_head.weight: * stays in one segment
		{[]string{"--match", "model.language_model.layers.*.mlp.*.weight"}, 12},
		{[]string{"--match", "model.language_model.layers.{0,3}.input_layernorm.weight"}, 2},
		{[]string{"--match", "**.layers.?.self_attn.q_proj.weight"}, 2},
		{[]string{"--match", "mtp.fc.weight", "--match", "lm_head.weight"}, 2},
		{[]string{"--match", "model.visual.**"}, 21},
		{[]string{"--workers", "1", "--match", "lm_head.weight"}, 1},
	} {
		n, stderr := count(tc.args...)
		assert.Equal(t, tc.want, n, "%v", tc.args)
		assert.NotContains(t, stderr, "no tensor matches")
	}
	code, _, stderr = runApp(t, "inspect", base, "--match", "[")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "invalid --match glob")
}

// TestInspectWarnings: non-fatal problems are warnings on stderr, exit 0.
func TestInspectWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeNamed(t, filepath.Join(dir, "s1.safetensors"), "a", "extra")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), []byte(`{"metadata":{"total_size":2},"weight_map":{"a":"s1.safetensors"}}`), 0o644))
	code, stdout, stderr := runApp(t, "inspect", dir, "--format", "json")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "ckpt: warning: ")
	assert.Contains(t, stderr, `"extra"`)
	var res inspect.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.NotEmpty(t, res.Warnings)

	p := filepath.Join(t.TempDir(), "ws.safetensors")
	for _, v := range ckpttest.ValidFiles() {
		if v.Name == "leading-whitespace" {
			require.NoError(t, os.WriteFile(p, v.Data, 0o644))
		}
	}
	code, _, stderr = runApp(t, "inspect", p)
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "ckpt: warning: ")
	assert.Contains(t, stderr, "whitespace")
}

func TestInspectUsageErrors(t *testing.T) {
	t.Parallel()
	_, base, _ := small(t)
	for _, args := range [][]string{
		{"inspect"},
		{"inspect", base, base},
		{"inspect", base, "--format", "yaml"},
		{"inspect", base, "--no-such-flag"},
		{"inspect", base, "--workers", "0"},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.Empty(t, stdout)
		assert.NotEmpty(t, stderr)
	}
}

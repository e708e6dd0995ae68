package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiffGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	for _, c := range []struct{ golden, format, mode string }{
		{"diff_values.txt.golden", "text", "values"},
		{"diff_values.json.golden", "json", "values"},
		{"diff_bytes.txt.golden", "text", "bytes"},
		{"diff_header.txt.golden", "text", "header"},
		{"diff_values.md.golden", "markdown", "values"},
		{"diff_values.csv.golden", "csv", "values"},
	} {
		code, out, stderr := runApp(t, "diff", base, ft, "--format", c.format, "--mode", c.mode, "--progress", "none")
		assert.Equal(t, 1, code, stderr)
		assert.Empty(t, stderr)
		golden(t, c.golden, strings.ReplaceAll(out, dir, "DIR"))
	}
}

// TestDiffSummaryOnly: --summary prints the keys, config, per-group and
// summary lines without tensor rows, in every format.
func TestDiffSummaryOnly(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	code, full, _ := runApp(t, "diff", base, ft, "--format", "text", "--progress", "none")
	require.Equal(t, 1, code)
	code, out, _ := runApp(t, "diff", base, ft, "--format", "text", "--summary", "--progress", "none")
	require.Equal(t, 1, code, "the exit status is the same")
	assert.NotContains(t, out, "tensors:")
	assert.NotContains(t, out, "requant_identical  F8_E4M3")
	for _, l := range []string{"keys: 124 in base", "config: 1 difference(s)", "by group", "mtp          22", "summary: 106 identical, 4 changed"} {
		assert.Contains(t, out, l)
		assert.Contains(t, full, l)
	}

	code, out, _ = runApp(t, "diff", base, ft, "--format", "csv", "--summary", "--progress", "none")
	require.Equal(t, 1, code)
	assert.True(t, strings.HasPrefix(out, "group,tensors,identical,changed,"), out)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 5, "header and 4 groups")

	code, out, _ = runApp(t, "diff", base, ft, "--format", "json", "--summary", "--progress", "none")
	require.Equal(t, 1, code)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, []any{}, doc["tensors"])
	assert.NotEmpty(t, doc["groups"])

	code, out, _ = runApp(t, "diff", base, ft, "--format", "jsonl", "--summary", "--progress", "none")
	require.Equal(t, 1, code)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1)
	assert.Contains(t, out, `{"type":"summary","schema_version":3,`)
}

func TestDiffJSONContract(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	code, out, _ := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
	require.Equal(t, 1, code)
	var doc struct {
		Base, FT string
		Summary  map[string]int64
		Config   []map[string]any
		Tensors  []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, base, doc.Base)
	for _, k := range []string{"identical", "changed", "requant_identical", "dtype_changed", "shape_changed", "only_in_base", "only_in_ft"} {
		assert.Contains(t, doc.Summary, k)
	}
	assert.Equal(t, int64(7), doc.Summary["requant_identical"])
	row := doc.Tensors[0]
	for _, k := range []string{"name", "relation", "base_dtype", "ft_dtype", "shape", "numel", "changed_elems", "max_abs_diff", "rel_l2", "cosine"} {
		assert.Contains(t, row, k)
	}
	assert.Equal(t, "quantization_config.modules_to_not_convert", doc.Config[0]["path"])

	code, out, _ = runApp(t, "diff", base, ft, "--format", "jsonl", "--progress", "none")
	require.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	assert.Len(t, lines, len(doc.Tensors)+1, "a record per tensor and the summary")
	for _, l := range lines[:len(lines)-1] {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		assert.Contains(t, m, "relation")
		assert.Equal(t, "tensor", m["type"])
	}
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	assert.Equal(t, "summary", sum["type"])
	assert.EqualValues(t, 3, sum["schema_version"])
	assert.Equal(t, true, sum["differs"])
	assert.Contains(t, sum, "changed")
}

func TestDiffExitCodes(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"same checkpoint", []string{"diff", base, base}, 0, ""},
		{"same checkpoint, header", []string{"diff", base, base, "--mode", "header"}, 0, ""},
		{"differences", []string{"diff", base, ft}, 1, ""},
		{"identical tensors, but the config differs", []string{"diff", base, ft, "--match", "model.visual.**"}, 1, ""},
		{"same checkpoint, selection", []string{"diff", base, base, "--match", "mtp.**", "--exclude", "**.weight_scale_inv"}, 0, ""},
		{"sample", []string{"diff", base, ft, "--sample", "3", "--seed", "5", "--mode", "bytes"}, -1, ""},
		{"missing", []string{"diff", base, filepath.Join(base, "nope")}, 2, "nope"},
		{"bad mode", []string{"diff", base, ft, "--mode", "fast"}, 2, "--mode"},
		{"bad format", []string{"diff", base, ft, "--format", "yaml"}, 2, "--format"},
		{"bad progress", []string{"diff", base, ft, "--progress", "loud"}, 2, "--progress"},
		{"one argument", []string{"diff", base}, 2, "2 argument"},
		{"sample seed without sampling", []string{"diff", base, ft, "--sample-seed", "3"}, 2, "--sample-seed seeds --sample-bytes or --sample-budget"},
		{"seed without sample", []string{"diff", base, ft, "--seed", "5"}, 2, "--seed seeds --sample N"},
	} {
		code, _, stderr := runApp(t, append(c.args, "--progress", "none")...)
		if c.name == "bad progress" {
			code, _, stderr = runApp(t, c.args...)
		}
		if c.code >= 0 {
			assert.Equal(t, c.code, code, "%s: %s", c.name, stderr)
		} else {
			assert.Contains(t, []int{0, 1}, code, c.name)
		}
		assert.Contains(t, stderr, c.stderr, c.name)
	}
}

func TestDiffProgress(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	code, out, stderr := runApp(t, "diff", base, ft, "--progress", "plain", "--format", "json")
	require.Equal(t, 1, code)
	assert.Contains(t, stderr, "diff: 100.0%")
	assert.NotContains(t, out, "diff:", "progress never on stdout")
}

func TestDiffSampleBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	sample := []string{"--sample-bytes", "4KiB", "--sample-seed", "1", "--progress", "none"}
	for _, c := range []struct{ golden, by string }{
		{"diff_sampled.txt.golden", "tensor"},
		{"diff_sampled_layer.txt.golden", "layer"},
	} {
		code, out, stderr := runApp(t, append([]string{"diff", base, ft, "--format", "text", "--by", c.by}, sample...)...)
		assert.Equal(t, 1, code, stderr)
		golden(t, c.golden, strings.ReplaceAll(out, dir, "DIR"))
	}

	code, out, _ := runApp(t, append([]string{"diff", base, ft, "--format", "json", "--by", "layer"}, sample...)...)
	require.Equal(t, 1, code)
	var doc struct {
		Sample struct {
			BytesPerTensor int64 `json:"bytes_per_tensor"`
			Base, FT       struct {
				BytesRead  int64 `json:"bytes_read"`
				BytesTotal int64 `json:"bytes_total"`
			}
		}
		Tensors []struct {
			Name, Relation string
			Sampled        bool
			SampledElems   *int64     `json:"sampled_elems"`
			CI             []*float64 `json:"changed_fraction_ci95"`
		}
		Layers []map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, int64(4096), doc.Sample.BytesPerTensor)
	assert.Positive(t, doc.Sample.Base.BytesRead)
	assert.Less(t, doc.Sample.Base.BytesRead, doc.Sample.Base.BytesTotal)
	sampled := 0
	for _, r := range doc.Tensors {
		if !r.Sampled {
			continue
		}
		sampled++
		assert.Contains(t, []string{"changed", "no_change_seen", "requant_identical_seen"}, r.Relation, r.Name)
		assert.NotNil(t, r.SampledElems, r.Name)
		assert.Len(t, r.CI, 2, r.Name)
	}
	assert.Positive(t, sampled)
	assert.Len(t, doc.Layers, 7, "layers 0-3, mtp, visual, other")

	code, out, _ = runApp(t, append([]string{"diff", base, ft, "--format", "jsonl", "--by", "layer"}, sample...)...)
	require.Equal(t, 1, code)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 7+1, "7 layer records and the summary")

	code, out, stderr := runApp(t, append([]string{"diff", base, base, "--format", "text"}, sample...)...)
	assert.Equal(t, 0, code, "nothing seen to differ: %s", stderr)
	assert.Contains(t, out, "no differences found (a sample cannot prove identity)")

	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--sample-bytes", "lots"}, "--sample-bytes"},
		{[]string{"--sample-bytes", "0"}, "--sample-bytes"},
		{[]string{"--sample-bytes", "4KiB", "--mode", "bytes"}, "--mode values"},
		{[]string{"--by", "file"}, "--by"},
	} {
		code, _, stderr := runApp(t, append([]string{"diff", base, ft, "--progress", "none"}, c.args...)...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr, c.stderr, "%v", c.args)
	}
}

// --sample-budget spreads a total per side over the tensors: the JSON
// says so, the bytes read of each side stay within it, and it excludes
// --sample-bytes.
func TestDiffSampleBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none", "--sample-budget", "200KiB", "--sample-seed", "3")
	require.Equal(t, 1, code, stderr)
	var doc struct {
		Sample struct {
			BudgetBytes int64 `json:"budget_bytes"`
			Sampled     int   `json:"sampled_tensors"`
			Base, FT    struct {
				BytesRead  int64 `json:"bytes_read"`
				BytesTotal int64 `json:"bytes_total"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.Equal(t, int64(200<<10), doc.Sample.BudgetBytes)
	assert.Positive(t, doc.Sample.Sampled)
	for _, s := range []struct{ read, total int64 }{{doc.Sample.Base.BytesRead, doc.Sample.Base.BytesTotal}, {doc.Sample.FT.BytesRead, doc.Sample.FT.BytesTotal}} {
		assert.Positive(t, s.read)
		assert.LessOrEqual(t, s.read, int64(200<<10))
		assert.Greater(t, s.total, int64(200<<10))
	}
	code, out, _ = runApp(t, "diff", base, ft, "--format", "text", "--progress", "none", "--sample-budget", "200KiB")
	require.Equal(t, 1, code)
	assert.Contains(t, out, "sampled: 200.0 KiB per side spread over the tensors (seed 0)")
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"--sample-budget", "200KiB", "--sample-bytes", "4KiB"}, "exclude each other"},
		{[]string{"--sample-budget", "0"}, "--sample-budget must be positive"},
		{[]string{"--sample-budget", "1MB", "--mode", "header"}, "--mode values"},
	} {
		code, _, stderr := runApp(t, append([]string{"diff", base, ft, "--progress", "none"}, c.args...)...)
		assert.Equal(t, 2, code, "%v", c.args)
		assert.Contains(t, stderr, c.stderr, "%v", c.args)
	}
}

// TestDiffCheck: every rule of diff's command line, with its message and
// exit status, and which one wins when a command line breaks several
// (the first in check's order); none of them opens a source.
func TestDiffCheck(t *testing.T) {
	t.Parallel()
	const size = `invalid size %q (want a number of bytes with an optional unit: K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti powers of 1024, e.g. 4G or 500MiB)`
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"mode", []string{"--mode", "fast", "--sample", "-1"}, `unknown --mode "fast" (want header, bytes or values)`},
		{"negative sample", []string{"--sample", "-1", "--sample-bytes", "lots"}, "--sample and --workers must not be negative"},
		{"sample-bytes size", []string{"--sample-bytes", "lots", "--mode", "header"}, "--sample-bytes: " + fmt.Sprintf(size, "lots")},
		{"sample-bytes negative", []string{"--sample-bytes", "-5"}, "--sample-bytes: " + fmt.Sprintf(size, "-5")},
		{"sample-bytes zero", []string{"--sample-bytes", "0", "--sample-budget", "1M"}, "--sample-bytes must be positive, not 0"},
		{"sample-bytes mode", []string{"--mode", "header", "--sample-bytes", "4KiB", "--sample-budget", "1M"}, "--sample-bytes needs --mode values, not header"},
		{"both", []string{"--sample-bytes", "4KiB", "--sample-budget", "lots"}, "--sample-bytes and --sample-budget exclude each other"},
		{"sample-budget size", []string{"--sample-budget", "lots", "--mode", "bytes"}, "--sample-budget: " + fmt.Sprintf(size, "lots")},
		{"sample-budget zero", []string{"--sample-budget", "0"}, "--sample-budget must be positive, not 0"},
		{"sample-budget mode", []string{"--mode", "bytes", "--sample-budget", "1M", "--seed", "5"}, "--sample-budget needs --mode values, not bytes"},
		{"sample-seed alone", []string{"--sample-seed", "3", "--seed", "5"}, "--sample-seed seeds --sample-bytes or --sample-budget; give one of them"},
		{"sample-seed, empty size", []string{"--sample-bytes=", "--sample-seed", "3"}, "--sample-seed seeds --sample-bytes or --sample-budget; give one of them"},
		{"seed alone", []string{"--seed", "5", "--match", "[a"}, "--seed seeds --sample N; give it"},
		{"match glob", []string{"--exclude", "[b", "--match", "[a"}, `invalid --match glob "[a": glob: syntax error at 2: unexpected end of input`},
		{"exclude glob", []string{"--exclude", "[b", "--sample-budget", "1M", "--sample-seed", "3"}, `invalid --exclude glob "[b": glob: syntax error at 2: unexpected end of input`},
		{"then the sources", []string{"--match", "nothing.**", "--sample-budget", "1M"}, "opening " + missing + ": no such file or directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, stderr := runApp(t, append([]string{"diff", missing, missing, "--progress", "none"}, tc.args...)...)
			assert.Equal(t, exitUnreadable, code)
			assert.Empty(t, out)
			assert.Equal(t, "ckpt: "+tc.msg+"\n", stderr)
		})
	}
}

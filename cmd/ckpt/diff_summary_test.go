package main

import (
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// diffDoc is the part of diff's JSON document these tests read.
type diffDoc struct {
	Summary map[string]int64
	Keys    struct {
		OnlyInBase []string `json:"only_in_base"`
	}
	Groups  []map[string]any
	Layers  []map[string]any
	Tensors []struct {
		Name, Relation, Note string
		Sampled              bool
		ChangedElems         *int64   `json:"changed_elems"`
		SampledElems         *int64   `json:"sampled_elems"`
		ChangedFraction      *float64 `json:"changed_fraction"`
		RequantMismatchElems *int64   `json:"requant_mismatch_elems"`
	}
}

// relationKeys are the count keys of a summary, a group or a layer: one per
// relation.
var relationKeys = []string{"identical", "changed", "requant_identical", "dtype_changed", "shape_changed",
	"only_in_base", "only_in_ft", "same_header", "no_change_seen", "requant_identical_seen"}

// assertAddsUp checks that the relation counts of a group or layer record
// add up to its tensors, and returns them.
func assertAddsUp(t *testing.T, rec map[string]any, what string) map[string]int64 {
	t.Helper()
	counts := map[string]int64{}
	var sum int64
	for _, k := range relationKeys {
		if v, ok := rec[k]; ok {
			counts[k] = int64(v.(float64))
			sum += counts[k]
		}
	}
	assert.EqualValues(t, rec["tensors"], sum, "%s: the relation counts add up to tensors: %v", what, rec)
	return counts
}

func runDiffJSON(t *testing.T, args ...string) (int, diffDoc) {
	t.Helper()
	code, out, stderr := runApp(t, append(append([]string{"diff"}, args...), "--format", "json", "--progress", "none")...)
	var doc diffDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), stderr)
	return code, doc
}

// TestDiffByLayerCounts (#21.3): on the demo pair, the mtp row of --by layer
// counts what its relations are (8 identical, 7 requant_identical, 7
// only_in_base), none of them changed, and has no changed statistics: the
// requant-identical projections are not averaged into a mean rel_l2. Every
// row adds up to its tensors, in JSON, CSV, text and Markdown.
func TestDiffByLayerCounts(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	code, doc := runDiffJSON(t, base, ft, "--by", "layer")
	require.Equal(t, 1, code)
	require.Len(t, doc.Layers, 7)
	var mtp map[string]any
	for _, l := range doc.Layers {
		label := l["group"].(string)
		if n, ok := l["layer"]; ok {
			label += " " + strconv.Itoa(int(n.(float64)))
		}
		c := assertAddsUp(t, l, label)
		if c["changed"] == 0 {
			assert.NotContains(t, l, "changed_mean_rel_l2", "%s: no changed tensor, no changed statistics", label)
			assert.NotContains(t, l, "changed_fraction_range", label)
		}
		if label == "mtp" {
			mtp = l
		}
	}
	require.NotNil(t, mtp)
	assert.Equal(t, map[string]int64{"identical": 8, "changed": 0, "requant_identical": 7, "dtype_changed": 0, "shape_changed": 0, "only_in_base": 7, "only_in_ft": 0},
		assertAddsUp(t, mtp, "mtp"))
	assert.NotContains(t, mtp, "relations", "one count per relation, not two spellings")
	assert.NotContains(t, mtp, "mean_rel_l2")
	// Layer 1: two changed tensors (the FP8 down_proj and its scale); the
	// statistics are theirs only, not diluted by the 18 identical ones.
	l1 := doc.Layers[1]
	assert.EqualValues(t, 2, l1["changed"])
	mean := l1["changed_mean_rel_l2"].(float64)
	var want float64
	var lo, hi = 2.0, -1.0
	for _, r := range []string{"model.language_model.layers.1.mlp.down_proj.weight", "model.language_model.layers.1.mlp.down_proj.weight_scale_inv"} {
		code, one := runDiffJSON(t, base, ft, "--match", r)
		require.Equal(t, 1, code)
		require.Len(t, one.Tensors, 1)
		row := one.Tensors[0]
		assert.Equal(t, "changed", row.Relation)
		res := runRelL2(t, base, ft, r)
		want += res / 2
		f := float64(*row.ChangedElems) / float64(numelOf(t, base, r))
		lo, hi = min(lo, f), max(hi, f)
	}
	assert.InDelta(t, want, mean, 1e-12)
	assert.Equal(t, []any{lo, hi}, l1["changed_fraction_range"])
	for _, g := range doc.Groups {
		assertAddsUp(t, g, g["group"].(string))
	}

	// CSV: the same columns, the mtp row says changed 0.
	code, out, _ := runApp(t, "diff", base, ft, "--by", "layer", "--format", "csv", "--progress", "none")
	require.Equal(t, 1, code)
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	hdr := recs[0]
	assert.Equal(t, []string{"layer", "tensors", "identical", "changed", "requant_identical", "dtype_changed", "shape_changed", "only_in_base", "only_in_ft",
		"changed % range", "changed mean rel_l2"}, hdr)
	for _, r := range recs[1:] {
		var sum int64
		for i := 2; i < 9; i++ {
			n, err := strconv.ParseInt(r[i], 10, 64)
			require.NoError(t, err)
			sum += n
		}
		assert.Equal(t, r[1], strconv.FormatInt(sum, 10), "csv row %v adds up", r)
		if r[0] == "mtp" {
			assert.Equal(t, []string{"mtp", "22", "8", "0", "7", "0", "0", "7", "0", "-", "-"}, r)
		}
	}

	// Text and Markdown: the header says what the statistics are over.
	for _, format := range []string{"text", "markdown"} {
		code, out, _ := runApp(t, "diff", base, ft, "--by", "layer", "--format", format, "--progress", "none")
		require.Equal(t, 1, code)
		assert.Contains(t, out, "over the tensors counted in changed", format)
		// mtp: 22 tensors, 8 identical, 0 changed, 7 requant_identical, 0, 0,
		// 7 only_in_base, 0; no changed statistics.
		row := `(?m)^\|? *` + strings.Join([]string{"mtp", "22", "8", "0", "7", "0", "0", "7", "0", "-", "-"}, ` *\|? *`) + ` *\|?$`
		assert.Regexp(t, row, out, format)
	}
}

func runRelL2(t *testing.T, base, ft, name string) float64 {
	t.Helper()
	_, out, _ := runApp(t, "diff", base, ft, "--match", name, "--format", "json", "--progress", "none")
	var doc struct {
		Tensors []struct {
			RelL2 float64 `json:"rel_l2"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Len(t, doc.Tensors, 1)
	return doc.Tensors[0].RelL2
}

func numelOf(t *testing.T, dir, name string) int64 {
	t.Helper()
	c, err := ckpt.Open(t.Context(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	return int64(tn.Numel())
}

// TestDiffSampledRequantRows (#21.4): with --sample-bytes, the demo's bf16
// MTP projections against their FP8 base are requant_identical_seen, their
// rows agree with themselves (changed_elems ≤ sampled_elems, changed
// fraction = changed_elems / sampled_elems, of the decoded values), and the
// summary counts them.
func TestDiffSampledRequantRows(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	args := []string{base, ft, "--sample-bytes", "4KiB", "--sample-seed", "1", "--match", "mtp.**"}
	code, doc := runDiffJSON(t, args...)
	require.Equal(t, 1, code)
	seen := 0
	for _, r := range doc.Tensors {
		if r.RequantMismatchElems == nil {
			continue
		}
		require.True(t, r.Sampled, r.Name)
		seen++
		assert.Equal(t, "requant_identical_seen", r.Relation, r.Name)
		assert.Zero(t, *r.RequantMismatchElems, r.Name)
		require.NotNil(t, r.SampledElems, r.Name)
		assert.LessOrEqual(t, *r.ChangedElems, *r.SampledElems, r.Name)
		assert.Equal(t, float64(*r.ChangedElems)/float64(*r.SampledElems), *r.ChangedFraction, r.Name)
		assert.Greater(t, *r.ChangedFraction, 0.5, "%s: bf16 master values differ from the dequantised FP8 ones", r.Name)
	}
	assert.Equal(t, 7, seen)
	assert.EqualValues(t, 7, doc.Summary["requant_identical_seen"])
	assert.EqualValues(t, 1, doc.Summary["no_change_seen"], "mtp.fc.weight (bf16 on both sides) only, not the requant pairs")
	for _, g := range doc.Groups {
		assertAddsUp(t, g, g["group"].(string))
	}

	code, out, _ := runApp(t, append(append([]string{"diff"}, args...), "--format", "text", "--progress", "none")...)
	require.Equal(t, 1, code)
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "mtp.layers.0.mlp.down_proj.weight ") {
			line = l
		}
	}
	f := strings.Fields(line)
	require.GreaterOrEqual(t, len(f), 10, out)
	assert.Equal(t, "requant_identical_seen", f[1])
	changed, _ := strconv.ParseInt(f[5], 10, 64)
	of, _ := strconv.ParseInt(f[6], 10, 64)
	pct, err := strconv.ParseFloat(f[7], 64)
	require.NoError(t, err, line)
	assert.LessOrEqual(t, changed, of, line)
	assert.InDelta(t, 100*float64(changed)/float64(of), pct, 0.05, "changed %% is changed of of: %s", line)
	assert.Contains(t, line, "the sample re-quantises exactly")
	assert.Contains(t, out, "7 requant_identical_seen")
}

// TestDiffSampleComparesHeaders (#27.8): --sample N samples the data
// reads only. A tensor only in one side, a dtype change and a shape change
// outside the sample are still reported, and exit 1; the tensors outside
// it are same_header.
func TestDiffSampleComparesHeaders(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	const (
		dropped = "mtp.norm.weight"
		retyped = "model.visual.blocks.0.norm1.weight"
		reshape = "model.language_model.layers.3.input_layernorm.weight"
	)
	for _, c := range []struct {
		name, tensor, relation string
		edit                   func(dir string)
	}{
		{"only in base", dropped, "only_in_base", func(dir string) {
			rewriteShard(t, dir, dropped, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
				var out []ckpt.MemTensor
				for _, mt := range ts {
					if mt.Name != dropped {
						out = append(out, mt)
					}
				}
				return out
			})
			editIndex(t, dir, func(wm, _ map[string]any) { delete(wm, dropped) })
		}},
		{"dtype changed", retyped, "dtype_changed", func(dir string) {
			editTensor(t, dir, retyped, func(mt *ckpt.MemTensor) {
				v := make([]float32, len(mt.Data)/2)
				require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, mt.Data, v))
				mt.DType, mt.Data = numfmt.F32, make([]byte, 4*len(v))
				numfmt.EncodeFloat32(numfmt.F32, v, mt.Data)
			})
		}},
		{"shape changed", reshape, "shape_changed", func(dir string) {
			editTensor(t, dir, reshape, func(mt *ckpt.MemTensor) { mt.Shape, mt.Data = []int64{64}, mt.Data[:128] })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ft := copyDir(t, base)
			c.edit(ft)
			code, doc := runDiffJSON(t, base, ft, "--sample", "5")
			assert.Equal(t, 1, code, "a header difference is a difference")
			var row *struct{ Relation, Note string }
			sameHeader := 0
			for _, r := range doc.Tensors {
				if r.Name == c.tensor {
					row = &struct{ Relation, Note string }{r.Relation, r.Note}
				}
				if r.Relation == "same_header" {
					sameHeader++
				}
			}
			require.NotNil(t, row, "%s has a row", c.tensor)
			assert.Equal(t, c.relation, row.Relation)
			if c.relation == "dtype_changed" {
				assert.Contains(t, row.Note, "not in the sample", "the tensor is outside the sample of 5")
			}
			assert.EqualValues(t, 1, doc.Summary[c.relation])
			assert.Positive(t, sameHeader, "tensors outside the sample are same_header")
			assert.EqualValues(t, sameHeader, doc.Summary["same_header"])
			if c.relation == "only_in_base" {
				assert.Equal(t, []string{dropped}, doc.Keys.OnlyInBase)
			}
			for _, g := range doc.Groups {
				assertAddsUp(t, g, g["group"].(string))
			}

			code, out, _ := runApp(t, "diff", base, ft, "--sample", "5", "--format", "text", "--progress", "none")
			assert.Equal(t, 1, code)
			assert.Regexp(t, `(?m)^`+strings.ReplaceAll(c.tensor, ".", `\.`)+` +`+c.relation+` `, out)
			assert.Contains(t, out, "differences found")
			assert.Contains(t, out, "1 "+c.relation)
			assert.NotContains(t, out, "no differences")
		})
	}

	// The checkpoint against itself: no differences found in the sample,
	// and the others are not claimed identical.
	code, out, _ := runApp(t, "diff", base, base, "--sample", "5", "--format", "text", "--progress", "none")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "same_header")
	assert.Contains(t, out, "no differences found (the data of")
}

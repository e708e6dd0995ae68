package diff_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertTallies checks that every group and layer of res counts each of
// its rows under exactly one relation: the counts add up to tensors, the
// groups and the layers each add up to the rows, and so does the summary.
func assertTallies(t *testing.T, res *diff.Result, what string) {
	t.Helper()
	n := int64(len(res.Tensors))
	assert.Equal(t, n, res.Summary.Total(), "%s: summary", what)
	var groups diff.Summary
	var inGroups int64
	for _, g := range res.Groups {
		assert.Equal(t, g.Tensors, g.Total(), "%s: group %s adds up to its tensors: %+v", what, g.Group, g.Summary)
		inGroups += g.Tensors
		for _, r := range diff.Relations {
			for range g.Count(r) {
				groups.Add(r)
			}
		}
	}
	assert.Equal(t, n, inGroups, "%s: groups", what)
	assert.Equal(t, res.Summary, groups, "%s: the groups add up to the summary", what)
	var inLayers int64
	for _, l := range res.Layers {
		assert.Equal(t, l.Tensors, l.Total(), "%s: %s adds up to its tensors: %+v", what, l.Label(), l.Summary)
		inLayers += l.Tensors
		if l.Changed == 0 {
			assert.Nil(t, l.ChangedMeanRelL2, "%s: %s has no changed tensor", what, l.Label())
			assert.Nil(t, l.ChangedFractionRange, "%s: %s has no changed tensor", what, l.Label())
		}
	}
	if len(res.Layers) > 0 {
		assert.Equal(t, n, inLayers, "%s: layers", what)
	}
	// The same in JSON: the count keys of a group add up to "tensors".
	raw, err := json.Marshal(res.Groups)
	require.NoError(t, err)
	var recs []map[string]any
	require.NoError(t, json.Unmarshal(raw, &recs))
	for _, rec := range recs {
		var sum float64
		for _, r := range diff.Relations {
			if v, ok := rec[string(r)]; ok {
				sum += v.(float64)
			}
		}
		assert.Equal(t, rec["tensors"], sum, "%s: JSON group %v", what, rec["group"])
	}
}

// TestTalliesAddUp: in every mode, sampled or not, the relation counts of
// every group and layer add up to its tensors.
func TestTalliesAddUp(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	for _, opt := range []diff.CompareOptions{
		{},
		{Mode: diff.ModeBytes},
		{Mode: diff.ModeHeader},
		{SampleBytes: 4 << 10, SampleSeed: 1},
		{Sample: 5, Seed: 3},
		{Sample: 5, Seed: 3, SampleBytes: 4 << 10},
		{Sample: 5, Mode: diff.ModeBytes},
	} {
		opt.ByLayer = true
		what := fmt.Sprintf("%+v", opt)
		for _, pair := range [][2]string{{"base", "ft"}, {"ft", "base"}, {"base", "base"}} {
			b, f := bc, fc
			if pair[0] == "ft" {
				b, f = fc, bc
			}
			if pair[1] == "base" && pair[0] == "base" {
				f = bc
			}
			res, err := diff.Compare(context.Background(), b, f, opt)
			require.NoError(t, err)
			assertTallies(t, res, what+" "+pair[0]+"/"+pair[1])
		}
	}
}

// TestTallyWords: changed counts relation changed only; removed, retyped
// and re-quantised tensors are counted apart, and the statistics are over
// the changed tensors only.
func TestTallyWords(t *testing.T) {
	t.Parallel()
	f := func(v float64) *diff.Float { x := diff.Float(v); return &x }
	i := func(v int64) *int64 { return &v }
	rows := []diff.Tensor{
		{Name: "mtp.a", Relation: diff.Identical, Numel: 10, ChangedElems: i(0), RelL2: f(0)},
		{Name: "mtp.b", Relation: diff.RequantIdentical, Numel: 10, ChangedElems: i(9), RelL2: f(0.03)},
		{Name: "mtp.b_scale", Relation: diff.OnlyInBase, Numel: 1},
		{Name: "mtp.c", Relation: diff.Changed, Numel: 10, ChangedElems: i(2), RelL2: f(0.01)},
		{Name: "mtp.d", Relation: diff.Changed, Numel: 10, ChangedElems: i(5), RelL2: f(0.03)},
		{Name: "mtp.e", Relation: diff.DTypeChanged, Numel: 10, ChangedElems: i(10), RelL2: f(0.5)},
		{Name: "mtp.f", Relation: diff.NoChangeSeen, Numel: 10, ChangedElems: i(0), RelL2: f(0), ChangedFraction: f(0)},
		{Name: "mtp.g", Relation: diff.RequantIdenticalSeen, Numel: 10, ChangedElems: i(3), RelL2: f(0.02), ChangedFraction: f(0.75)},
		{Name: "mtp.h", Relation: diff.ShapeChanged, Numel: 4},
		{Name: "mtp.i", Relation: diff.OnlyInFT, Numel: 4},
		{Name: "mtp.j", Relation: diff.SameHeader, Numel: 4},
		{Name: "visual.a", Relation: diff.RequantIdentical, Numel: 10, ChangedElems: i(9), RelL2: f(0.03)},
	}
	for k := range rows {
		rows[k].Group = "mtp"
	}
	rows[len(rows)-1].Group = "visual"
	ls := diff.ByLayer(rows)
	gs := diff.Groups(rows)
	require.Len(t, ls, 2)
	require.Len(t, gs, 2)
	for _, tl := range []diff.Tally{ls[0].Tally, gs[0].Tally} {
		assert.Equal(t, diff.Summary{Identical: 1, Changed: 2, RequantIdentical: 1, DTypeChanged: 1, ShapeChanged: 1, OnlyInBase: 1, OnlyInFT: 1,
			SameHeader: 1, NoChangeSeen: 1, RequantIdenticalSeen: 1}, tl.Summary)
		assert.Equal(t, int64(11), tl.Tensors)
		assert.InDelta(t, 0.02, float64(*tl.ChangedMeanRelL2), 1e-15, "mean of the two changed tensors only")
		assert.Equal(t, &[2]diff.Float{0.2, 0.5}, tl.ChangedFractionRange)
	}
	for _, tl := range []diff.Tally{ls[1].Tally, gs[1].Tally} {
		assert.Equal(t, diff.Summary{RequantIdentical: 1}, tl.Summary)
		assert.Nil(t, tl.ChangedMeanRelL2, "a group of requant-identical tensors has no changed statistics")
		assert.Nil(t, tl.ChangedFractionRange)
	}
}

package diff_test

import (
	"context"
	"os"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The two bf16 tensors of layer 1 changed in one element each: the first
// where the sample looks, the second where it does not.
const (
	oneCovered = "model.language_model.layers.1.linear_attn.in_proj_a.weight"
	oneMissed  = "model.language_model.layers.1.linear_attn.in_proj_b.weight"
)

// hubPair is the 27B-shaped sparse pair of the sampled-diff tests: decoder
// layers 1, 62 and 63 (real names, dtypes, shapes and sharding), the
// MTP head, part of the vision tower and the final norm; layer 62 (linear
// attention: block-FP8 weights and large bf16 tensors) changed in every
// element of every tensor, two tensors of layer 1 changed in one element
// each, nothing else. (One dense layer keeps the full diff the test
// compares with to about a second per core.)
type hubPair struct {
	base, ft   string
	pairBytes  int64 // both checkpoints, every file
	opt        diff.CompareOptions
	covered    int64 // the changed element of oneCovered, inside its sample
	missedElem int64 // the changed element of oneMissed, outside its sample
}

func writeHubPair(t *testing.T) *hubPair {
	t.Helper()
	dir := t.TempDir()
	base, ft, err := synth.WriteSparseFineTune(dir, synth.SparseFineTune{
		Layers: []int{1, 62, 63}, MTP: true, Visual: true, Dense: []int{62},
		Filled: []string{oneCovered, oneMissed}, Seed: 3})
	require.NoError(t, err)
	p := &hubPair{base: base, ft: ft, opt: diff.CompareOptions{SampleBytes: 64 << 10, SampleSeed: 7, ByLayer: true}}
	for _, d := range []string{base, ft} {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range ents {
			st, err := e.Info()
			require.NoError(t, err)
			p.pairBytes += st.Size()
		}
	}

	// Where does the sample look? The positions depend on the seed, the
	// name and the shape only, so the local pair (still unchanged) tells.
	bc, fc := openLocal(t, base, ft)
	m, err := ckpt.NewMatcher([]string{oneCovered, oneMissed}, nil)
	require.NoError(t, err)
	o := p.opt
	o.Match = m
	pre, err := diff.Compare(context.Background(), bc, fc, o)
	require.NoError(t, err)
	by := rows(pre)
	require.True(t, by[oneCovered].Sampled)
	r := by[oneCovered].SampledRanges[0]
	p.covered = (r[0] + r[1]) / 2
	p.missedElem = -1
	for _, cand := range []int64{0, by[oneMissed].Numel / 2, by[oneMissed].Numel - 1} {
		if !inRanges(by[oneMissed].SampledRanges, cand) {
			p.missedElem = cand
			break
		}
	}
	require.GreaterOrEqual(t, p.missedElem, int64(0))
	for name, e := range map[string]int64{oneCovered: p.covered, oneMissed: p.missedElem} {
		bt, _ := bc.Lookup(name)
		lo := make([]byte, 1) // the low byte of the bf16 element
		_, err := bt.ReadAt(lo, 2*e)
		require.NoError(t, err)
		require.NoError(t, synth.PokeTensor(ft, name, 2*e, []byte{lo[0] ^ 0x01}))
	}
	return p
}

func openLocal(t *testing.T, base, ft string) (*ckpt.Checkpoint, *ckpt.Checkpoint) {
	t.Helper()
	bc, err := ckpt.Open(context.Background(), base, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { bc.Close() })
	fc, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fc.Close() })
	return bc, fc
}

func inRanges(rs [][2]int64, e int64) bool {
	for _, r := range rs {
		if e >= r[0] && e < r[1] {
			return true
		}
	}
	return false
}

// TestSampledDiffOverHub is the acceptance test of sampled diffs: over
// HTTP (the loopback hub), a sampled diff of the 27B-shaped pair reads at
// most 2 % of its bytes, flags every tensor whose elements changed in at
// least 1 % of positions, never calls a sampled tensor identical,
// classifies the tensors it reads whole exactly as the full diff does,
// and its per-layer summary matches the full diff's per-layer split; a
// one-element change is found where the sample looks and reported
// no_change_seen, with an interval that admits it, where it does not.
func TestSampledDiffOverHub(t *testing.T) {
	t.Parallel()
	p := writeHubPair(t)
	hub := sourcetest.NewHub(p.base, "org/base")
	hub.AddRepo("org/ft", p.ft)
	hub.Redirect = true // resolve URLs redirect to signed CDN URLs, as the real hub's do
	t.Cleanup(hub.Close)
	env := map[string]string{"HF_ENDPOINT": hub.URL}
	openers := source.Openers(source.Options{Getenv: func(k string) string { return env[k] }})
	ctx := context.Background()
	hb, err := ckpt.Open(ctx, "hf://org/base", ckpt.Options{}, openers...)
	require.NoError(t, err)
	defer hb.Close()
	hf, err := ckpt.Open(ctx, "hf://org/ft", ckpt.Options{}, openers...)
	require.NoError(t, err)
	defer hf.Close()
	hub.Quiesce()
	opened := hub.Resolves.Load()
	sampled, err := diff.Compare(ctx, hb, hf, p.opt)
	require.NoError(t, err)
	hub.Quiesce()
	served := hub.BytesServed.Load()

	// Requests: every file was resolved once when opened; each read of the
	// diff is one request to the CDN, none through the hub again.
	reads := sampled.Sample.Base.Reads + sampled.Sample.FT.Reads
	t.Logf("resolves: %d at open, %d in all; CDN requests %d for %d reads", opened, hub.Resolves.Load(), hub.CDN.Load(), reads)
	assert.Equal(t, opened, hub.Resolves.Load(), "no read goes through /resolve")
	assert.LessOrEqual(t, hub.CDN.Load(), reads+opened, "one request per read (and one per file opened)")
	requests := sampled.Sample.Base.Requests + sampled.Sample.FT.Requests
	assert.LessOrEqual(t, requests, reads, "the summary counts the requests: at most one per read (reads inside a file's prefix take none)")
	assert.Greater(t, requests, reads*9/10)

	// Bytes: everything the hub served (headers, index and config
	// included) is at most 2 % of the pair.
	t.Logf("hub served %d bytes in %d requests of a %d-byte pair (%.2f %%); tensor data read: base %d, ft %d in %d+%d reads",
		served, hub.Requests.Load(), p.pairBytes, 100*float64(served)/float64(p.pairBytes),
		sampled.Sample.Base.BytesRead, sampled.Sample.FT.BytesRead, sampled.Sample.Base.Reads, sampled.Sample.FT.Reads)
	assert.LessOrEqual(t, float64(served), 0.02*float64(p.pairBytes))
	assert.LessOrEqual(t, sampled.BytesRead, served)
	assert.Equal(t, sampled.Sample.Base.BytesRead+sampled.Sample.FT.BytesRead, sampled.BytesRead)
	bc, fc := openLocal(t, p.base, p.ft)
	var baseTotal int64
	for _, tn := range bc.Tensors {
		baseTotal += int64(tn.NBytes())
	}
	assert.Equal(t, baseTotal, sampled.Sample.Base.BytesTotal)

	// The budget is kept: per side at most 1.25 × Σ min(size, SIZE) over
	// the tensors (a scale tensor is read whole, and it is smaller than
	// SIZE here).
	for _, side := range []struct {
		c    *ckpt.Checkpoint
		read int64
	}{{bc, sampled.Sample.Base.BytesRead}, {fc, sampled.Sample.FT.BytesRead}} {
		var bound int64
		for _, tn := range side.c.Tensors {
			bound += min(int64(tn.NBytes()), p.opt.SampleBytes)
		}
		t.Logf("read %d bytes of a bound of %d", side.read, bound)
		assert.LessOrEqual(t, side.read, bound*5/4)
	}

	full, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{ByLayer: true})
	require.NoError(t, err)
	fullRows := rows(full)
	require.Len(t, sampled.Tensors, len(full.Tensors))
	var denseChanged, denseSampled, seen int
	for _, row := range sampled.Tensors {
		f := fullRows[row.Name]
		if !row.Sampled {
			// Read whole: exactly the full diff's verdict and statistics.
			assert.Equal(t, f.Relation, row.Relation, row.Name)
			assert.Equal(t, f.ChangedElems, row.ChangedElems, row.Name)
			assert.Equal(t, f.MaxAbsDiff, row.MaxAbsDiff, row.Name)
			assert.Equal(t, f.RelL2, row.RelL2, row.Name)
			assert.Equal(t, f.Cosine, row.Cosine, row.Name)
			continue
		}
		seen++
		if _, _, l := ckpt.GroupOf(row.Name); l == 62 {
			denseSampled++
		}
		assert.Contains(t, []diff.Relation{diff.Changed, diff.NoChangeSeen}, row.Relation, "%s: a sample never proves identity", row.Name)
		require.NotNil(t, row.SampledElems, row.Name)
		require.NotNil(t, row.ChangedFractionCI95, row.Name)
		if frac, ok := f.ChangedFractionOf(); ok && frac >= 0.01 {
			denseChanged++
			assert.Equal(t, diff.Changed, row.Relation, "%s changed in %.1f %% of its elements", row.Name, 100*frac)
		}
		if f.Relation == diff.Identical {
			assert.Equal(t, diff.NoChangeSeen, row.Relation, row.Name)
			assert.Equal(t, int64(0), *row.ChangedElems)
		}
		// The interval holds the true changed fraction (but for the change
		// placed in the sample on purpose).
		if frac, ok := f.ChangedFractionOf(); ok && row.Name != oneCovered {
			ci := row.ChangedFractionCI95
			assert.True(t, float64(ci[0]) <= frac && frac <= float64(ci[1]), "%s: true fraction %g outside [%g, %g]", row.Name, frac, ci[0], ci[1])
		}
	}
	assert.Equal(t, 9, denseSampled, "layer 62: the 9 tensors above 64 KiB (6 FP8 weights, in_proj_a/b, conv1d)")
	assert.Equal(t, denseSampled, denseChanged, "every tensor changed in ≥ 1 %% of its elements is a sampled one of layer 62")
	var large int
	for _, tn := range bc.Tensors {
		if int64(tn.NBytes()) > p.opt.SampleBytes {
			large++
		}
	}
	assert.Equal(t, large, seen, "every tensor above 64 KiB is sampled, the others are read whole")
	assert.Equal(t, seen, sampled.Sample.SampledTensors)
	assert.Equal(t, len(sampled.Tensors)-seen, sampled.Sample.WholeTensors)

	by := rows(sampled)
	cov := by[oneCovered]
	assert.Equal(t, diff.Changed, cov.Relation, "the sample covers element %d", p.covered)
	assert.Equal(t, int64(1), *cov.ChangedElems)
	miss := by[oneMissed]
	assert.False(t, inRanges(miss.SampledRanges, p.missedElem))
	assert.Equal(t, diff.NoChangeSeen, miss.Relation)
	assert.Equal(t, int64(0), *miss.ChangedElems)
	assert.Equal(t, diff.Float(0), miss.ChangedFractionCI95[0])
	assert.GreaterOrEqual(t, float64(miss.ChangedFractionCI95[1]), 1/float64(miss.Numel), "the interval admits the one changed element")
	assert.Equal(t, diff.Changed, fullRows[oneMissed].Relation)

	// Per layer: the sample's changed / unchanged split is the full
	// diff's, but for the one-element change it did not look at.
	require.Equal(t, labels(full.Layers), labels(sampled.Layers))
	assert.Equal(t, []string{"layer 1", "layer 62", "layer 63", "mtp", "visual", "other"}, labels(sampled.Layers))
	for i, fl := range full.Layers {
		sl := sampled.Layers[i]
		missed := int64(0)
		if fl.Label() == "layer 1" {
			missed = 1
		}
		assert.Equal(t, fl.Tensors, sl.Tensors, fl.Label())
		assert.Equal(t, fl.Changed-missed, sl.Changed, "%s: changed", fl.Label())
		assert.Equal(t, fl.Identical+missed, sl.Identical+sl.NoChangeSeen, "%s: unchanged", fl.Label())
		assert.Zero(t, fl.NoChangeSeen)
	}
	assert.Equal(t, sampled.Layers[1].Tensors, sampled.Layers[1].Changed, "layer 62: every tensor changed")
	assert.Equal(t, sampled.Layers[2].Tensors, sampled.Layers[2].Identical+sampled.Layers[2].NoChangeSeen, "layer 63: none")

	// Deterministic, and the same from a local path as over HTTP.
	local, err := diff.Compare(ctx, bc, fc, p.opt)
	require.NoError(t, err)
	assert.Equal(t, sampled.Tensors, local.Tensors)
	assert.Equal(t, sampled.Layers, local.Layers)
	other := p.opt
	other.SampleSeed++
	again, err := diff.Compare(ctx, bc, fc, other)
	require.NoError(t, err)
	assert.NotEqual(t, rows(again)[oneCovered].SampledRanges, cov.SampledRanges, "another seed, another sample")
}

func labels(ls []diff.LayerSummary) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Label())
	}
	return out
}

package diff_test

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWilson(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		k, n   int64
		lo, hi float64
	}{
		{0, 0, 0, 1},
		{0, 100, 0, 0.036993},
		{50, 100, 0.403832, 0.596168},
		{100, 100, 0.963007, 1},
		{1, 1000, 0.000177, 0.005643},
		{0, 65536, 0, 3.8414 / (65536 + 3.8414)},
	} {
		lo, hi := diff.Wilson(c.k, c.n)
		assert.InDelta(t, c.lo, lo, 1e-6, "%d/%d", c.k, c.n)
		assert.InDelta(t, c.hi, hi, 1e-6, "%d/%d", c.k, c.n)
	}
}

// TestSampleBytesSmallPair checks the sampled diff against the full one on
// the tiny FP8 pair (dense changes in a few tensors, an MTP head shipped
// as its bf16 master values): what is read whole is classified exactly;
// what is sampled is sampled in many spread ranges (runs of whole groups
// of scale columns for FP8, never whole rows of scale blocks) within the
// budget, deterministically, and never called identical.
func TestSampleBytesSmallPair(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	ctx := context.Background()
	full, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{})
	require.NoError(t, err)
	fullRows := rows(full)

	// A sample as large as every tensor is the full diff.
	all, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{SampleBytes: 1 << 30})
	require.NoError(t, err)
	assert.Zero(t, all.Sample.SampledTensors)
	assert.Equal(t, full.Summary, all.Summary)
	for _, r := range all.Tensors {
		f := fullRows[r.Name]
		if fr, ok := f.ChangedFractionOf(); ok {
			assert.InDelta(t, fr, float64(*r.ChangedFraction), 1e-12, r.Name)
		}
		r.ChangedFraction = f.ChangedFraction
		assert.Equal(t, f, r, r.Name)
	}

	opt := diff.CompareOptions{SampleBytes: 4 << 10, SampleSeed: 5, Workers: 2}
	res, err := diff.Compare(ctx, bc, fc, opt)
	require.NoError(t, err)
	again, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{SampleBytes: 4 << 10, SampleSeed: 5, Workers: 1, ChunkBytes: 1000})
	require.NoError(t, err)
	assert.Equal(t, res.Tensors, again.Tensors, "deterministic, whatever the scheduling and chunking")
	assert.Positive(t, res.Sample.SampledTensors)
	var sawRequant bool
	for _, r := range res.Tensors {
		f := fullRows[r.Name]
		b, inB := bc.Lookup(r.Name)
		if !r.Sampled {
			if inB {
				_, inF := fc.Lookup(r.Name)
				big := int64(b.NBytes()) > opt.SampleBytes && inF && !strings.HasSuffix(r.Name, ckpt.ScaleSuffix)
				assert.False(t, big, "%s is larger than the sample but was read whole", r.Name)
			}
			assert.Equal(t, f.Relation, r.Relation, r.Name)
			continue
		}
		assert.NotEqual(t, diff.Identical, r.Relation, r.Name)
		assert.NotEqual(t, diff.RequantIdentical, r.Relation, r.Name)
		if r.Relation == diff.Changed {
			assert.Equal(t, diff.Changed, f.Relation, "%s: a change the sample sees is real", r.Name)
		}
		if f.Relation == diff.Identical {
			assert.Equal(t, diff.NoChangeSeen, r.Relation, r.Name)
		}
		// The row agrees with itself: the changed fraction is of the
		// elements compared, whatever the dtypes.
		require.NotNil(t, r.ChangedElems, r.Name)
		assert.LessOrEqual(t, *r.ChangedElems, *r.SampledElems, r.Name)
		assert.Equal(t, diff.Float(float64(*r.ChangedElems)/float64(*r.SampledElems)), *r.ChangedFraction, r.Name)
		if f.Relation == diff.RequantIdentical {
			sawRequant = true
			assert.Equal(t, diff.RequantIdenticalSeen, r.Relation, "%s: the sample re-quantises exactly", r.Name)
			assert.Equal(t, int64(0), *r.RequantMismatchElems, r.Name)
			assert.Positive(t, *r.ChangedElems, "%s: the bf16 master values are not the dequantised FP8 values", r.Name)
		}
		// Ranges: sorted, disjoint, inside the tensor; block-FP8 ones are
		// runs of whole 32-column groups (not whole rows of scale blocks);
		// at most the budget.
		var n int64
		for i, rg := range r.SampledRanges {
			assert.True(t, rg[0] < rg[1] && rg[1] <= r.Numel, "%s: range %v", r.Name, rg)
			if i > 0 {
				assert.LessOrEqual(t, r.SampledRanges[i-1][1], rg[0], r.Name)
			}
			n += rg[1] - rg[0]
		}
		assert.Equal(t, n, *r.SampledElems, r.Name)
		esize := int64(max(b.DType.Bits()/8, 1))
		if ft, ok := fc.Lookup(r.Name); ok {
			esize = max(esize, int64(ft.DType.Bits()/8))
		}
		if r.BaseDType == numfmt.F8E4M3 || r.FTDType == numfmt.F8E4M3 {
			cols := r.Numel / r.Shape[0]
			require.Zero(t, cols%32, r.Name)
			for _, rg := range r.SampledRanges {
				assert.Zero(t, rg[0]%32, "%s: starts on a group", r.Name)
				assert.Zero(t, rg[1]%32, "%s: ends on one", r.Name)
			}
		}
		assert.LessOrEqual(t, n*esize, opt.SampleBytes, r.Name)
		assert.GreaterOrEqual(t, len(r.SampledRanges), 2, "%s: spread over several ranges", r.Name)
		assert.False(t, math.IsNaN(float64(*r.Cosine)), r.Name)
	}
	assert.True(t, sawRequant, "the MTP head (bf16 against the base's FP8) is sampled")
	assert.Less(t, res.Sample.Base.BytesRead, full.BytesRead/2)
	// The budget is the budget: per side at most 1.25 × (Σ min(size,
	// SIZE) + the scale tensors of sampled weights, read whole).
	for _, side := range []struct {
		c    *ckpt.Checkpoint
		read int64
	}{{bc, res.Sample.Base.BytesRead}, {fc, res.Sample.FT.BytesRead}} {
		var bound int64
		for _, tn := range side.c.Tensors {
			bound += min(int64(tn.NBytes()), opt.SampleBytes)
			if strings.HasSuffix(tn.Name, ckpt.ScaleSuffix) && int64(tn.NBytes()) > opt.SampleBytes {
				bound += int64(tn.NBytes()) - opt.SampleBytes
			}
		}
		assert.Positive(t, side.read)
		assert.LessOrEqual(t, side.read, bound*5/4)
	}

	other, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{SampleBytes: 4 << 10, SampleSeed: 6})
	require.NoError(t, err)
	differ := false
	for i := range other.Tensors {
		differ = differ || !assert.ObjectsAreEqual(other.Tensors[i].SampledRanges, res.Tensors[i].SampledRanges)
	}
	assert.True(t, differ, "another seed draws other ranges")

	_, err = diff.Compare(ctx, bc, fc, diff.CompareOptions{SampleBytes: 4 << 10, Mode: diff.ModeBytes})
	assert.ErrorContains(t, err, "values mode")
	_, err = diff.Compare(ctx, bc, fc, diff.CompareOptions{Mode: "fast"})
	assert.EqualError(t, err, `unknown diff mode "fast" (want header, bytes or values)`)
}

// TestSampleBytesReads: the reads of a sampled diff run concurrently, at
// most Workers at a time, and never read a byte of a file twice.
func TestSampleBytesReads(t *testing.T) {
	t.Parallel()
	b, f, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	var armed atomic.Bool
	var cur, most atomic.Int64
	var mu sync.Mutex
	seen := map[string][][2]int64{}
	open := func(dir, side string) *ckpt.Checkpoint {
		ds, err := ckpt.NewDirStore(dir)
		require.NoError(t, err)
		t.Cleanup(func() { ds.Close() })
		hs := &ckpttest.HookStore{Store: ds, OnRead: func(name string, off int64, n int) {
			if !armed.Load() {
				return
			}
			c := cur.Add(1)
			for m := most.Load(); c > m && !most.CompareAndSwap(m, c); m = most.Load() {
			}
			mu.Lock()
			seen[side+"/"+name] = append(seen[side+"/"+name], [2]int64{off, off + int64(n)})
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			cur.Add(-1)
		}}
		c, err := ckpt.OpenStore(context.Background(), hs, "", ckpt.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	bc, fc := open(b, "base"), open(f, "ft")
	armed.Store(true)
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{SampleBytes: 4 << 10, Workers: 3})
	require.NoError(t, err)
	armed.Store(false)
	assert.Equal(t, int64(3), most.Load(), "reads in flight: concurrent, at most --workers")
	var reads int64
	for file, rs := range seen {
		sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
		for i := 1; i < len(rs); i++ {
			assert.LessOrEqual(t, rs[i-1][1], rs[i][0], "%s: bytes read twice", file)
		}
		reads += int64(len(rs))
	}
	assert.Equal(t, res.Sample.Base.Reads+res.Sample.FT.Reads, reads)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = diff.Compare(ctx, bc, fc, diff.CompareOptions{SampleBytes: 4 << 10})
	assert.ErrorIs(t, err, context.Canceled)
}

// ClusterInterval: no change seen in m ranges bounds the fraction by the
// ranges (not the elements) sampled; evenly spread changes give about the
// interval of independent draws; a change in one range of many is not
// ruled out elsewhere.
func TestClusterInterval(t *testing.T) {
	t.Parallel()
	sizes := make([]int64, 16)
	for i := range sizes {
		sizes[i] = 2048
	}
	lo, hi := diff.ClusterInterval(make([]int64, 16), sizes)
	_, whi := diff.Wilson(0, 16)
	assert.Zero(t, lo)
	assert.InDelta(t, whi, hi, 1e-12, "zero hits: at most the ranges' bound")
	even := make([]int64, 16)
	for i := range even {
		even[i] = 205
	}
	lo, hi = diff.ClusterInterval(even, sizes)
	wlo, whi := diff.Wilson(205*16, 2048*16)
	assert.InDelta(t, wlo, lo, 1e-9)
	assert.InDelta(t, whi, hi, 1e-9)
	one := make([]int64, 16)
	one[3] = 2048
	lo, hi = diff.ClusterInterval(one, sizes)
	assert.Zero(t, lo, "one range fully changed: other ranges may hold none")
	assert.Greater(t, hi, 0.2)
	lo, hi = diff.ClusterInterval(nil, nil)
	assert.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi})
}

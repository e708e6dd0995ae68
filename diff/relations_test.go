package diff_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const blk = 32

// nudgeOneCode finds an element of w (not the amax of its block) for which
// a 1-ulp bf16 nudge changes its re-quantised code, and returns the
// nudged copy and the element's index.
func nudgeOneCode(t *testing.T, w []float32, rows, cols int64) ([]float32, int) {
	codes, _, _ := fp8(t, "x", w, rows, cols, blk, blk, numfmt.BF16)
	for i := range w {
		for _, d := range []int32{1, -1} {
			w2 := append([]float32(nil), w...)
			bits := numfmt.F32ToBF16(w[i])
			w2[i] = numfmt.BF16ToF32(uint16(int32(bits) + d))
			c2, _, _ := fp8(t, "x", w2, rows, cols, blk, blk, numfmt.BF16)
			diffs := 0
			for k := range codes {
				if codes[k] != c2[k] {
					diffs++
				}
			}
			if diffs == 1 && c2[i] != codes[i] {
				return w2, i
			}
		}
	}
	t.Fatal("no element whose 1-ulp nudge changes exactly one code")
	return nil, 0
}

func TestRelationsKnownAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const R, C = 96, 80 // 3×3 blocks of 32 (the last column block partial)
	w := randValues(11, R*C)
	small := randValues(12, 64)

	// changed bf16: exactly 5 elements differ, spread over chunks
	chg := append([]float32(nil), small...)
	for _, i := range []int{0, 9, 31, 32, 63} {
		chg[i] = numfmt.RoundTo(numfmt.BF16, chg[i]+0.25)
	}
	// dtype_changed: bf16 → f32 with different values
	dt32 := append([]float32(nil), small...)
	for i := range dt32 {
		dt32[i] += 1e-4
	}
	// FP8 with one changed scale (codes identical)
	codes, scales, fpBase := fp8(t, "fp8s.weight", w, R, C, blk, blk, numfmt.BF16)
	scales2 := append([]float32(nil), scales...)
	scales2[4] = numfmt.BF16ToF32(numfmt.F32ToBF16(scales2[4]) + 1) // block (1,1) one ulp up
	fpScaleChanged := []ckpt.MemTensor{fpBase[0], {WriteSpec: fpBase[1].WriteSpec, Data: encode(t, numfmt.BF16, scales2)}}
	// requant both ways, near misses
	_, _, fpW := fp8(t, "rq.weight", w, R, C, blk, blk, numfmt.BF16)
	_, _, fpW2 := fp8(t, "rq2.weight", w, R, C, blk, blk, numfmt.BF16)
	nudged, nudgedAt := nudgeOneCode(t, w, R, C)
	_, _, fpNear := fp8(t, "near.weight", w, R, C, blk, blk, numfmt.BF16)
	_, _, fpNearScale := fp8(t, "nears.weight", w, R, C, blk, blk, numfmt.BF16)
	nearScale := []ckpt.MemTensor{fpNearScale[0], {WriteSpec: fpNearScale[1].WriteSpec, Data: encode(t, numfmt.BF16, scales2)}}
	ids := func(v ...int32) ckpt.MemTensor {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
		}
		return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "ids", DType: numfmt.I32, Shape: []int64{int64(len(v))}}, Data: b}
	}

	baseT := []ckpt.MemTensor{
		bf16T(t, "same.weight", []int64{8, 8}, small),
		bf16T(t, "chg.weight", []int64{8, 8}, small),
		bf16T(t, "dt.weight", []int64{64}, small),
		bf16T(t, "shape.weight", []int64{8, 8}, small),
		bf16T(t, "gone.weight", []int64{8, 8}, small),
		ids(1, 2, 3, 4),
		fpBase[0], fpBase[1],
		fpW[0], fpW[1], // base FP8 → ft bf16
		bf16T(t, "rq2.weight", []int64{R, C}, w), // base bf16 → ft FP8
		fpNear[0], fpNear[1],
		nearScale[0], nearScale[1],
	}
	ftT := []ckpt.MemTensor{
		bf16T(t, "same.weight", []int64{8, 8}, small),
		bf16T(t, "chg.weight", []int64{8, 8}, chg),
		{WriteSpec: ckpt.WriteSpec{Name: "dt.weight", DType: numfmt.F32, Shape: []int64{64}}, Data: encode(t, numfmt.F32, dt32)},
		bf16T(t, "shape.weight", []int64{4, 16}, small),
		bf16T(t, "new.weight", []int64{2}, small[:2]),
		ids(1, 2, 7, 4),
		fpScaleChanged[0], fpScaleChanged[1],
		bf16T(t, "rq.weight", []int64{R, C}, w),
		fpW2[0], fpW2[1],
		bf16T(t, "near.weight", []int64{R, C}, nudged),
		bf16T(t, "nears.weight", []int64{R, C}, w),
	}
	bc := writeCkpt(t, filepath.Join(dir, "base"), baseT, blk, nil)
	fc := writeCkpt(t, filepath.Join(dir, "ft"), ftT, blk, nil)

	want := map[string]diff.Relation{
		"same.weight": diff.Identical, "chg.weight": diff.Changed, "dt.weight": diff.DTypeChanged,
		"shape.weight": diff.ShapeChanged, "gone.weight": diff.OnlyInBase, "new.weight": diff.OnlyInFT,
		"ids": diff.Changed, "fp8s.weight": diff.Changed, "fp8s.weight_scale_inv": diff.Changed,
		"rq.weight": diff.RequantIdentical, "rq.weight_scale_inv": diff.OnlyInBase,
		"rq2.weight": diff.RequantIdentical, "rq2.weight_scale_inv": diff.OnlyInFT,
		"near.weight": diff.DTypeChanged, "near.weight_scale_inv": diff.OnlyInBase,
		"nears.weight": diff.DTypeChanged, "nears.weight_scale_inv": diff.OnlyInBase,
	}
	var first *diff.Result
	for _, opt := range []diff.CompareOptions{{}, {ChunkBytes: 64, Workers: 1, ReadAhead: -1}, {ChunkBytes: 64, Workers: 4}} {
		res, err := diff.Compare(context.Background(), bc, fc, opt)
		require.NoError(t, err)
		got := map[string]diff.Relation{}
		for _, r := range res.Tensors {
			got[r.Name] = r.Relation
		}
		require.Equal(t, want, got)
		by := rows(res)

		assertStats(t, by["chg.weight"], refStats{changed: 5, maxAbs: maxAbs(small, chg), relL2: reference(small, chg).relL2, cosin: reference(small, chg).cosin})
		assertStats(t, by["dt.weight"], reference(small, roundAll(numfmt.F32, dt32)))
		assert.Equal(t, []int64{4, 16}, by["shape.weight"].FTShape)
		assert.Nil(t, by["shape.weight"].ChangedElems)
		assert.Equal(t, int64(1), *by["ids"].ChangedElems)
		assert.Nil(t, by["ids"].Cosine, "integers have no float statistics")

		// scale changed by one ulp in block (1,1): the codes of that block
		// that are not zero change value
		var nz int64
		for i := int64(32); i < 64; i++ {
			for j := int64(32); j < 64; j++ {
				if codes[i*C+j]&0x7f != 0 {
					nz++
				}
			}
		}
		assertStats(t, by["fp8s.weight"], refWithChanged(reference(dequant(codes, scales, R, C, blk, blk), dequant(codes, scales2, R, C, blk, blk)), nz))
		assert.Equal(t, int64(1), *by["fp8s.weight_scale_inv"].ChangedElems)

		deq := dequant(codes, scales, R, C, blk, blk)
		assertStats(t, by["rq.weight"], reference(deq, w))
		assertStats(t, by["rq2.weight"], reference(w, deq))
		for _, n := range []string{"rq.weight", "rq2.weight"} {
			assert.Equal(t, int64(0), *by[n].RequantMismatchElems, n)
			assert.Equal(t, int64(0), *by[n].RequantMismatchBlocks, n)
		}
		// near miss: one element 1 ulp off → one code, one block
		assert.Equal(t, int64(1), *by["near.weight"].RequantMismatchElems, "element %d", nudgedAt)
		assert.Equal(t, int64(1), *by["near.weight"].RequantMismatchBlocks)
		assertStats(t, by["near.weight"], reference(deq, nudged))
		// near miss: a scale 1 ulp off → no code, one block
		assert.Equal(t, int64(0), *by["nears.weight"].RequantMismatchElems)
		assert.Equal(t, int64(1), *by["nears.weight"].RequantMismatchBlocks)

		assert.Equal(t, diff.Summary{Identical: 1, Changed: 4, RequantIdentical: 2, DTypeChanged: 3, ShapeChanged: 1, OnlyInBase: 4, OnlyInFT: 2}, res.Summary)
		if first == nil {
			first = res
		} else if opt.ChunkBytes == 64 && opt.Workers == 4 {
			// same chunks, different scheduling: bit-identical results
			res1, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{ChunkBytes: 64, Workers: 1, ReadAhead: -1})
			require.NoError(t, err)
			assert.Equal(t, res1.Tensors, res.Tensors)
		}
	}
}

func maxAbs(a, b []float32) float64 { return reference(a, b).maxAbs }

func roundAll(dt numfmt.DType, v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = numfmt.RoundTo(dt, x)
	}
	return out
}

func refWithChanged(r refStats, n int64) refStats { r.changed = n; return r }

// TestSample: CompareOptions.Sample draws the tensors whose data is compared,
// deterministically, scale companions with their weight; every tensor
// still has a row and its header relation.
func TestSample(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	full, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{})
	require.NoError(t, err)
	fullRows := rows(full)
	run := func(n int, seed uint64) []string {
		res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Sample: n, Seed: seed})
		require.NoError(t, err)
		assert.True(t, res.Sampled)
		require.Len(t, res.Tensors, len(full.Tensors), "every tensor has a row")
		assert.Equal(t, full.Keys, res.Keys, "keys are compared in full")
		var names []string
		for _, r := range res.Tensors {
			f := fullRows[r.Name]
			if w, ok := cutScale(r.Name); ok && f.Relation == diff.OnlyInBase && slices.Contains(names, w) {
				names = append(names, r.Name) // drawn with its weight
				continue
			}
			if r.ChangedElems == nil { // data not compared
				want := f.Relation
				switch f.Relation {
				case diff.Identical, diff.Changed:
					want = diff.SameHeader
				case diff.RequantIdentical:
					want = diff.DTypeChanged
				}
				assert.Equal(t, want, r.Relation, r.Name)
				continue
			}
			assert.Equal(t, f, r, "%s: compared as in the full diff", r.Name)
			names = append(names, r.Name)
		}
		assert.Len(t, names, res.SampleTensors)
		return names
	}
	a, b, c := run(10, 1), run(10, 1), run(10, 2)
	assert.Equal(t, a, b, "deterministic for a seed")
	assert.NotEqual(t, a, c, "another seed draws another sample")
	weights := 0
	for i, n := range a {
		if i > 0 {
			assert.True(t, ckpt.NaturalLess(a[i-1], n), "natural order")
		}
		if w, ok := cutScale(n); ok {
			assert.Contains(t, a, w, "a scale comes with its weight")
		} else {
			weights++
		}
	}
	assert.Equal(t, 10, weights)

	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeHeader, Sample: 10})
	require.NoError(t, err)
	assert.False(t, res.Sampled, "header mode reads no data: nothing to sample")
}

func cutScale(n string) (string, bool) {
	const s = ckpt.ScaleSuffix
	if len(n) > len(s) && n[len(n)-len(s):] == s {
		return n[:len(n)-len(s)], true
	}
	return "", false
}

func TestMatchExclude(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	m, err := ckpt.NewMatcher([]string{"mtp.**"}, []string{"mtp.**.weight_scale_inv"})
	require.NoError(t, err)
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Match: m})
	require.NoError(t, err)
	assert.Equal(t, diff.Summary{Identical: 8, RequantIdentical: 7}, res.Summary, "the weight is dequantised with its scale even when the scale is not selected")
}

func TestCancel(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := diff.Compare(ctx, bc, fc, diff.CompareOptions{})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestNaNAndZeroBase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	nan := float32(math.NaN())
	bc := writeCkpt(t, filepath.Join(dir, "b"), []ckpt.MemTensor{
		bf16T(t, "n", []int64{4}, []float32{1, 2, 3, 4}),
		bf16T(t, "z", []int64{4}, []float32{0, 0, 0, 0}),
		bf16T(t, "e", []int64{0, 4}, nil),
	}, 0, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{
		bf16T(t, "n", []int64{4}, []float32{1, nan, 3, 4}),
		bf16T(t, "z", []int64{4}, []float32{0, 1, 0, 0}),
		bf16T(t, "e", []int64{0, 4}, nil),
	}, 0, nil)
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{})
	require.NoError(t, err)
	by := rows(res)
	assert.Equal(t, diff.Changed, by["n"].Relation)
	assert.Equal(t, int64(1), *by["n"].ChangedElems)
	assert.True(t, math.IsNaN(float64(*by["n"].MaxAbsDiff)), "a NaN difference is reported as NaN (null in JSON)")
	assert.True(t, math.IsInf(float64(*by["z"].RelL2), 1), "rel_l2 against an all-zero base is +Inf (null in JSON)")
	assert.Equal(t, diff.Float(0), *by["z"].Cosine)
	assert.Equal(t, diff.Identical, by["e"].Relation, "empty tensors are identical")
	raw, err := json.Marshal(by["n"])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"max_abs_diff":null`)
}

package diff_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/source/sourcetest"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// zeroSignWeights returns bf16 values [64, 64] (blocks of 32) with tiny
// negative and tiny positive values that quantise to zero, and one block
// (1, 1) of zeros; and the recipe's FP8 codes and scales for them.
func zeroSignWeights(t *testing.T) (w []float32, codes []byte, scales []float32) {
	const R, C = 64, 64
	w = randValues(21, R*C)
	tiny := numfmt.RoundTo(numfmt.BF16, 1e-9)
	for i := 0; i < R*C; i += 7 {
		w[i] = -tiny // the recipe (like torch) gives -0 (0x80)
		if i+3 < R*C {
			w[i+3] = tiny // +0 (0x00)
		}
	}
	for r := 32; r < 64; r++ {
		for c := 32; c < 64; c++ {
			w[r*C+c] = 0 // a zero block: scale 0, every code 0
		}
	}
	codes, scales, _ = fp8(t, "x", w, R, C, blk, blk, numfmt.BF16)
	return w, codes, scales
}

// replaceCode returns a copy of codes with every from replaced by to, and
// how many were.
func replaceCode(codes []byte, from, to byte) ([]byte, int64) {
	out := append([]byte(nil), codes...)
	var n int64
	for i, c := range out {
		if c == from {
			out[i] = to
			n++
		}
	}
	return out, n
}

func fp8Tensors(t *testing.T, name string, codes []byte, scales []float32) []ckpt.MemTensor {
	return []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.F8E4M3, Shape: []int64{64, 64}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(name), DType: numfmt.BF16, Shape: []int64{2, 2}}, Data: encode(t, numfmt.BF16, scales)},
	}
}

// TestZeroSignRequantIdentical: a bf16 tensor whose values re-quantise to
// the base's FP8 is requant_identical whichever sign the base's quantiser
// gave its zeros: numpy-style (+0 where the recipe, like torch, gives -0)
// and the other way round (-0 where the recipe gives +0), with the FP8
// side in the base or in the fine-tune.
func TestZeroSignRequantIdentical(t *testing.T) {
	t.Parallel()
	w, codes, scales := zeroSignWeights(t)
	numpy, nNumpy := replaceCode(codes, 0x80, 0x00)
	flipped, nFlipped := replaceCode(codes, 0x00, 0x80)
	require.Positive(t, nNumpy)
	require.Greater(t, nFlipped, int64(32*32), "the zero block is flipped too")
	for _, tc := range []struct {
		name  string
		codes []byte
		n     int64
	}{
		{"torch-style base (the recipe's own codes)", codes, 0},
		{"numpy-style base: +0 where the recipe gives -0", numpy, nNumpy},
		{"-0 where the recipe gives +0", flipped, nFlipped},
	} {
		for _, fp8InBase := range []bool{true, false} {
			dir := t.TempDir()
			q := fp8Tensors(t, "m.weight", tc.codes, scales)
			wide := []ckpt.MemTensor{bf16T(t, "m.weight", []int64{64, 64}, w)}
			bt, ft := q, wide
			if !fp8InBase {
				bt, ft = wide, q
			}
			bc := writeCkpt(t, filepath.Join(dir, "b"), bt, blk, nil)
			fc := writeCkpt(t, filepath.Join(dir, "f"), ft, blk, nil)
			res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{})
			require.NoError(t, err)
			row := rows(res)["m.weight"]
			assert.Equal(t, diff.RequantIdentical, row.Relation, "%s (FP8 in base: %v)", tc.name, fp8InBase)
			assert.Equal(t, int64(0), *row.RequantMismatchElems, tc.name)
			assert.Equal(t, int64(0), *row.RequantMismatchBlocks, tc.name)
			assert.Equal(t, tc.n, row.ZeroSignCodes, "%s: codes differing only in the sign of zero", tc.name)
		}
	}

	// The same over HTTP (the loopback hub), whole and sampled: a sample
	// of a requant pair that re-quantises exactly is requant_identical_seen.
	dir := t.TempDir()
	writeCkpt(t, filepath.Join(dir, "b"), fp8Tensors(t, "m.weight", numpy, scales), blk, nil)
	writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{bf16T(t, "m.weight", []int64{64, 64}, w)}, blk, nil)
	hub := sourcetest.NewHub(filepath.Join(dir, "b"), "org/base")
	hub.AddRepo("org/ft", filepath.Join(dir, "f"))
	t.Cleanup(hub.Close)
	openers := source.Openers(source.Options{Getenv: func(k string) string {
		if k == "HF_ENDPOINT" {
			return hub.URL
		}
		return ""
	}})
	hb, err := ckpt.Open(context.Background(), "hf://org/base", ckpt.Options{}, openers...)
	require.NoError(t, err)
	t.Cleanup(func() { hb.Close() })
	hf, err := ckpt.Open(context.Background(), "hf://org/ft", ckpt.Options{}, openers...)
	require.NoError(t, err)
	t.Cleanup(func() { hf.Close() })
	for _, opt := range []diff.CompareOptions{{}, {SampleBytes: 1 << 10, SampleSeed: 2}} {
		res, err := diff.Compare(context.Background(), hb, hf, opt)
		require.NoError(t, err)
		row := rows(res)["m.weight"]
		want := diff.RequantIdentical
		if opt.SampleBytes > 0 {
			want = diff.RequantIdenticalSeen
			require.True(t, row.Sampled)
		}
		assert.Equal(t, want, row.Relation, "over HTTP, %+v", opt)
		assert.Equal(t, int64(0), *row.RequantMismatchElems)
	}

	// A real mismatch is still one, next to the sign differences.
	bad := append([]byte(nil), numpy...)
	bad[1] ^= 0x01
	dir = t.TempDir()
	bc := writeCkpt(t, filepath.Join(dir, "b"), fp8Tensors(t, "m.weight", bad, scales), blk, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{bf16T(t, "m.weight", []int64{64, 64}, w)}, blk, nil)
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{})
	require.NoError(t, err)
	row := rows(res)["m.weight"]
	assert.Equal(t, diff.DTypeChanged, row.Relation)
	assert.Equal(t, int64(1), *row.RequantMismatchElems)
	assert.Equal(t, nNumpy, row.ZeroSignCodes)
}

// TestZeroSignFP8Identical: two FP8 tensors whose codes differ only in the
// sign of zero, or in which NaN code they use, hold the same values:
// identical, with the sign differences counted; a real change next to
// them is counted alone.
func TestZeroSignFP8Identical(t *testing.T) {
	t.Parallel()
	_, codes, scales := zeroSignWeights(t)
	codes[5], codes[6] = 0x7f, 0xff // two NaN codes
	other := append([]byte(nil), codes...)
	var n int64
	for i, c := range other {
		switch c {
		case 0x00:
			other[i] = 0x80
			n++
		case 0x80:
			other[i] = 0x00
			n++
		case 0x7f:
			other[i] = 0xff
		case 0xff:
			other[i] = 0x7f
		}
	}
	changed := append([]byte(nil), other...)
	changed[100] ^= 0x01
	require.NotContains(t, []byte{0x00, 0x80, 0x7f, 0xff}, codes[100])
	dir := t.TempDir()
	bc := writeCkpt(t, filepath.Join(dir, "b"), append(fp8Tensors(t, "same.weight", codes, scales), fp8Tensors(t, "chg.weight", codes, scales)...), blk, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), append(fp8Tensors(t, "same.weight", other, scales), fp8Tensors(t, "chg.weight", changed, scales)...), blk, nil)
	for _, opt := range []diff.CompareOptions{{}, {ChunkBytes: 64, Workers: 3}} {
		res, err := diff.Compare(context.Background(), bc, fc, opt)
		require.NoError(t, err)
		by := rows(res)
		assert.Equal(t, diff.Identical, by["same.weight"].Relation)
		assert.Equal(t, n, by["same.weight"].ZeroSignCodes)
		assert.Equal(t, int64(0), *by["same.weight"].ChangedElems)
		assert.Equal(t, diff.Changed, by["chg.weight"].Relation)
		assert.Equal(t, int64(1), *by["chg.weight"].ChangedElems, "only the real change counts")
		assert.Equal(t, n, by["chg.weight"].ZeroSignCodes)
	}
}

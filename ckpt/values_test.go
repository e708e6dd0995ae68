package ckpt_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQuantizeBlockFP8PartialBlocks(t *testing.T) {
	t.Parallel()
	const rows, cols, bm, bn = 5, 7, 2, 3 // edge blocks of 1 row and 1 column
	sr, sc := 3, 3
	w := make([]float32, rows*cols)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	// Block (1, 1) is all zero; block (2, 2) holds a single element.
	for i := 2; i < 4; i++ {
		for j := 3; j < 6; j++ {
			w[i*cols+j] = 0
		}
	}
	w[4*cols+6] = -3.5
	for _, sd := range []numfmt.DType{numfmt.BF16, numfmt.F32, numfmt.F16} {
		codes := make([]byte, rows*cols)
		scales := make([]float32, sr*sc)
		numfmt.QuantizeBlockFP8(w, rows, cols, bm, bn, sd, codes, scales)
		for bi := 0; bi < sr; bi++ {
			for bj := 0; bj < sc; bj++ {
				var amax float64
				for i := bi * bm; i < min((bi+1)*bm, rows); i++ {
					for j := bj * bn; j < min((bj+1)*bn, cols); j++ {
						amax = math.Max(amax, math.Abs(float64(w[i*cols+j])))
					}
				}
				s := scales[bi*sc+bj]
				assert.Equal(t, numfmt.RoundTo(sd, float32(amax)/448), s, "%s scale of block (%d,%d)", sd, bi, bj)
				for i := bi * bm; i < min((bi+1)*bm, rows); i++ {
					for j := bj * bn; j < min((bj+1)*bn, cols); j++ {
						c := codes[i*cols+j]
						x := float64(w[i*cols+j])
						if s == 0 {
							assert.Equal(t, byte(0), c)
							continue
						}
						got := e4m3Ref(c) * float64(s)
						// 3 mantissa bits: relative error ≤ 2^-4, plus the
						// subnormal quantum 2^-10·s, plus the scale's rounding.
						tol := math.Abs(x)*(1.0/16+1.0/128) + math.Ldexp(float64(s), -10)
						assert.InDelta(t, x, got, tol, "%s element (%d,%d)", sd, i, j)
					}
				}
			}
		}
		assert.Equal(t, float32(0), scales[1*sc+1], "zero block")
		assert.Equal(t, numfmt.RoundTo(sd, 3.5/448), scales[2*sc+2])
		assert.Equal(t, byte(0xfe), codes[4*cols+6], "the block maximum maps to -448 (up to the scale's rounding)")
	}
}

// writeFP8Checkpoint writes one FP8 weight [rows, cols] with a bf16 block
// scale and a config with weight_block_size [bm, bn]; it returns the codes
// and scale bits it wrote.
func writeFP8Checkpoint(t testing.TB, dir string, rows, cols, bm, bn int64) ([]byte, []uint16) {
	r := rand.New(rand.NewPCG(uint64(rows), uint64(cols)))
	codes := make([]byte, rows*cols)
	for i := range codes {
		c := byte(r.IntN(256))
		if c&0x7f == 0x7f {
			c = 0x3f
		}
		codes[i] = c
	}
	sr, sc := (rows+bm-1)/bm, (cols+bn-1)/bn
	scale := make([]uint16, sr*sc)
	sdata := make([]byte, 2*len(scale))
	for i := range scale {
		scale[i] = numfmt.F32ToBF16(float32(math.Ldexp(1+r.Float64(), -8-r.IntN(4))))
		binary.LittleEndian.PutUint16(sdata[2*i:], scale[i])
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "w.weight", DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: "w.weight_scale_inv", DType: numfmt.BF16, Shape: []int64{sr, sc}}, Data: sdata},
		{WriteSpec: ckpt.WriteSpec{Name: "n.weight", DType: numfmt.F16, Shape: []int64{3, 2, 2}}, Data: []byte{0, 0x3c, 0, 0xc0, 1, 0, 0, 0x7c, 0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c, 0, 0x3c}},
	}, map[string]string{"format": "pt"}))
	cfg := `{"model_type":"x","quantization_config":{"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[` +
		itoa(bm) + `,` + itoa(bn) + `]}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644))
	return codes, scale
}

func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}

func TestValuesDequantize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ rows, cols, bm, bn int64 }{
		{70, 45, 32, 16}, // blocks do not divide the shape
		{64, 64, 32, 32}, // they do
		{3, 200, 128, 128},
		{129, 1, 128, 128},
	} {
		dir := t.TempDir()
		codes, scale := writeFP8Checkpoint(t, dir, tc.rows, tc.cols, tc.bm, tc.bn)
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
		require.NoError(t, err)
		wt, ok := c.Lookup("w.weight")
		require.True(t, ok)
		v, err := c.Values(wt)
		require.NoError(t, err)
		require.True(t, v.Dequantized())
		require.Equal(t, tc.rows, v.Rows)
		require.Equal(t, tc.cols, v.Cols)
		sc := (tc.cols + tc.bn - 1) / tc.bn
		want := func(i, j int64) float64 {
			s := math.Float32frombits(uint32(scale[(i/tc.bm)*sc+j/tc.bn]) << 16)
			return float64(float32(e4m3Ref(codes[i*tc.cols+j])) * s)
		}
		for _, chunk := range []int64{1, 5, tc.rows, v.ChunkRows(1 << 10)} {
			dst := make([]float32, chunk*tc.cols)
			var raw []byte
			for r0 := int64(0); r0 < tc.rows; r0 += chunk {
				n := min(chunk, tc.rows-r0)
				raw, err = v.ReadRows(r0, n, raw, dst)
				require.NoError(t, err)
				require.Equal(t, codes[r0*tc.cols:(r0+n)*tc.cols], raw)
				for i := int64(0); i < n; i++ {
					for j := int64(0); j < tc.cols; j++ {
						if got := dst[i*tc.cols+j]; float64(got) != want(r0+i, j) {
							t.Fatalf("%v chunk %d: (%d,%d) = %v, want %v", tc, chunk, r0+i, j, got, want(r0+i, j))
						}
					}
				}
			}
		}
		assert.Equal(t, float32(want(tc.rows-1, tc.cols-1)), v.ScaleAt(tc.rows-1, tc.cols-1)*numfmt.DecodeE4M3(codes[tc.rows*tc.cols-1]))
		_, err = v.ReadRows(tc.rows-1, 2, nil, make([]float32, 2*tc.cols))
		assert.Error(t, err, "rows past the end")
		_, err = v.ReadRows(-1, 1, nil, make([]float32, tc.cols))
		assert.Error(t, err)
		if ch := v.ChunkRows(1 << 12); ch < tc.rows {
			assert.Zero(t, ch%tc.bm, "chunks align to scale blocks")
		}

		// A non-FP8 3-D tensor reads as [3, 4] without a scale.
		nt, _ := c.Lookup("n.weight")
		nv, err := c.Values(nt)
		require.NoError(t, err)
		assert.False(t, nv.Dequantized())
		dst := make([]float32, 12)
		_, err = nv.ReadRows(0, 3, nil, dst)
		require.NoError(t, err)
		assert.Equal(t, float32(1), dst[0])
		assert.Equal(t, float32(-2), dst[1])
		assert.Equal(t, float32(math.Ldexp(1, -24)), dst[2])
		assert.True(t, math.IsInf(float64(dst[3]), 1))
		c.Close()
	}
}

func TestValuesErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFP8Checkpoint(t, dir, 70, 45, 32, 16)
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	wt, _ := c.Lookup("w.weight")
	st, _ := c.Lookup("w.weight_scale_inv")
	_, err = ckpt.NewValues(wt, st, 16, 16) // scale shape disagrees with the block
	assert.ErrorContains(t, err, "scale shape")
	_, err = ckpt.NewValues(wt, st, 0, 16)
	assert.Error(t, err)
	nt, _ := c.Lookup("n.weight")
	_, err = ckpt.NewValues(nt, st, 32, 16)
	assert.ErrorContains(t, err, "whole 32-row blocks") // a 3-D stack of experts whose rows are not whole blocks
	c.Config = nil                                      // no quantization_config: the default block, 128x128, disagrees with the scale's shape
	_, err = c.Values(wt)
	var ue *ckpt.UnknownScaleError
	require.ErrorAs(t, err, &ue)
	assert.ErrorIs(t, err, ckpt.ErrScale)
	assert.ErrorContains(t, err, "expected [1 1] for shape [70 45] and block [128, 128]")
}

// TestValuesStreamBounded streams a tensor much larger than the chunk
// buffer and checks both the values and that memory stays bounded.
// Not parallel: it measures the process's allocations.
func TestValuesStreamBounded(t *testing.T) {
	const rows, cols, bm, bn = 2048, 2048, 128, 128 // 4 MiB of codes, 16 MiB as float32
	dir := t.TempDir()
	codes, scale := writeFP8Checkpoint(t, dir, rows, cols, bm, bn)
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	wt, _ := c.Lookup("w.weight")
	v, err := c.Values(wt)
	require.NoError(t, err)
	chunk := v.ChunkRows(1 << 20) // 1 MiB of float32 per chunk
	require.Equal(t, int64(128), chunk)
	dst := make([]float32, chunk*cols)
	raw := make([]byte, chunk*v.RowBytes())
	var want, got float64
	for i, c := range codes {
		s := math.Float32frombits(uint32(scale[(int64(i)/cols/bm)*(cols/bn)+int64(i)%cols/bn]) << 16)
		want += float64(float32(e4m3Ref(c)) * s)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for r0 := int64(0); r0 < rows; r0 += chunk {
		if _, err := v.ReadRows(r0, chunk, raw, dst); err != nil {
			t.Fatal(err)
		}
		for _, x := range dst {
			got += float64(x)
		}
	}
	runtime.ReadMemStats(&after)
	assert.Equal(t, want, got)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<10), "streaming must reuse the caller's buffers")
}

func TestReadRowsShortDestination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFP8Checkpoint(t, dir, 70, 45, 32, 16)
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	wt, _ := c.Lookup("w.weight")
	v, err := c.Values(wt)
	require.NoError(t, err)
	_, err = v.ReadRows(0, 2, nil, make([]float32, 45))
	assert.ErrorContains(t, err, "destination")
	_, err = v.ReadRows(0, 2, nil, make([]float32, 0, 90)) // capacity is enough
	assert.NoError(t, err)
}

// TestValuesExpertStack: a 3-D block-FP8 stack of experts [E, R, C] with
// an [E, R/bm, ceil(C/bn)] scale reads as each expert's 2-D block weight
// with its own grid (weight_mapping.load_qwen36_state_dict_fp8's per-expert
// dequant_fp8_block), in the default and the stacked view; rows per expert
// that are not whole blocks are refused.
func TestValuesExpertStack(t *testing.T) {
	t.Parallel()
	const E, R, C, bm, bn = 3, 64, 40, 32, 16
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 8))
	codes := make([]byte, E*R*C)
	for i := range codes {
		codes[i] = byte(r.IntN(0x7f)) | byte(r.IntN(2))<<7
	}
	sr, sc := int64(R/bm), int64((C+bn-1)/bn)
	sdata := make([]byte, 2*E*sr*sc)
	for i := 0; i < len(sdata); i += 2 {
		binary.LittleEndian.PutUint16(sdata[i:], numfmt.F32ToBF16(float32(math.Ldexp(1+r.Float64(), -8-r.IntN(4)))))
	}
	ts := []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "x.experts", DType: numfmt.F8E4M3, Shape: []int64{E, R, C}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: "x.experts_scale_inv", DType: numfmt.BF16, Shape: []int64{E, sr, sc}}, Data: sdata},
		{WriteSpec: ckpt.WriteSpec{Name: "y.experts", DType: numfmt.F8E4M3, Shape: []int64{2, 48, C}}, Data: codes[:2*48*C]},
		{WriteSpec: ckpt.WriteSpec{Name: "y.experts_scale_inv", DType: numfmt.BF16, Shape: []int64{2, 2, sc}}, Data: sdata[:2*2*2*sc]},
	}
	for e := 0; e < E; e++ {
		ts = append(ts,
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: fmt.Sprintf("x.%d.weight", e), DType: numfmt.F8E4M3, Shape: []int64{R, C}}, Data: codes[e*R*C : (e+1)*R*C]},
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: fmt.Sprintf("x.%d.weight_scale_inv", e), DType: numfmt.BF16, Shape: []int64{sr, sc}},
				Data: sdata[int64(e)*2*sr*sc : int64(e+1)*2*sr*sc]})
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}))
	cfg := `{"model_type":"x","quantization_config":{"quant_method":"fp8","fmt":"e4m3","activation_scheme":"dynamic","weight_block_size":[32,16]}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	stack, _ := c.Lookup("x.experts")
	v, err := c.Values(stack)
	require.NoError(t, err)
	require.Equal(t, int64(E), v.Rows)
	all := make([]float32, E*R*C)
	_, err = v.ReadRows(0, E, nil, all)
	require.NoError(t, err)
	sv := v.Stacked()
	require.Equal(t, [2]int64{E * R, C}, [2]int64{sv.Rows, sv.Cols})
	stacked := make([]float32, E*R*C)
	_, err = sv.ReadRows(0, E*R, nil, stacked)
	require.NoError(t, err)
	require.Equal(t, all, stacked)
	for e := 0; e < E; e++ {
		w, _ := c.Lookup(fmt.Sprintf("x.%d.weight", e))
		ev, err := c.Values(w)
		require.NoError(t, err)
		want := make([]float32, R*C)
		_, err = ev.ReadRows(0, R, nil, want)
		require.NoError(t, err)
		require.Equal(t, want, all[e*R*C:(e+1)*R*C], "expert %d", e)
		for i := int64(0); i < R; i += 7 {
			for j := int64(0); j < C; j += 5 {
				require.Equal(t, ev.ScaleAt(i, j), sv.ScaleAt(int64(e)*R+i, j))
			}
		}
	}
	odd, _ := c.Lookup("y.experts") // 48 rows per expert: not whole 32-row blocks
	_, err = c.Values(odd)
	require.ErrorContains(t, err, "whole 32-row blocks")
}

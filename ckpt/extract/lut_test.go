package extract

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/require"
)

// TestScaleLUT checks the kernel (numfmt.DequantE4M3, where the CPU has
// it) and the table routes of dequantisation against the dequantise
// (numfmt.BlockScales) and encode route byte for byte, and the NaN flag of
// the runs they scan: every code (NaN included) under ordinary, zero, negative-zero, subnormal, huge (products
// overflow to Inf) and non-finite scales, into bf16, f16 and f32, with
// ragged blocks and pieces that start and end anywhere in a row.
func TestScaleLUT(t *testing.T) {
	t.Parallel()
	const rows, cols, bm, bn = 37, 300, 8, 64
	sr, sc := int64((rows+bm-1)/bm), int64((cols+bn-1)/bn)
	rng := rand.New(rand.NewPCG(4, 2))
	codes := make([]byte, rows*cols)
	for i := range codes {
		codes[i] = byte(rng.IntN(256))
	}
	odd := []float32{0, float32(math.Copysign(0, -1)), 1e-40, 3e38, float32(math.Inf(1)), float32(math.NaN()), -2.5, 1}
	scales := make([]float32, sr*sc)
	for i := range scales {
		scales[i] = float32(math.Ldexp(1+rng.Float64(), rng.IntN(40)-30))
		if i < len(odd) {
			scales[i] = odd[i]
		}
	}
	sdata := make([]byte, 4*len(scales))
	require.NoError(t, numfmt.EncodeFloat32(numfmt.F32, scales, sdata))
	src := writeSource(t, t.TempDir(), []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "w", DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: "s", DType: numfmt.F32, Shape: []int64{sr, sc}}, Data: sdata},
	}, nil)
	c := openCkpt(t, src)
	w, _ := c.Lookup("w")
	s, _ := c.Lookup("s")
	v, err := ckpt.NewQuantValues(w, ckpt.Quant{Scheme: quant.BlockFP8, Scale: s, BM: bm, BN: bn})
	require.NoError(t, err)
	for _, out := range []numfmt.DType{numfmt.BF16, numfmt.F16, numfmt.F32} {
		db := int64(out.Bits() / 8)
		vals := make([]float32, len(codes))
		require.NoError(t, v.Blocks().Dequantize(numfmt.F8E4M3, codes, 0, vals))
		want := make([]byte, int64(len(codes))*db)
		require.NoError(t, numfmt.EncodeFloat32(out, vals, want))
		for _, tables := range []bool{false, true} {
			lut, err := newScaleLUT(numfmt.F8E4M3, out, v)
			if tables {
				lut, err = newTableLUT(numfmt.F8E4M3, out, v)
			}
			require.NoError(t, err)
			got := make([]byte, len(want))
			for e := int64(0); e < int64(len(codes)); {
				n := min(int64(1+rng.IntN(700)), int64(len(codes))-e)
				scanned, nan, err := lut.convert(v, e, codes[e:e+n], got[e*db:(e+n)*db])
				require.NoError(t, err)
				if scanned {
					nanCount, _ := ckpt.CountNonFinite(numfmt.F8E4M3, codes[e:e+n])
					require.Equal(t, nanCount > 0, nan)
				}
				e += n
			}
			require.Equal(t, want, got, "%s (tables %v, kernel %v)", out, tables, lut.kernel)
		}
	}
}

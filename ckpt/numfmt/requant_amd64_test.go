//go:build amd64 && !purego

package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodeE4M3AVX2 checks the encoding of requantAVX2 (the ENCODE of
// requant_amd64.s, run alone by encodeE4M3AVX2) against EncodeE4M3
// of the Go float32 quotient, and of the product for the multiplying
// recipes: under s = 1 on a strided sweep over all
// float32 bit patterns and on every rounding boundary of E4M3 (see
// e4m3Boundaries), under other scales on the boundaries and a coarser
// sweep.
func TestEncodeE4M3AVX2(t *testing.T) {
	t.Parallel()
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	check := func(xs []float32, s float32) {
		for len(xs)%8 != 0 {
			xs = append(xs, 0)
		}
		got := make([]uint32, len(xs))
		for _, mul := range []bool{false, true} {
			encodeE4M3AVX2(&got[0], &xs[0], len(xs), s, mul)
			for i, x := range xs {
				q := x / s
				if mul {
					q = x * s
				}
				if want := uint32(EncodeE4M3(q)); got[i] != want {
					require.Failf(t, "code differs", "x %g (%#08x), s %g, mul %v: kernel %#x, EncodeE4M3 %#x",
						x, math.Float32bits(x), s, mul, got[i], want)
				}
			}
		}
	}
	sweep := func(stride uint64) []float32 {
		var xs []float32
		for b := uint64(0); b < 1<<32; b += stride {
			xs = append(xs, math.Float32frombits(uint32(b)))
		}
		return xs
	}
	bounds := e4m3Boundaries()
	check(bounds, 1)
	check(sweep(1021), 1)
	coarse := sweep(65521)
	for _, s := range []float32{0.5, 3, 1.0 / 3, 0x1p-20, 7.1e-5, 1e30, 1e-40, math.MaxFloat32,
		-2, float32(math.Inf(1)), float32(math.NaN())} {
		scaled := make([]float32, len(bounds))
		for i, x := range bounds {
			scaled[i] = x * s // boundaries of x/s where the product is exact
		}
		check(scaled, s)
		check(bounds, s)
		check(coarse, s)
	}
}

package tile

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// fp8Run is a run of n tiles of codes (rows of stride bytes) with a scale
// per tile: the input of EncodeFP8Transposed.
type fp8Run struct {
	src    []byte
	stride int
	scales []float32
	n      int
}

// newFP8Run returns a run of n tiles in rows of 32n+pad codes, each code
// from code(tile, source row, source column), each scale from scale(tile).
func newFP8Run(n, pad int, code func(q, k, i int) byte, scale func(q int) float32) fp8Run {
	r := fp8Run{stride: n*TileDim + pad, scales: make([]float32, n), n: n}
	r.src = make([]byte, (TileDim-1)*r.stride+n*TileDim)
	for q := range n {
		r.scales[q] = scale(q)
		for k := range TileDim {
			for i := range TileDim {
				r.src[k*r.stride+q*TileDim+i] = code(q, k, i)
			}
		}
	}
	return r
}

// fp8Weight returns the F8_E4M3 code of a normally distributed weight of
// standard deviation sd, the way block-FP8 checkpoints quantize them.
func fp8Weight(rng *rand.Rand, sd float64) byte {
	return numfmt.EncodeE4M3(float32(rng.NormFloat64() * sd))
}

// fp8NotNaN maps the two NaN codes to the largest finite ones.
func fp8NotNaN(c byte) byte {
	if c&0x7f == 0x7f {
		return c - 1
	}
	return c
}

// fp8LogUniformScale returns a scale log-uniform over [2^lo, 2^hi).
func fp8LogUniformScale(rng *rand.Rand, lo, hi float64) float32 {
	return float32(math.Exp2(lo + rng.Float64()*(hi-lo)))
}

// TestEncodeFP8Transposed checks the public encoder (the kernel where there
// is one, with the table route for the tiles it hands back and for scales it
// does not take) against the table route alone: weight-like and uniform
// codes, NaN codes, zero tiles, zero scales (which the kernel takes) and
// scales it refuses (-0, negative, 256 and up, Inf, NaN).
func TestEncodeFP8Transposed(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 3))
	odd := []float32{0, -1, 256, 1e30, float32(math.Inf(1)), float32(math.NaN()), -0.5, math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))}
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B} {
		for n := 0; n < 60; n++ {
			tiles := 1 + rng.IntN(7)
			mode := rng.IntN(4)
			r := newFP8Run(tiles, rng.IntN(40), func(q, k, i int) byte {
				switch {
				case mode == 1 && q%3 == 1:
					return byte(rng.IntN(256)) // NaN codes likely
				case mode == 2 && q%2 == 0 && i < 8:
					return 0 // zero face rows
				}
				return fp8Weight(rng, 100)
			}, func(q int) float32 {
				if mode == 3 && rng.IntN(2) == 0 {
					return odd[rng.IntN(len(odd))]
				}
				return fp8LogUniformScale(rng, -30, 7)
			})
			want := make([]byte, tiles*dt.TileBytes())
			got := make([]byte, len(want))
			encodeFP8TransposedGo(dt, want, r.src, r.stride, r.scales, r.n)
			EncodeFP8Transposed(dt, got, r.src, r.stride, r.scales, r.n)
			require.Equal(t, want, got, "%v run %d (mode %d, scales %v)", dt, n, mode, r.scales)
		}
	}
}

// TestBF16ByFMA checks the rounding the FP8 kernel uses (_asm/fp8.go): for
// a float32 p, c = p·(2^16+1) rounded, c - p·2^16 (computed exactly, as an
// FMA does) is p rounded to bfloat16 with ties to even — except where that
// rounding goes up to a power of two, where it is the bfloat16 just below.
// Every significand of a few binades (the identity does not depend on the
// binade while c stays finite and normal).
func TestBF16ByFMA(t *testing.T) {
	t.Parallel()
	for _, x := range []uint32{1, 120, 127, 133, 200} {
		for f := uint32(0); f < 1<<23; f++ {
			u := x<<23 | f
			p := math.Float32frombits(u)
			c := p * (1<<16 + 1)
			h := math.Float32bits(float32(math.FMA(float64(p), -(1 << 16), float64(c))))
			w := uint32(numfmt.F32ToBF16TT(p)) << 16
			if h != w && (w&0x7fffff != 0 || h != w-0x10000) {
				t.Fatalf("p = %#08x: c - p·2^16 = %#08x, bfloat16 %#08x", u, h, w)
			}
		}
	}
}

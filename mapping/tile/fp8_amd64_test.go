//go:build amd64 && !purego

package tile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// fp8KernelStop returns the first tile of the reference bytes want the
// kernel must hand back: one with a face row whose shared exponent is
// below minTableExp but not 0 (0: a face row of zero codes, which the
// kernel encodes) or 255 (a NaN code).
func fp8KernelStop(dt DType, want []byte, n int) int {
	tb := dt.TileBytes()
	for q := range n {
		for _, e := range want[q*tb : q*tb+FaceRows] {
			if e != 0 && e < minTableExp || e == 255 {
				return q
			}
		}
	}
	return n
}

// checkFP8Kernel runs the kernel on r and checks that it stopped where it
// must, wrote the tiles before the stop exactly as the table route and left
// the tiles after it alone. It returns where the kernel stopped.
func checkFP8Kernel(t *testing.T, dt DType, r fp8Run, what string) int {
	t.Helper()
	tb := dt.TileBytes()
	want := make([]byte, r.n*tb)
	encodeFP8TransposedGo(dt, want, r.src, r.stride, r.scales, r.n)
	got := make([]byte, len(want))
	for i := range got {
		got[i] = 0xa5
	}
	k := fp8TilesKernel(dt, got, r.src, r.stride, r.scales, r.n)
	require.Equal(t, fp8KernelStop(dt, want, r.n), k, "%v %s: stop (scales %v)", dt, what, r.scales)
	for q := range k {
		require.Equal(t, want[q*tb:(q+1)*tb], got[q*tb:(q+1)*tb], "%v %s: tile %d of %d (scale %v)", dt, what, q, r.n, r.scales[q])
	}
	for i := min(len(got), (k+1)*tb); i < len(got); i++ {
		require.Equal(t, byte(0xa5), got[i], "%v %s: byte %d after the stop tile %d written", dt, what, i, k)
	}
	return k
}

// fp8Ties counts, over the runs' tiles, products that are ties of the
// bfloat16 rounding, codes that are ties of the code rounding (the value
// scaled to code units ends in .5) and face rows whose largest code is
// clamped — evidence that the tests reach these cases.
type fp8Ties struct{ bf16, code, clamp int }

func (c *fp8Ties) add(dt DType, r fp8Run) {
	k := uint32(133)
	if dt == BFLOAT4_B {
		k = 129
	}
	for q := range r.n {
		var h [TileDim][TileDim]uint16 // h[i][j]: tile row i = source column
		for j := range TileDim {
			for i := range TileDim {
				p := numfmt.DecodeE4M3(r.src[j*r.stride+q*TileDim+i]) * r.scales[q]
				if math.Float32bits(p)&0xffff == 0x8000 {
					c.bf16++
				}
				h[i][j] = numfmt.F32ToBF16TT(p)
			}
		}
		for i := range TileDim {
			for f := 0; f < TileDim; f += FaceDim {
				var e uint32
				for _, v := range h[i][f : f+FaceDim] {
					e = max(e, uint32(v)>>7&0xff)
				}
				if e < minTableExp || e > 254 {
					continue
				}
				for _, v := range h[i][f : f+FaceDim] {
					x := math.Float32frombits(uint32(v)&0x7fff<<16) * math.Float32frombits((k+127-e)<<23)
					if x-float32(math.Floor(float64(x))) == 0.5 {
						c.code++
					}
					if x >= float32(int(2)<<(k-127))-0.5 {
						c.clamp++
					}
				}
			}
		}
	}
}

// TestFP8TilesKernel compares the AVX2 kernel with the table route byte
// for byte, and its stops with the tiles the table route shows it cannot
// do (see checkFP8Kernel).
func TestFP8TilesKernel(t *testing.T) {
	t.Parallel()
	if !fp8AVX2 {
		t.Skip("no AVX2 on this CPU: the kernel encodes nothing")
	}
	edges := []float32{
		0, math.SmallestNonzeroFloat32, 0x1p-140, 0x1p-126, 0x1p-120, 0x1.fep-100,
		1, 1.0625, 0x1.01p0, 128, 255, math.Nextafter32(256, 0),
	}
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B} {
		t.Run(dt.String(), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(uint64(dt), 13))
			var ties fp8Ties

			// Random codes, log-uniform and edge scales, runs of several
			// tiles in rows wider than the run.
			for n := 0; n < 300; n++ {
				sd := math.Exp2(rng.Float64()*16 - 8)
				uniform := rng.IntN(3) == 0
				r := newFP8Run(1+rng.IntN(6), rng.IntN(50), func(q, k, i int) byte {
					if uniform {
						return fp8NotNaN(byte(rng.IntN(256)))
					}
					return fp8NotNaN(fp8Weight(rng, sd))
				}, func(q int) float32 {
					if rng.IntN(8) == 0 {
						return edges[rng.IntN(len(edges))]
					}
					return fp8LogUniformScale(rng, -30, 7)
				})
				checkFP8Kernel(t, dt, r, fmt.Sprintf("random run %d", n))
			}

			// Every finite code at every position of a tile: in tile j,
			// position p holds codes[(j+p) % len(codes)], so that the
			// face rows have large maxima; then windows of 16 codes
			// (random signs) so that the maxima are near every code.
			var codes []byte
			for c := range 256 {
				if c&0x7f != 0x7f {
					codes = append(codes, byte(c))
				}
			}
			for pass := range 4 {
				r := newFP8Run(len(codes), 7, func(q, k, i int) byte {
					return codes[(q+k*TileDim+i)%len(codes)]
				}, func(int) float32 { return fp8LogUniformScale(rng, -20, 7) })
				require.Equal(t, r.n, checkFP8Kernel(t, dt, r, fmt.Sprintf("all codes, pass %d", pass)))
				ties.add(dt, r)
			}
			for a := 0; a+15 < 0x7f; a++ {
				r := newFP8Run(FaceDim, 3, func(q, k, i int) byte {
					return byte(a+(q+k*TileDim+i)%FaceDim) | byte(rng.IntN(2))<<7
				}, func(int) float32 { return fp8LogUniformScale(rng, -20, 7) })
				checkFP8Kernel(t, dt, r, fmt.Sprintf("codes %#x..%#x", a, a+15))
			}

			// Scales with short significands: products that are ties
			// of the bfloat16 rounding, values that are ties of the code
			// rounding, largest codes that round up past the limit
			// (1.875 × 1.0625 = 1.1111111b).
			for n := 0; n < 200; n++ {
				b := 1 + rng.IntN(12)
				s := float32(math.Ldexp(float64(1<<b+rng.IntN(1<<b)), rng.IntN(28)-20-b))
				if n%4 == 0 {
					s = float32(math.Ldexp(1.0625, rng.IntN(28)-20))
				}
				r := newFP8Run(2, 0, func(q, k, i int) byte {
					return fp8NotNaN(byte(rng.IntN(256)))
				}, func(int) float32 { return s })
				checkFP8Kernel(t, dt, r, fmt.Sprintf("scale %v", s))
				ties.add(dt, r)
			}
			t.Logf("ties of the bfloat16 step %d, of the code step %d, clamped %d", ties.bf16, ties.code, ties.clamp)
			require.Positive(t, ties.bf16)
			require.Positive(t, ties.code)
			require.Positive(t, ties.clamp)

			// Shared exponent exactly 8 (encoded) and 7 (handed back):
			// the largest code c of every face row scaled to 2^-119 or
			// 2^-120 times its significand; the other codes (subnormal
			// products included) below it.
			for n := 0; n < 100; n++ {
				c := byte(0x08 + rng.IntN(0x77)) // normal, finite
				ec := int(c>>3) - 7              // e4m3(c) = 1.f × 2^ec
				for _, e := range []int{8, 7} {
					r := newFP8Run(1, 5, func(q, k, i int) byte {
						if k%FaceDim == i%FaceDim {
							return c | byte(rng.IntN(2))<<7
						}
						return byte(rng.IntN(int(c)+1)) | byte(rng.IntN(2))<<7
					}, func(int) float32 { return float32(math.Ldexp(1, e-127-ec)) })
					want := 0
					if e >= minTableExp {
						want = 1
					}
					require.Equal(t, want, checkFP8Kernel(t, dt, r, fmt.Sprintf("e=%d, largest code %#x", e, c)))
				}
			}

			// Tiles the kernel must hand back: a NaN code. Encoded: an
			// all-zero face row (zeros of both signs), subnormal codes
			// only, a zero scale, an all-zero tile under any scale.
			for n := 0; n < 100; n++ {
				pk, pi := rng.IntN(TileDim), rng.IntN(TileDim)
				nan := byte(0x7f) | byte(rng.IntN(2))<<7
				r := newFP8Run(1, 1, func(q, k, i int) byte {
					if k == pk && i == pi {
						return nan
					}
					return fp8Weight(rng, 1)
				}, func(int) float32 { return fp8LogUniformScale(rng, -30, 7) })
				require.Zero(t, checkFP8Kernel(t, dt, r, fmt.Sprintf("NaN %#x at (%d, %d)", nan, pk, pi)))
				r = newFP8Run(1, 1, func(q, k, i int) byte {
					if k/FaceDim == pk/FaceDim && i == pi {
						return byte(rng.IntN(2)) << 7
					}
					return fp8Weight(rng, 1)
				}, func(int) float32 { return fp8LogUniformScale(rng, -30, 7) })
				require.Equal(t, 1, checkFP8Kernel(t, dt, r, fmt.Sprintf("zero face row at (%d, %d)", pk, pi)))
				r = newFP8Run(1, 1, func(q, k, i int) byte {
					return byte(1+rng.IntN(7)) | byte(rng.IntN(2))<<7
				}, func(int) float32 { return fp8LogUniformScale(rng, -30, 7) })
				require.Equal(t, 1, checkFP8Kernel(t, dt, r, "subnormal codes"))
				r = newFP8Run(1, 1, func(q, k, i int) byte {
					return fp8NotNaN(byte(rng.IntN(256)))
				}, func(int) float32 { return 0 })
				require.Equal(t, 1, checkFP8Kernel(t, dt, r, "zero scale"))
				r = newFP8Run(1, 1, func(q, k, i int) byte {
					return byte(rng.IntN(2)) << 7
				}, func(int) float32 { return fp8LogUniformScale(rng, -30, 7) })
				require.Equal(t, 1, checkFP8Kernel(t, dt, r, "zero codes"))
			}
			// A NaN code under a zero scale is NaN: handed back.
			r := newFP8Run(1, 1, func(q, k, i int) byte {
				if k == 3 && i == 5 {
					return 0xff
				}
				return 0
			}, func(int) float32 { return 0 })
			require.Zero(t, checkFP8Kernel(t, dt, r, "NaN code, zero scale"))
		})
	}
}

// TestFP8TilesKernelStop checks the kernel's return value on runs of six
// tiles with one tile it cannot do (a NaN code, or a scale so small that
// face rows have shared exponents between 1 and 7) at each place, and the
// public encoder on the same runs.
func TestFP8TilesKernelStop(t *testing.T) {
	t.Parallel()
	if !fp8AVX2 {
		t.Skip("no AVX2 on this CPU: the kernel encodes nothing")
	}
	rng := rand.New(rand.NewPCG(21, 4))
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B} {
		for bad := range 6 {
			for _, tiny := range []bool{false, true} {
				r := newFP8Run(6, 11, func(q, k, i int) byte {
					switch {
					case q == bad && !tiny && k == 20 && i == 9:
						return 0xff
					case q == bad && tiny && k == 20 && i < 2:
						return 0x7e // 448 × 2^-130: exponent field 6
					}
					return fp8Weight(rng, 30)
				}, func(q int) float32 {
					if q == bad && tiny {
						return 0x1p-130
					}
					return fp8LogUniformScale(rng, -20, 0)
				})
				what := fmt.Sprintf("tile %d bad (tiny scale %v)", bad, tiny)
				require.Equal(t, bad, checkFP8Kernel(t, dt, r, what))
				want := make([]byte, r.n*dt.TileBytes())
				got := make([]byte, len(want))
				encodeFP8TransposedGo(dt, want, r.src, r.stride, r.scales, r.n)
				EncodeFP8Transposed(dt, got, r.src, r.stride, r.scales, r.n)
				require.Equal(t, want, got, "%v %s: EncodeFP8Transposed", dt, what)
			}
		}
		// Other dtypes: nothing.
		r := newFP8Run(1, 0, func(q, k, i int) byte { return 0x38 }, func(int) float32 { return 1 })
		require.Zero(t, fp8TilesKernel(BFLOAT16, make([]byte, BFLOAT16.TileBytes()), r.src, r.stride, r.scales, 1))
	}
}

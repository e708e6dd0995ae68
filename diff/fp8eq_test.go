package diff

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// fp8ValuePairs are the value pairs the exhaustive test puts under every
// pair of codes: equal, unequal, ±0, NaN against NaN (other payloads
// too), NaN against a number, infinities.
var fp8ValuePairs = func() [][2]float32 {
	nan, nan2 := float32(math.NaN()), math.Float32frombits(0xffc00001)
	inf, negZero := float32(math.Inf(1)), float32(math.Copysign(0, -1))
	return [][2]float32{
		{1, 1}, {1, 2}, {0, negZero}, {negZero, 0}, {negZero, negZero}, {nan, nan}, {nan, nan2},
		{nan, 1}, {1, nan}, {0, nan}, {inf, inf}, {inf, -inf}, {-inf, nan}, {math.SmallestNonzeroFloat32, 0},
	}
}()

// TestCountFP8Values checks countFP8Diff (the SIMD kernel on amd64)
// against countFP8DiffGo (the Go loop that was all of countFP8Diff before
// the kernel): every pair of codes under every value pair,
// each alone in a block of 16 equal elements at every position, all of
// them in one segment, and random segments of every length and
// alignment, for both FP8 dtypes and both scale cases.
func TestCountFP8Values(t *testing.T) {
	t.Parallel()
	for _, dt := range []numfmt.DType{numfmt.F8E4M3, numfmt.F8E5M2} {
		t.Run(string(dt), func(t *testing.T) {
			t.Parallel()
			check := func(a, b []byte, bF, fF []float32, msg string, args ...any) {
				t.Helper()
				for _, same := range []bool{false, true} {
					ch, zs := countFP8Diff(dt, a, b, bF, fF, same)
					wch, wzs := countFP8DiffGo(dt, a, b, bF, fF, same)
					if ch != wch || zs != wzs {
						require.Failf(t, "counts differ", "%s: scalesSame %v: got changed %d zeroSign %d, want %d %d",
							append([]any{msg, same, ch, zs, wch, wzs}, args...)...)
					}
				}
			}
			// Every code pair alone among 15 equal elements.
			var a, b [16]byte
			var bF, fF [16]float32
			for v, vp := range fp8ValuePairs {
				for x := range 256 {
					for y := range 256 {
						j := (x + y + v) % 16
						for k := range a {
							a[k], b[k], bF[k], fF[k] = 0x38, 0x38, 1, 1
						}
						a[j], b[j], bF[j], fF[j] = byte(x), byte(y), vp[0], vp[1]
						check(a[:], b[:], bF[:], fF[:], "codes %#02x %#02x values %v at %d", x, y, vp, j)
					}
				}
			}
			// Every code pair under every value pair in one segment
			// (65536 elements: several kernel calls), and its 17-element
			// windows.
			n := 256 * 256
			sa, sb := make([]byte, n), make([]byte, n)
			sbF, sfF := make([]float32, n), make([]float32, n)
			for v := range fp8ValuePairs {
				for i := range n {
					vp := fp8ValuePairs[(i+v)%len(fp8ValuePairs)]
					sa[i], sb[i], sbF[i], sfF[i] = byte(i>>8), byte(i), vp[0], vp[1]
				}
				check(sa, sb, sbF, sfF, "all pairs, values from %d", v)
				for i := 0; i+17 <= n; i += 17 {
					check(sa[i:i+17], sb[i:i+17], sbF[i:i+17], sfF[i:i+17], "window at %d, values from %d", i, v)
				}
			}
			// Random segments: codes and the values they decode to under
			// two block scales, with some codes and values perturbed.
			rng := rand.New(rand.NewPCG(13, uint64(len(dt))))
			special := []byte{0x00, 0x80, 0x7f, 0xff, 0x7e, 0xfe, 0x7d, 0x7c, 0xfc, 0x01, 0x81}
			code := func() byte {
				if rng.IntN(4) == 0 {
					return special[rng.IntN(len(special))]
				}
				return byte(rng.IntN(256))
			}
			for range 400 {
				size := rng.IntN(9000) // beyond the kernel's 4080 elements a call
				if rng.IntN(4) == 0 {
					size = rng.IntN(40)
				}
				off := rng.IntN(16)
				a, b := make([]byte, off+size), make([]byte, off+size)
				bF, fF := make([]float32, off+size), make([]float32, off+size)
				sBase, sFT := float32(rng.NormFloat64()), float32(rng.NormFloat64())
				if rng.IntN(3) == 0 {
					sFT = sBase
				}
				for i := range a {
					a[i] = code()
					switch rng.IntN(4) {
					case 0:
						b[i] = code()
					case 1:
						b[i] = a[i] ^ 0x80
					default:
						b[i] = a[i]
					}
				}
				require.NoError(t, numfmt.DecodeFloat32(dt, a, bF))
				require.NoError(t, numfmt.DecodeFloat32(dt, b, fF))
				for i := range bF {
					bF[i] *= sBase
					fF[i] *= sFT
					if rng.IntN(50) == 0 {
						fF[i] = fp8ValuePairs[rng.IntN(len(fp8ValuePairs))][1]
					}
				}
				check(a[off:], b[off:], bF[off:], fF[off:], "random segment of %d at %d", size, off)
			}
		})
	}
}

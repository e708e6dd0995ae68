package numfmt

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// e4m3Boundaries returns the float32 inputs where EncodeE4M3 changes
// its answer, with their neighbours, in both signs: every E4M3 value and
// every midpoint between two adjacent ones (the round-to-nearest-even
// ties, in the subnormal range too) ± 1 ulp, 2^-6, 2^-9, 2^-10, 448, the
// largest float32 below 448, the infinities, NaNs of both signs and
// several payloads, float32 subnormals and ±0.
func e4m3Boundaries() []float32 {
	var out []float32
	add := func(x float32) {
		for _, y := range []float32{x, math.Nextafter32(x, float32(math.Inf(1))), math.Nextafter32(x, float32(math.Inf(-1)))} {
			out = append(out, y, -y)
		}
	}
	for c := range 0x7e {
		v, next := DecodeE4M3(byte(c)), DecodeE4M3(byte(c+1))
		add(v)
		add((v + next) / 2) // exact: the values have 4 significant bits
	}
	for _, x := range []float32{0x1p-6, 0x1p-9, 0x1p-10, 3 * 0x1p-10, 448, 464, 480, 512, math.MaxFloat32,
		math.SmallestNonzeroFloat32, 0x1p-126, float32(math.Inf(1))} {
		add(x)
	}
	for _, b := range []uint32{0x7f800001, 0x7fc00000, 0x7fffffff, 0x7fa00000, 0x00000000, 0x007fffff, 0x43e00000, 0x43dfffff} {
		out = append(out, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
	}
	return out
}

// TestRequantCodes checks that requantDivMismatches and requantMulMismatches
// (AVX2 on amd64 when the CPU has it) count what their Go loop
// requantMismatchesGo counts, on random blocks
// of odd and even lengths at every alignment, under the scale of the
// recipe and under odd scales, with codes equal to the re-quantised ones,
// with their ±0 and NaN codes flipped in sign, and random codes.
func TestRequantCodes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 2))
	special := e4m3Boundaries()
	for k := range 400 {
		n := rng.IntN(300)
		if k%50 == 0 {
			n = 16384 + rng.IntN(40)
		}
		off := rng.IntN(8)
		w := make([]float32, off+n)
		mag := math.Ldexp(1, rng.IntN(60)-40)
		for i := range w {
			switch r := rng.IntN(20); {
			case r == 0:
				w[i] = special[rng.IntN(len(special))]
			case r == 1:
				w[i] = float32(math.Copysign(0, rng.NormFloat64()))
			default:
				w[i] = float32(rng.NormFloat64() * mag)
			}
		}
		w = w[off:]
		s := RoundTo(BF16, absMaxGo(w)/E4M3MaxFinite)
		switch k % 7 {
		case 5:
			s = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(300)-150))
		case 6:
			s = []float32{float32(math.Inf(1)), 1e-40, 1, -3, math.MaxFloat32, 0}[rng.IntN(6)]
		}
		codes := make([]byte, off+n+rng.IntN(3))[off:]
		for i, x := range w {
			c := EncodeE4M3(x / s)
			switch r := rng.IntN(10); {
			case r == 0:
				c = byte(rng.IntN(256))
			case r == 1 && (c&0x7f == 0 || c&0x7f == 0x7f):
				c ^= 0x80
			case r == 2:
				c = []byte{0, 0x80, 0x7f, 0xff}[rng.IntN(4)]
			}
			codes[i] = c
		}
		cnt, zs := requantDivMismatches(w, codes, s)
		wantCnt, wantZS := requantMismatchesGo(w, codes, s, false)
		require.Equal(t, wantCnt, cnt, "block %d (n %d, scale %g): changed codes", k, n, s)
		require.Equal(t, wantZS, zs, "block %d (n %d, scale %g): ±0 sign flips", k, n, s)
		// the multiplying recipes (transformers, vllm-block) through the
		// same kernel: by 1/s, whose products mostly give the same codes
		m := 1 / s
		cnt, zs = requantMulMismatches(w, codes, m)
		wantCnt, wantZS = requantMismatchesGo(w, codes, m, true)
		require.Equal(t, wantCnt, cnt, "block %d (n %d, multiplier %g): changed codes", k, n, m)
		require.Equal(t, wantZS, zs, "block %d (n %d, multiplier %g): ±0 sign flips", k, n, m)
	}
}

// TestAbsMax checks absMax (AVX2 on amd64 when the CPU has it) against
// its Go loop absMaxGo: random blocks of every length up to 300 with the
// maximum at every position, NaNs (ignored), infinities and ±0.
func TestAbsMax(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 14))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for n := range 300 {
		for _, big := range []float32{0, 7.5, -7.5, inf, -inf, math.SmallestNonzeroFloat32} {
			w := make([]float32, n)
			for i := range w {
				switch rng.IntN(8) {
				case 0:
					w[i] = nan
				case 1:
					w[i] = float32(math.Copysign(0, -1))
				default:
					w[i] = float32(rng.NormFloat64())
				}
			}
			if n > 0 {
				w[rng.IntN(n)] = big
			}
			require.Equal(t, math.Float32bits(absMaxGo(w)), math.Float32bits(AbsMax(w)), "n %d, max %g", n, big)
		}
	}
	require.Equal(t, float32(0), AbsMax(make([]float32, 64)))
}

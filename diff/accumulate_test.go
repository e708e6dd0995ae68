package diff

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAccumulatePairsAsm checks that accumulatePairs (SSE2 on amd64) gives
// bit-identical lane sums, maximum and NaN flag to the Go loop, on values
// of every magnitude with zeros, denormals, infinities and NaNs.
func TestAccumulatePairsAsm(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -1e-40, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1, -1}
	val := func() float32 {
		switch rng.IntN(10) {
		case 0:
			return special[rng.IntN(len(special))]
		case 1:
			return math.Float32frombits(rng.Uint32())
		}
		return float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30))
	}
	for n := 0; n < 300; n++ {
		size := 2 * rng.IntN(200)
		b, f := make([]float32, size), make([]float32, size)
		for i := range b {
			b[i] = val()
			f[i] = b[i]
			if rng.IntN(3) > 0 {
				f[i] = val()
			}
		}
		if rng.IntN(2) == 0 { // mostly finite rows, like weights
			for i := range b {
				if b[i] != b[i] || math.IsInf(float64(b[i]), 0) {
					b[i] = 0.5
				}
				if f[i] != f[i] || math.IsInf(float64(f[i]), 0) {
					f[i] = -0.25
				}
			}
		}
		start := lanes{mx: float64(rng.IntN(3))}
		got, want := start, start
		accumulatePairs(&got, b, f)
		accumulatePairsGo(&want, b, f)
		// Bit for bit, except that a NaN is any NaN: which operand's
		// payload a NaN sum carries depends on the operand order the
		// compiler picks (it differs under -race), and the output
		// reports NaN sums as null anyway.
		f64 := func(x float64) uint64 {
			if x != x {
				return 0x7ff8000000000000
			}
			return math.Float64bits(x)
		}
		bits := func(l lanes) [11]uint64 {
			return [11]uint64{f64(l.ss[0]), f64(l.ss[1]), f64(l.nb[0]), f64(l.nb[1]),
				f64(l.nf[0]), f64(l.nf[1]), f64(l.d[0]), f64(l.d[1]),
				f64(l.mx), map[bool]uint64{false: 0, true: 1}[l.nan], 0}
		}
		require.Equal(t, bits(want), bits(got), "size %d", size)
	}
}

package diff

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/require"
)

// TestDecodeE4M3Scaled checks that decodeE4M3Scaled (AVX2 on amd64 when
// the CPU has it) gives bit for bit the float32 products of the Go loop:
// every code at every position of a 32-code group, NaN codes among them,
// under scales of every magnitude (subnormal products, scales around the
// kernel's 2^24 bound), ±0, infinities and NaN, on segments of every
// length.
func TestDecodeE4M3Scaled(t *testing.T) {
	t.Parallel()
	var tab [256]float32
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	require.NoError(t, ckpt.DecodeFloat32(ckpt.F8E4M3, codes, tab[:]))
	scales := []float32{1, -1, 0.5, 3.1e-3, -7.7e-5, 1e-30, 1e-36, -3e-38, 1e-40, math.SmallestNonzeroFloat32,
		0, float32(math.Copysign(0, -1)), 0x1p24, -0x1p24, math.Nextafter32(0x1p24, 0), 0x1p23, 1e30, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001)}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		scales = append(scales, float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(80)-60)))
	}
	for k, s := range scales {
		for rot := range 32 {
			size := 256 + rng.IntN(80)
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i + rot)
			}
			if k%2 == 1 {
				rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
			}
			if rot%4 == 0 { // groups without a NaN code
				for i, c := range src {
					if c&0x7f == 0x7f {
						src[i] = 0x80
					}
				}
			}
			n := size - rng.IntN(40)
			got, want := make([]float32, n), make([]float32, n)
			decodeE4M3Scaled(&tab, src, got, s)
			decodeE4M3Go(&tab, src, want, s)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					require.Failf(t, "products differ", "scale %g (%#08x), code %#02x at %d of %d: got %#08x, want %#08x",
						s, math.Float32bits(s), src[i], i, n, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

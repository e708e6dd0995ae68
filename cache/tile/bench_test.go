package tile

import (
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// BenchmarkPackStrip measures packing one tile row strip of 32x5120 values
// (160 tiles, the row width of the Qwen 27B hidden size); elements/s is
// reported as Melem/s.
func BenchmarkPackStrip(b *testing.B) {
	const rows, cols = 32, 5120
	rng := rand.New(rand.NewPCG(1, 1))
	src := randMatrix(rng, rows, cols)
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B, BFLOAT16, FLOAT32} {
		b.Run(dt.String(), func(b *testing.B) {
			dst := make([]byte, StripBytes(dt, cols))
			b.SetBytes(rows * cols * 4)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PackStrip(dt, dst, src, rows, cols, cols); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
		})
	}
	b.Run("BFLOAT16_from_bf16", func(b *testing.B) {
		h := make([]uint16, len(src))
		for i, f := range src {
			h[i] = ckpt.F32ToBF16(f)
		}
		dst := make([]byte, StripBytes(BFLOAT16, cols))
		b.SetBytes(rows * cols * 2)
		for b.Loop() {
			if _, err := PackStripBF16(BFLOAT16, dst, h, rows, cols, cols); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
	})
	b.Run("BFLOAT8_B_from_bf16", func(b *testing.B) {
		h := make([]uint16, len(src))
		for i, f := range src {
			h[i] = ckpt.F32ToBF16(f)
		}
		dst := make([]byte, StripBytes(BFLOAT8_B, cols))
		b.SetBytes(rows * cols * 2)
		for b.Loop() {
			if _, err := PackStripBF16(BFLOAT8_B, dst, h, rows, cols, cols); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows*cols)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
	})
}

// Figures on the 2-core dev machine (AMD EPYC VM, Go 1.26, one goroutine,
// 32x5120 strip). Quiet machine, single runs: BFLOAT8_B ~338 Melem/s,
// BFLOAT4_B ~345, BFLOAT16 (rounding from f32) ~900, FLOAT32 ~2000,
// BFLOAT16 from bf16 ~1170, BFLOAT8_B from bf16 ~310. Under load average ~9
// from parallel work the medians of 7 runs were 115, 168, 286, 474, 405 and
// 120 Melem/s.

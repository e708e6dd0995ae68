package tile

import (
	"math/rand/v2"
	"testing"
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
}

// Figures on the 2-core dev machine (AMD EPYC VM, Go 1.26, one goroutine,
// 32x5120 strip). Quiet machine, single runs: BFLOAT8_B ~338 Melem/s,
// BFLOAT4_B ~345, BFLOAT16 (rounding from f32) ~900, FLOAT32 ~2000,
// BFLOAT16 from bf16 ~1170, BFLOAT8_B from bf16 ~310. Under load average ~9
// from parallel work the medians of 7 runs were 115, 168, 286, 474, 405 and
// 120 Melem/s.

// BenchmarkEncodeFP8Transposed measures encoding a strip of 32×5120 F8_E4M3
// codes (160 transposed tiles, a scale each) through the tables alone
// ("tables") and through EncodeFP8Transposed (the AVX2 kernel where the CPU
// has it); elements/s is reported as Melem/s. "weights" are codes of
// normally distributed values spread over the FP8 range, "subnormal" mostly
// subnormal codes (float32 subnormal operands in the kernel's products).
func BenchmarkEncodeFP8Transposed(b *testing.B) {
	const rows, cols = TileDim, 5120
	for _, data := range []struct {
		name string
		sd   float64
	}{{"weights", 64}, {"subnormal", 0.004}} {
		rng := rand.New(rand.NewPCG(3, 3))
		r := newFP8Run(cols/TileDim, 0, func(q, k, i int) byte {
			return fp8NotNaN(fp8Weight(rng, data.sd))
		}, func(int) float32 { return fp8LogUniformScale(rng, -12, -4) })
		for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B} {
			dst := make([]byte, r.n*dt.TileBytes())
			for _, route := range []struct {
				name string
				f    func(DType, []byte, []byte, int, []float32, int)
			}{{"tables", encodeFP8TransposedGo}, {"kernel", EncodeFP8Transposed}} {
				b.Run(data.name+"/"+dt.String()+"/"+route.name, func(b *testing.B) {
					b.SetBytes(rows * cols)
					for b.Loop() {
						route.f(dt, dst, r.src, r.stride, r.scales, r.n)
					}
					s := b.Elapsed().Seconds()
					b.ReportMetric(float64(rows*cols)*float64(b.N)/s/1e6, "Melem/s")
					b.ReportMetric(s*1e9/(float64(rows*cols)*float64(b.N)), "ns/elem")
				})
			}
		}
	}
}

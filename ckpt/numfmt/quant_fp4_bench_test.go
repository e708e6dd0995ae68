package numfmt

import "testing"

// BenchmarkFP4Requant: the per-block re-quantisation checks of diff's
// requant_identical for MXFP4 (both recipes) and NVFP4, on values that
// re-quantise exactly (the common case of a requant_identical diff).
func BenchmarkFP4Requant(b *testing.B) {
	const g = 4096
	rng := xorshift(9)
	w := make([]float32, g*MXFP4BlockSize)
	for i := range w {
		w[i] = rng.sym() / 64
	}
	blocks, scales := make([]byte, g*MXFP4BlockBytes), make([]byte, g)
	if err := QuantizeMXFP4(MXFP4OCP, w, blocks, scales); err != nil {
		b.Fatal(err)
	}
	vals := make([]float32, len(w))
	_ = DequantMXFP4(vals, blocks, scales)
	b.Run("mxfp4", func(b *testing.B) {
		b.SetBytes(int64(len(vals)) * 2) // per bf16 byte of the wider side
		for b.Loop() {
			for i := range g {
				for _, r := range MXFP4Recipes {
					r.MXFP4Requant(vals[i*32:], blocks[i*16:], scales[i])
				}
			}
		}
	})
	packed, nsc := make([]byte, len(w)/2), make([]byte, len(w)/16)
	global, _ := QuantizeNVFP4(w, packed, nsc)
	_ = DequantNVFP4(vals, packed, nsc, global, 1, len(w))
	b.Run("nvfp4", func(b *testing.B) {
		b.SetBytes(int64(len(vals)) * 2)
		for b.Loop() {
			for i := range nsc {
				NVFP4Requant(vals[i*16:], packed[i*8:], nsc[i], global)
			}
		}
	})
}

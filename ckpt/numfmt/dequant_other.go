//go:build !amd64 || purego

package numfmt

// decodeE4M3Scaled sets dst[i] = t[codes[i]]·s, t being the F8_E4M3
// value table; len(codes) >= len(dst).
func decodeE4M3Scaled(t *[256]float32, codes []byte, dst []float32, s float32) {
	decodeE4M3Go(t, codes, dst, s)
}

// dequantE4M3Kernel says whether dequantE4M3 has a kernel for out: not
// here.
func dequantE4M3Kernel(DType) bool { return false }

// dequantE4M3 is DequantE4M3 for out BF16, F16 or F32.
func dequantE4M3(dst []byte, codes []byte, s float32, out DType, db int) bool {
	return dequantE4M3Go(dst, codes, s, out, db)
}

//go:build !amd64 || purego

package numfmt

// decodeE4M3Scaled sets dst[i] = t[codes[i]]·s, t being the F8_E4M3
// value table; len(codes) >= len(dst).
func decodeE4M3Scaled(t *[256]float32, codes []byte, dst []float32, s float32) {
	decodeE4M3Go(t, codes, dst, s)
}

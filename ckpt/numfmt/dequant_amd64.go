//go:build amd64 && !purego

package numfmt

import "golang.org/x/sys/cpu"

// useAVX2 says whether the AVX2 kernels of this package run on this CPU.
var useAVX2 = cpu.X86.HasAVX2

// decodeE4M3Scaled sets dst[i] = t[codes[i]]·s, t being the F8_E4M3
// value table; len(codes) >= len(dst). With AVX2 and |s| < 2^24 the
// multiples of 32 go through decodeE4M3AVX2 (the same float32 products:
// TestDecodeE4M3Scaled), NaN codes and the tail through the Go loop.
func decodeE4M3Scaled(t *[256]float32, codes []byte, dst []float32, s float32) {
	n := len(dst) &^ 31
	if !useAVX2 || n == 0 || !(s < 0x1p24 && s > -0x1p24) {
		decodeE4M3Go(t, codes, dst, s)
		return
	}
	_ = codes[n-1]
	if decodeE4M3AVX2(&dst[0], &codes[0], n, s*0x1p104) {
		for i, c := range codes[:n] {
			if c&0x7f == 0x7f {
				dst[i] = t[c] * s
			}
		}
	}
	decodeE4M3Go(t, codes[n:], dst[n:], s)
}

// decodeE4M3AVX2 sets dst[i] = e4m3(src[i])·2^-104·s2 for i < n (a
// positive multiple of 32) and reports whether a code was NaN (its value
// is then wrong).
//
//go:noescape
func decodeE4M3AVX2(dst *float32, src *byte, n int, s2 float32) (nan bool)

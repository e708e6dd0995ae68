//go:build amd64 && !purego

package numfmt

//go:generate go run -C _asm . -out ../dequant_amd64.s

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

// hasF16C: the CPU converts float32 to half (VCVTPS2PH).
var hasF16C = cpu.X86.HasF16C

// dequantE4M3Kernel says whether dequantE4M3 has an AVX2 kernel for out.
func dequantE4M3Kernel(out DType) bool {
	return useAVX2 && (out == BF16 || out == F32 || out == F16 && hasF16C)
}

// dequantE4M3 is DequantE4M3 for out BF16, F16 or F32 of db bytes
// (len(dst) >= len(codes)·db): with a kernel and |s| < 2^24 the multiples of 32
// go through it (the same float32 products as decodeE4M3AVX2, rounded as
// F32ToBF16 and F32ToF16 do: TestDequantE4M3), NaN codes and the tail
// through the Go loop.
func dequantE4M3(dst []byte, codes []byte, s float32, out DType, db int) (nan bool) {
	n := len(codes) &^ 31
	if n == 0 || !dequantE4M3Kernel(out) || !(s < 0x1p24 && s > -0x1p24) {
		return dequantE4M3Go(dst, codes, s, out, db)
	}
	_ = dst[n*db-1]
	switch out {
	case BF16:
		nan = dequantE4M3BF16AVX2(&dst[0], &codes[0], n, s*0x1p104)
	case F16:
		nan = dequantE4M3F16AVX2(&dst[0], &codes[0], n, s*0x1p104)
	default:
		nan = dequantE4M3F32AVX2(&dst[0], &codes[0], n, s*0x1p104)
	}
	if nan {
		for i, c := range codes[:n] {
			if c&0x7f == 0x7f {
				putScaled(dst[i*db:], c, s, out)
			}
		}
	}
	return dequantE4M3Go(dst[n*db:], codes[n:], s, out, db) || nan
}

// dequantE4M3BF16AVX2 sets the bfloat16 bits (nearest even, little-endian)
// of e4m3(src[i])·2^-104·s2 at dst[2i:] for i < n (a positive multiple of
// 32) and reports whether a code was NaN (its value is then wrong).
//
//go:noescape
func dequantE4M3BF16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)

// dequantE4M3F16AVX2 is dequantE4M3BF16AVX2 with IEEE half output (F16C).
//
//go:noescape
func dequantE4M3F16AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)

// dequantE4M3F32AVX2 is decodeE4M3AVX2 writing the float32 bits
// little-endian at dst[4i:].
//
//go:noescape
func dequantE4M3F32AVX2(dst *byte, src *byte, n int, s2 float32) (nan bool)

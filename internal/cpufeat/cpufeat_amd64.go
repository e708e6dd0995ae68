//go:build amd64 && !purego

package cpufeat

// AVX2 reports whether the CPU and the OS support AVX2 (the CPUID bits of
// AVX and AVX2, and the YMM state enabled in XCR0).
func AVX2() bool { return avx2 }

var avx2 = hasAVX2()

func hasAVX2() bool

//go:build amd64 && !purego

package cpufeat

// AVX2 reports whether the CPU and the OS support AVX2 (the CPUID bits of
// AVX and AVX2, and the YMM state enabled in XCR0).
func AVX2() bool { return avx2 }

// FMA reports whether the CPU has FMA3 (the OS support for the YMM state
// is AVX2's check).
func FMA() bool { return fma }

var (
	avx2 = hasAVX2()
	fma  = hasFMA()
)

func hasAVX2() bool

func hasFMA() bool

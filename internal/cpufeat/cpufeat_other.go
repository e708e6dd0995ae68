//go:build !amd64 || purego

package cpufeat

// AVX2 reports whether the CPU and the OS support AVX2: never off amd64
// or in a purego build.
func AVX2() bool { return false }

// FMA reports whether the CPU has FMA3: never off amd64 or in a purego
// build.
func FMA() bool { return false }

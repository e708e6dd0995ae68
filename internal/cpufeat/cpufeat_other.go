//go:build !amd64 || purego

package cpufeat

// AVX2 reports whether the CPU and the OS support AVX2: never off amd64
// or in a purego build.
func AVX2() bool { return false }

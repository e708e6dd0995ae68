//go:build amd64 && !purego

package verify

import "golang.org/x/sys/cpu"

var scanAVX2 = cpu.X86.HasAVX2

// cleanGroup is the group scanE4M3 resolves byte by byte after a clean
// prefix: cleanE4M3AVX2 tests 128 bytes at a time.
const cleanGroup = 128

// cleanE4M3 returns the length of a prefix of p without an F8_E4M3 NaN
// code: AVX2 over whole 128-byte groups, then cleanE4M3Go over 32-byte
// groups (TestCleanE4M3).
func cleanE4M3(p []byte) int {
	i := 0
	if n := len(p) &^ 127; scanAVX2 && n > 0 {
		i = cleanE4M3AVX2(&p[0], n)
		if i < n {
			return i
		}
	}
	return i + cleanE4M3Go(p[i:])
}

// cleanE4M3AVX2 returns the length of the longest prefix of whole 128-byte
// groups of the n bytes at p (n a positive multiple of 128) without a NaN
// code.
//
//go:noescape
func cleanE4M3AVX2(p *byte, n int) int

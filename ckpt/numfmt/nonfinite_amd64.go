//go:build amd64 && !purego

package numfmt

//go:generate go run -C _asm . -out ../nonfinite_amd64.s

// cleanGroup is the group ScanNonFinite resolves element by element after
// a clean prefix: cleanE4M3AVX2 tests 128 bytes at a time.
const cleanGroup = 128

// cleanPrefix returns the length of a prefix of p without a NaN or Inf of
// l: for F8_E4M3 with AVX2 over whole 128-byte groups, then cleanPrefixGo
// over 32-byte groups (TestCleanPrefix).
func cleanPrefix(l *lanes, p []byte) int {
	i := 0
	if n := len(p) &^ 127; useAVX2 && n > 0 && l == e4m3Lanes {
		i = cleanE4M3AVX2(&p[0], n)
		if i < n {
			return i
		}
	}
	return i + cleanPrefixGo(l, p[i:])
}

// cleanE4M3AVX2 returns the length of the longest prefix of whole 128-byte
// groups of the n bytes at p (n a positive multiple of 128) without an
// F8_E4M3 NaN code.
//
//go:noescape
func cleanE4M3AVX2(p *byte, n int) int

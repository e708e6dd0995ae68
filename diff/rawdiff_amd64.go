//go:build amd64 && !purego

package diff

//go:generate go run -C _asm . -out ../rawdiff_amd64.s

// countRawDiff is countRawDiffGo: with AVX-512 (useAVX512) the multiples
// of 64 bytes go through rawSameAVX512, the tail through the Go loop
// (TestCountRawDiff).
func countRawDiff(a, b []byte, esize int) int64 {
	return countRawDiffWith(useAVX512, a, b, esize)
}

// countRawDiffWith is countRawDiff, with the kernel only when kernel is
// set (and this CPU runs it).
func countRawDiffWith(kernel bool, a, b []byte, esize int) int64 {
	b = b[:len(a)]
	n := len(a) &^ 63
	if !kernel || !useAVX512 || n == 0 || (esize != 1 && esize != 2 && esize != 4 && esize != 8) {
		return countRawDiffGo(a, b, esize)
	}
	d := int64(n/esize - rawSameAVX512(&a[0], &b[0], n, esize))
	return d + countRawDiffGo(a[n:], b[n:], esize)
}

// rawSameAVX512 counts the equal elements of esize bytes (1, 2, 4 or 8)
// over the n bytes at a and b (n a positive multiple of 64).
//
//go:noescape
func rawSameAVX512(a, b *byte, n int, esize int) int

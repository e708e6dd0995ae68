//go:build amd64 && !purego

package diff

//go:generate go run -C _asm . -out ../rawdiff_amd64.s

// countRawDiff is countRawDiffGo: with AVX-512 (useAVX512) the multiples
// of 64 bytes go through rawSameAVX512, else with AVX2 the multiples of 32
// through rawSameAVX2, the tail through the Go loop (TestCountRawDiff).
func countRawDiff(a, b []byte, esize int) int64 {
	return countRawDiffWith(true, a, b, esize)
}

// countRawDiffWith is countRawDiff, with a kernel only when kernel is set
// (and this CPU runs one).
func countRawDiffWith(kernel bool, a, b []byte, esize int) int64 {
	b = b[:len(a)]
	if !kernel || (esize != 1 && esize != 2 && esize != 4 && esize != 8) {
		return countRawDiffGo(a, b, esize)
	}
	var n, same int
	switch {
	case useAVX512 && len(a) >= 64:
		n = len(a) &^ 63
		same = rawSameAVX512(&a[0], &b[0], n, esize)
	case useFMA && len(a) >= 32:
		n = len(a) &^ 31
		same = rawSameAVX2(&a[0], &b[0], n, esize)
	}
	return int64(n/esize-same) + countRawDiffGo(a[n:], b[n:], esize)
}

// rawSameAVX512 counts the equal elements of esize bytes (1, 2, 4 or 8)
// over the n bytes at a and b (n a positive multiple of 64).
//
//go:noescape
func rawSameAVX512(a, b *byte, n int, esize int) int

// rawSameAVX2 is rawSameAVX512 for n a positive multiple of 32, in 256-bit
// vectors (AVX2: useFMA).
//
//go:noescape
func rawSameAVX2(a, b *byte, n int, esize int) int

//go:build amd64 && !purego

package diff

//go:generate go run -C _asm . -out ../fp8eq_amd64.s

// countFP8Block is the number of elements countFP8SSE2 takes at most in
// one call (255 blocks of 16: its per-byte counters must not wrap).
const countFP8Block = 255 * 16

// countFP8Values counts, over the longest prefix of a that is a multiple
// of 16 elements, the elements countFP8Diff (scales not the same) calls
// changed and the ±0 sign flips; it returns the prefix length. SSE2
// (part of every amd64 CPU), no branch per element: the code tests are
// byte compares, the value tests float compares packed down to bytes
// (TestCountFP8Values compares it with the Go loop).
func countFP8Values(nanAbove byte, a, b []byte, bF, fF []float32) (done int, changed, zeroSign int64) {
	n := len(a) &^ 15
	if n == 0 {
		return 0, 0, 0
	}
	_, _, _ = b[n-1], bF[n-1], fF[n-1]
	for i := 0; i < n; i += countFP8Block {
		m := min(n-i, countFP8Block)
		kept, zs := countFP8SSE2(&a[i], &b[i], &bF[i], &fF[i], m, nanAbove)
		changed += int64(m - kept)
		zeroSign += int64(zs)
	}
	return n, changed, zeroSign
}

// countFP8SSE2 counts over n elements (a multiple of 16, at most
// countFP8Block) the elements with the same canonical code and the same
// value (kept) and the ±0 sign flips; a code is NaN when its low seven
// bits exceed nanAbove.
//
//go:noescape
func countFP8SSE2(a, b *byte, bF, fF *float32, n int, nanAbove byte) (kept, zeroSign int)

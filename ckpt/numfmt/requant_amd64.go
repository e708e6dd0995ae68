//go:build amd64 && !purego

package numfmt

//go:generate go run -C _asm . -out ../requant_amd64.s

// requantChunk is the most elements one requantAVX2 call takes (its
// per-lane dword counters and their sum must not wrap).
const requantChunk = 1 << 30

// absMax returns the largest |x| of w, ignoring NaN; 0 for none. With
// AVX2 the multiples of 32 go through absMaxAVX2, the tail through the Go
// loop (TestAbsMax).
func AbsMax(w []float32) float32 {
	n := len(w) &^ 31
	if !useAVX2 || n == 0 {
		return absMaxGo(w)
	}
	m := absMaxAVX2(&w[0], n)
	if t := absMaxGo(w[n:]); t > m {
		m = t
	}
	return m
}

// requantDivMismatches counts the i whose code EncodeE4M3(w[i]/s) decodes
// to another value than codes[i] (cnt) or differs from it only in the
// sign of zero (zeroSign); len(codes) >= len(w). With AVX2 the multiples
// of 8 go through requantAVX2, which has no branch per element
// (TestRequantCodes, TestEncodeE4M3AVX2), the tail through the Go loop.
func requantDivMismatches(w []float32, codes []byte, s float32) (cnt, zeroSign int64) {
	return requantMismatches(w, codes, s, false)
}

// requantMulMismatches is requantDivMismatches for the codes
// EncodeE4M3(w[i]·m) (recipes that multiply by 448/amax), through the
// same kernel.
func requantMulMismatches(w []float32, codes []byte, m float32) (cnt, zeroSign int64) {
	return requantMismatches(w, codes, m, true)
}

func requantMismatches(w []float32, codes []byte, s float32, mul bool) (cnt, zeroSign int64) {
	n := len(w) &^ 7
	if !useAVX2 || n == 0 {
		return requantMismatchesGo(w, codes, s, mul)
	}
	codes = codes[:len(w)]
	for i := 0; i < n; i += requantChunk {
		m := min(n-i, requantChunk)
		same, zs := requantAVX2(&w[i], &codes[i], m, s, mul)
		cnt += int64(m - same)
		zeroSign += int64(zs)
	}
	c, zs := requantMismatchesGo(w[n:], codes[n:], s, mul)
	return cnt + c, zeroSign + zs
}

// absMaxAVX2 returns the largest |w[i]| for i < n (a positive multiple of
// 32), ignoring NaN; 0 for none.
//
//go:noescape
func absMaxAVX2(w *float32, n int) float32

// requantAVX2 counts over i < n (a positive multiple of 8, at most
// requantChunk) the codes EncodeE4M3(w[i]/s) (EncodeE4M3(w[i]·s) when
// mul) that decode to the value of codes[i] (same) and those that differ
// from it only in the sign of zero.
//
//go:noescape
func requantAVX2(w *float32, codes *byte, n int, s float32, mul bool) (same, zeroSign int)

// encodeE4M3AVX2 sets dst[i] = EncodeE4M3(src[i]/s) (src[i]·s when mul)
// for i < n (a positive multiple of 8) with requantAVX2's encoding; only
// its test calls it.
//
//go:noescape
func encodeE4M3AVX2(dst *uint32, src *float32, n int, s float32, mul bool)

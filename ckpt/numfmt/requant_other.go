//go:build !amd64 || purego

package numfmt

// absMax returns the largest |x| of w, ignoring NaN; 0 for none.
func AbsMax(w []float32) float32 { return absMaxGo(w) }

// requantDivMismatches counts the i whose code EncodeE4M3(w[i]/s) decodes
// to another value than codes[i] (cnt) or differs from it only in the
// sign of zero (zeroSign); len(codes) >= len(w).
func requantDivMismatches(w []float32, codes []byte, s float32) (cnt, zeroSign int64) {
	return requantMismatchesGo(w, codes, s, false)
}

// requantMulMismatches is requantDivMismatches for the codes
// EncodeE4M3(w[i]·m) (recipes that multiply by 448/amax).
func requantMulMismatches(w []float32, codes []byte, m float32) (cnt, zeroSign int64) {
	return requantMismatchesGo(w, codes, m, true)
}

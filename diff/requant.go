package diff

import "github.com/ckpt-dev/ckpt/ckpt/numfmt"

// requantBlock applies the quantisation recipe of the command contract to
// one block of wide-side values w and compares the result with the FP8
// side's codes and its stored scale for block (bi, bj): it returns how many
// codes differ and whether the scale differs. s = float32(amax) / 448
// rounded to the scale dtype; each code = e4m3(w / s) in float32 (zero
// when s is zero) — the recipe of ckpt.QuantizeBlockFP8. Codes and scales
// are compared by decoded value (numfmt.SameE4M3): zeroSign counts the codes
// that differ only in the sign of zero, which are not mismatches.
func requantBlock(q *side, w []float32, codes []byte, bi, bj int64) (cnt, zeroSign int64, scaleDiffers bool) {
	s := numfmt.ScaleFor(numfmt.AbsMax(w), q.scaleDType)
	scaleDiffers = !sameValue(s, q.scale[bi*q.sCols+bj])
	codes = codes[:len(w)]
	if s == 0 {
		for _, c := range codes {
			if c != 0 {
				if c == 0x80 {
					zeroSign++
				} else {
					cnt++
				}
			}
		}
		return cnt, zeroSign, scaleDiffers
	}
	cnt, zeroSign = numfmt.RequantMismatches(w, codes, s)
	return cnt, zeroSign, scaleDiffers
}

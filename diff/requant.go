package diff

import (
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// requantBlock applies the quantisation recipe of the command contract to
// one block of wide-side values w and compares the result with the FP8
// side's codes and its stored scale for block (bi, bj): it returns how many
// codes differ and whether the scale differs. s = float32(amax) / 448
// rounded to the scale dtype; each code = e4m3(w / s) in float32 (zero
// when s is zero) — the recipe of ckpt.QuantizeBlockFP8. Codes and scales
// are compared by decoded value (see sameCode): zeroSign counts the codes
// that differ only in the sign of zero, which are not mismatches.
func requantBlock(q *side, w []float32, codes []byte, bi, bj int64) (cnt, zeroSign int64, scaleDiffers bool) {
	s := numfmt.ScaleFor(absMax(w), q.scaleDType)
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
	cnt, zeroSign = requantCodes(w, codes, s)
	return cnt, zeroSign, scaleDiffers
}

// absMaxGo returns the largest |x| of w, ignoring NaN; 0 for none. It is
// absMax's loop for the tail and off amd64, and its test's reference.
func absMaxGo(w []float32) float32 {
	var amax float32
	for _, x := range w {
		x = float32(math.Abs(float64(x)))
		if x > amax {
			amax = x
		}
	}
	return amax
}

// requantCodesGo counts the i whose code ckpt.EncodeE4M3(w[i]/s) decodes
// to another value than codes[i] (cnt) or differs from it only in the
// sign of zero (zeroSign); len(codes) >= len(w). It is requantCodes'
// loop for the tail and off amd64, and its test's reference.
func requantCodesGo(w []float32, codes []byte, s float32) (cnt, zeroSign int64) {
	codes = codes[:len(w)]
	for i, x := range w {
		if c := ckpt.EncodeE4M3(x / s); c != codes[i] {
			if same, zs := sameCode(c, codes[i]); !same {
				cnt++
			} else if zs {
				zeroSign++
			}
		}
	}
	return cnt, zeroSign
}

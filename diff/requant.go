package diff

import (
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// encodeE4M3 rounds f to an F8_E4M3 code exactly as ckpt.EncodeE4M3 does
// (nearest even, saturating to ±448, NaN → 0x7f or 0xff by its sign), with integer arithmetic
// on the normal range instead of branches per rounding case. A test checks
// the two agree on every float32 of the ranges that matter.
func encodeE4M3(f float32) byte {
	u := math.Float32bits(f)
	sign := byte(u>>24) & 0x80
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return sign | 0x7f
	case a >= 0x43e00000: // ≥ 448
		return sign | 0x7e
	case a < 0x3c800000: // < 2^-6: subnormal codes, quantum 2^-9
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(a))*512))
	}
	// Round the 23-bit mantissa to 3 bits, nearest even; a carry moves
	// into the exponent. Then rebias the exponent from 127 to 7.
	r := (a + 0x7ffff + (a>>20)&1) >> 20
	return sign | byte(r-120<<3)
}

// requantBlock applies the quantisation recipe of the command contract to
// one block of wide-side values w and compares the result with the FP8
// side's codes and its stored scale for block (bi, bj): it returns how many
// codes differ and whether the scale differs. s = float32(amax) / 448
// rounded to the scale dtype; each code = e4m3(w / s) in float32 (zero
// when s is zero) — the recipe of ckpt.QuantizeBlockFP8. Codes and scales
// are compared by decoded value (see sameCode): zeroSign counts the codes
// that differ only in the sign of zero, which are not mismatches.
func requantBlock(q *side, w []float32, codes []byte, bi, bj int64) (cnt, zeroSign int64, scaleDiffers bool) {
	var amax float32
	for _, x := range w {
		x = float32(math.Abs(float64(x)))
		if x > amax {
			amax = x
		}
	}
	s := ckpt.RoundTo(q.scaleDType, amax/ckpt.E4M3MaxFinite)
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
	for i, x := range w {
		if c := encodeE4M3(x / s); c != codes[i] {
			if same, zs := sameCode(c, codes[i]); !same {
				cnt++
			} else if zs {
				zeroSign++
			}
		}
	}
	return cnt, zeroSign, scaleDiffers
}

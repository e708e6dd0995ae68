package numfmt

import "math"

// absMaxGo returns the largest |x| of w, ignoring NaN; 0 for none. It is
// AbsMax's loop for the tail and off amd64, and its test's reference.
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

// requantMismatchesGo counts the i whose code EncodeE4M3(w[i]/s)
// (EncodeE4M3(w[i]·s) when mul) decodes to another value than codes[i]
// (cnt) or differs from it only in the sign of zero (zeroSign);
// len(codes) >= len(w). It is requantDivMismatches' and
// requantMulMismatches' loop for the tail and off amd64, and their test's
// reference.
func requantMismatchesGo(w []float32, codes []byte, s float32, mul bool) (cnt, zeroSign int64) {
	codes = codes[:len(w)]
	for i, x := range w {
		if mul {
			x *= s
		} else {
			x /= s
		}
		if c := EncodeE4M3(x); c != codes[i] {
			if same, zs := SameE4M3(c, codes[i]); !same {
				cnt++
			} else if zs {
				zeroSign++
			}
		}
	}
	return cnt, zeroSign
}

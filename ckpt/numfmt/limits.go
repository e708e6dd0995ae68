package numfmt

import "math"

// MaxFinite is the largest finite value of a float dtype (0 for others).
func MaxFinite(dt DType) float64 {
	switch dt {
	case F8E4M3:
		return E4M3MaxFinite
	case F8E5M2:
		return 57344
	case F8E8M0:
		return math.Ldexp(1, 127)
	case F16:
		return 65504
	case BF16:
		return float64(math.Float32frombits(0x7f7f0000))
	case F32:
		return math.MaxFloat32
	case F64:
		return math.MaxFloat64
	}
	return 0
}

// MayOverflow reports whether converting finite values of src to dst can
// give an infinity: dst's largest finite value is below src's.
func MayOverflow(src, dst DType) bool { return MaxFinite(dst) < MaxFinite(src) }

// FiniteIn reports whether x, rounded to dt (BF16, F16 or F32) as
// EncodeFloat32 does, is finite.
func FiniteIn(dt DType, x float32) bool {
	a := math.Float32bits(x) & 0x7fffffff
	switch dt {
	case BF16:
		return a < 0x7f7f8000 // from here on the rounding reaches 0x7f80 (Inf)
	case F16:
		return a < 0x477ff000 // rounds to >= 65536
	}
	return a < 0x7f800000
}

// CountNotFinite counts the values of vals that are not finite once
// rounded to dt (BF16, F16 or F32), NaN and Inf included.
func CountNotFinite(dt DType, vals []float32) int64 {
	var n int64
	for _, x := range vals {
		if !FiniteIn(dt, x) {
			n++
		}
	}
	return n
}

package tile

import "math"

// F32ToBF16 rounds f to bfloat16 bits, round to nearest with ties to even
// (the rounding of torch's .to(torch.bfloat16)). NaNs stay NaN (quiet, with
// the sign kept); infinities and overflow to infinity behave as in IEEE.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 widens bfloat16 bits to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

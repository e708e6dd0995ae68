package tile

import "math"

// NaNBF16 is the one NaN tt-metal's host conversion produces: positive,
// quiet, no payload.
const NaNBF16 = 0x7FC0

// F32ToBF16 rounds f to bfloat16 bits as tt-metal's host conversion does
// (tt_metal/impl/data_format/bfloat16.cpp@0266e6f1,
// fp32_to_bf16_bits_round_to_nearest_even), which is also the rounding of
// torch's .to(torch.bfloat16) (c10::BFloat16 round_to_nearest_even): round
// to nearest with ties to even, and every NaN, whatever its sign and
// payload, becomes NaNBF16 (0x7FC0). Infinities and overflow to infinity
// behave as in IEEE. (Extraction to safetensors keeps NaN sign and payload:
// ckpt.F32ToBF16.)
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return NaNBF16
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 widens bfloat16 bits to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

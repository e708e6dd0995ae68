package numfmt

import "math"

// E2M1 (FP4) is the 4-bit float of the OCP Microscaling formats: one sign
// bit, two exponent bits (bias 1), one mantissa bit, no infinities and no
// NaN. Its 16 codes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives
// (code|8). The table of gpt-oss and transformers lists the same values
// (openai/gpt-oss:gpt_oss/torch/weights.py@7a9ea75 FP4_VALUES;
// huggingface/transformers:src/transformers/integrations/mxfp4.py@93a1c40
// FP4_VALUES; ml_dtypes' float4_e2m1fn).
//
// Packed E2M1 holds two codes per byte, the element with the lower index
// in the low nibble: byte i holds element 2i in bits 0-3 and element 2i+1
// in bits 4-7. This is the order of gpt-oss's MXFP4 loader (low nibble
// first, then high; weights.py@7a9ea75 _get_mxfp4_tensor), of
// transformers' convert_moe_packed_tensors (mxfp4.py@93a1c40: out[:, 0::2]
// from blk & 0x0F, out[:, 1::2] from blk >> 4) and of vLLM's NVFP4
// reference (vllm-project/vllm:vllm/model_executor/layers/quantization/
// utils/nvfp4_emulation_utils.py@6110ea2 break_fp4_bytes).

// e2m1MaxFinite is the largest E2M1 magnitude.
const e2m1MaxFinite = 6

// e2m1Magnitudes are the values of the codes 0..7 (sign bit clear).
var e2m1Magnitudes = [8]float32{0, 0.5, 1, 1.5, 2, 3, 4, 6}

// E2M1ToFloat32 returns the value of the E2M1 code in the low four bits of
// c (the high bits are ignored). Code 8 is -0.
func E2M1ToFloat32(c byte) float32 {
	v := e2m1Magnitudes[c&7]
	if c&8 != 0 {
		return -v
	}
	return v
}

// e2m1Pair returns the two values of a packed E2M1 byte: lo is the element
// with the lower index (bits 0-3), hi the next one (bits 4-7).
func e2m1Pair(b byte) (lo, hi float32) {
	return E2M1ToFloat32(b), E2M1ToFloat32(b >> 4)
}

// UnpackE2M1 decodes packed E2M1 bytes into dst, two values per byte in
// element order (low nibble first). It decodes min(len(dst)/2, len(src))
// bytes and returns the number of values written.
func UnpackE2M1(dst []float32, src []byte) int {
	n := min(len(dst)/2, len(src))
	for i, b := range src[:n] {
		dst[2*i], dst[2*i+1] = e2m1Pair(b)
	}
	return 2 * n
}

// EncodeE2M1 rounds x to the nearest E2M1 value, ties to the even code,
// saturating to ±6 (infinities included), and returns its code; the sign
// bit is x's, so -0 and negative values that round to zero give code 8
// (-0), and NaN gives 7 (6, as ModelOpt's _cast_fp4, for which NaN is
// not negative and lies above every bound).
// The ties are 0.25 → 0, 0.75 → 1, 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4
// and 5 → 4: those of ModelOpt's _cast_fp4 (the bounds 0.25, 0.75, 1.25,
// 1.75, 2.5, 3.5, 5, rounded up at 0.75, 1.75 and 3.5; NVIDIA/
// TensorRT-Model-Optimizer:modelopt/torch/quantization/qtensor/
// nvfp4_tensor.py@0ad6e5f) and of round-to-nearest-even on the bits
// (triton-lang/triton:python/triton_kernels/triton_kernels/
// numerics_details/mxfp_details/_downcast_to_mxfp.py@0616e64 "RTNE").
func EncodeE2M1(x float32) byte {
	u := math.Float32bits(x)
	a := u & 0x7fffffff
	if a > 0x7f800000 { // NaN
		return 7
	}
	// The code is the number of rounding bounds below |x|: above 0.25,
	// 1.25, 2.5 and 5 (ties go down, to the even code), from 0.75, 1.75
	// and 3.5 on (ties go up), compared on the bits (monotonic for
	// non-negative floats; infinity counts all seven).
	c := b2u(a > 0x3e800000) + b2u(a >= 0x3f400000) + b2u(a > 0x3fa00000) + b2u(a >= 0x3fe00000) +
		b2u(a > 0x40200000) + b2u(a >= 0x40600000) + b2u(a > 0x40a00000)
	return byte(u>>28)&8 | c
}

// b2u is 1 for true.
func b2u(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// sameE2M1 reports whether two E2M1 codes (low four bits) have the same
// value, and whether they differ only in the sign of zero.
func sameE2M1(x, y byte) (same, zeroSign bool) {
	x, y = x&15, y&15
	if x == y {
		return true, false
	}
	if x&7 == 0 && y&7 == 0 {
		return true, true
	}
	return false, false
}

package numfmt

import (
	"fmt"
	"math"
)

// The FP4 quantisation recipes. Unlike block FP8 (scaleFor), MXFP4 and
// NVFP4 have no one recipe that every tool follows, so each recipe here
// is named after its upstream source and reproduces its arithmetic in
// float32. They quantise float32 values (a bf16 or f16 value widened
// exactly); ties between E2M1 codes go to the even code (EncodeE2M1).
//
// MXFP4 (one E8M0 exponent per 32 values):
//   - MXFP4OCP, "ocp-floor": the OCP Microscaling Formats v1.0 spec,
//     section 6.3 (https://www.opencompute.org/documents/
//     ocp-microscaling-formats-mx-v1-0-spec-final-pdf): the shared
//     exponent is floor(log2(amax)) - emax_elem with emax_elem = 2 for
//     E2M1, clamped to [-127, 127]; the values are multiplied by 2^-X and
//     rounded to E2M1, saturating at ±6. As torchao implements it
//     (pytorch/ao:torchao/prototype/mx_formats/mx_tensor.py@050515e to_mx,
//     ScaleCalculationMode.FLOOR: the exponent field of float32(amax)
//     minus 127 minus 2, clamped at -127; a NaN or Inf amax gives the NaN
//     scale 0xFF; the values times the float32 reciprocal 2^(127-code)).
//     An all-zero block gets code 0 (2^-127).
//   - MXFP4Triton, "triton-round-up": triton_kernels' downcast_to_mxfp
//     with DequantScaleRoundingMode.ROUND_UP, the default
//     (triton-lang/triton:python/triton_kernels/triton_kernels/
//     numerics_details/mxfp_details/_downcast_to_mxfp.py@0616e64
//     _compute_quant_and_scale), which transformers' quantize_to_mxfp4
//     calls on bf16 weights (huggingface/transformers:src/transformers/
//     integrations/mxfp4.py@93a1c40): d = float32(amax) / 6, the scale is
//     2^ceil(log2 d) taken from d's bits ((bits + 0x7FFFFF) & 0x7F800000,
//     whose exponent field is the E8M0 code), the values are multiplied by
//     1/2^e (0 when the scale is 0) and rounded to nearest even on their
//     bits, which for values in [0.25, 0.5) ignores the two lowest
//     mantissa bits (the kernel shifts them out before its sticky bit).
//     A block with a NaN or an infinity gets the NaN scale 0xFF here, as
//     under ocp-floor (the kernel leaves it to the GPU's max).
//
// NVFP4 (one E4M3 scale per 16 values and one float32 global scale):
//   - "modelopt": NVIDIA ModelOpt's NVFP4QTensor (NVIDIA/
//     TensorRT-Model-Optimizer:modelopt/torch/quantization/qtensor/
//     nvfp4_tensor.py@0ad6e5f): weight_scale_2 = float32(amax(tensor)) /
//     2688 (get_weights_scaling_factor_2, 2688 = 6 × 448); each block's
//     weight_scale = amax(block) / (6 × weight_scale_2) in float32, 1.0
//     where that is 0, cast to float8_e4m3fn as torch does (nearest even;
//     above 464 the NaN code, not a saturation; get_weights_scaling_factor);
//     each code = _cast_fp4(w / (float32(weight_scale) × weight_scale_2))
//     (quantize). A NaN in a block makes its amax, and so its scale, NaN.

// MXFP4Recipe names an MXFP4 quantisation recipe (see above).
type MXFP4Recipe uint8

// The MXFP4 recipes, in the order diff tries them.
const (
	MXFP4OCP MXFP4Recipe = iota
	MXFP4Triton
)

// MXFP4Recipes lists the MXFP4 recipes.
var MXFP4Recipes = []MXFP4Recipe{MXFP4OCP, MXFP4Triton}

// String is the recipe's name: "ocp-floor" or "triton-round-up".
func (r MXFP4Recipe) String() string {
	switch r {
	case MXFP4OCP:
		return "ocp-floor"
	case MXFP4Triton:
		return "triton-round-up"
	}
	return fmt.Sprintf("MXFP4Recipe(%d)", uint8(r))
}

// NVFP4RecipeName is the name of the NVFP4 recipe (ModelOpt's).
const NVFP4RecipeName = "modelopt"

// BlockAmax returns the largest |w| of w and whether w holds a NaN or an
// infinity (which makes the block's scale NaN under every recipe here).
func BlockAmax(w []float32) (amax float32, nonFinite bool) {
	for _, x := range w {
		a := math.Float32bits(x) & 0x7fffffff
		if a >= 0x7f800000 {
			nonFinite = true
		}
		if f := math.Float32frombits(a); f > amax {
			amax = f
		}
	}
	return amax, nonFinite
}

// e8m0Reciprocal returns 2^(127-c) in float32, the reciprocal of the E8M0
// scale c (NaN for the NaN code): code 254 gives the subnormal 2^-127.
func e8m0Reciprocal(c byte) float32 {
	if c == e8m0NaN {
		return float32(math.NaN())
	}
	e := 254 - int(c) // biased exponent of 2^(127-c)
	if e == 0 {
		return math.Float32frombits(1 << 22)
	}
	return math.Float32frombits(uint32(e) << 23)
}

// mxfp4Scale returns the E8M0 code the recipe gives a block whose largest
// |w| is amax (nonFinite: the block holds a NaN or an infinity) and the
// factor its values are multiplied by before rounding to E2M1.
func (r MXFP4Recipe) mxfp4Scale(amax float32, nonFinite bool) (code byte, mul float32) {
	if nonFinite || amax != amax {
		return e8m0NaN, float32(math.NaN())
	}
	if r == MXFP4Triton {
		b := (math.Float32bits(amax/e2m1MaxFinite) + 0x007fffff) & 0x7f800000
		code = byte(b >> 23)
		if ds := math.Float32frombits(b); ds != 0 {
			mul = 1 / ds
		}
		return code, mul
	}
	e := int(math.Float32bits(amax)>>23&0xff) - 127 - 2 // floor(log2 amax) - emax(E2M1)
	e = max(e, -e8m0Bias)
	code = byte(e + e8m0Bias)
	return code, e8m0Reciprocal(code)
}

// encode rounds an already scaled value to E2M1 as the recipe does.
func (r MXFP4Recipe) encode(x float32) byte {
	if r == MXFP4Triton {
		if u := math.Float32bits(x); u>>23&0xff == 125 { // [0.25, 0.5): the kernel drops two bits
			x = math.Float32frombits(u &^ 3)
		}
	}
	return EncodeE2M1(x)
}

// QuantizeMXFP4 quantises len(scales) blocks of 32 values w with the
// recipe: scales receives their E8M0 codes, blocks their packed E2M1
// codes (16 bytes per block, low nibble first). It fails without writing
// when the lengths disagree.
func QuantizeMXFP4(r MXFP4Recipe, w []float32, blocks, scales []byte) error {
	g := len(scales)
	if len(w) != g*MXFP4BlockSize || len(blocks) != g*MXFP4BlockBytes {
		return fmt.Errorf("mxfp4: %d values and %d block bytes for %d scales, want %d and %d", len(w), len(blocks), g, g*MXFP4BlockSize, g*MXFP4BlockBytes)
	}
	for i := range scales {
		v := w[i*MXFP4BlockSize : (i+1)*MXFP4BlockSize]
		code, mul := r.mxfp4Scale(BlockAmax(v))
		scales[i] = code
		out := blocks[i*MXFP4BlockBytes : (i+1)*MXFP4BlockBytes]
		for j := range out {
			out[j] = r.encode(v[2*j]*mul) | r.encode(v[2*j+1]*mul)<<4
		}
	}
	return nil
}

// e2m1Lo and e2m1Hi bound, as float32 bits, the magnitudes that
// EncodeE2M1 rounds to each code 0..7: the even codes take their ties
// (closed intervals), the odd ones not.
var (
	e2m1Lo = [8]uint32{0, 0x3e800001, 0x3f400000, 0x3fa00001, 0x3fe00000, 0x40200001, 0x40600000, 0x40a00001}
	e2m1Hi = [8]uint32{0x3e800000, 0x3f3fffff, 0x3fa00000, 0x3fdfffff, 0x40200000, 0x405fffff, 0x40a00000, 0x7f800000}
)

// countPacked counts the elements of codes (two per byte, low nibble
// first, len(codes) = len(w)/2) whose E2M1 code of x (w[i] × f, or
// w[i] / f when div; triton: with the bits triton_kernels drops, see
// MXFP4Recipe.encode) has another value than the stored code (cnt) or
// differs from it only in the sign of zero (zeroSign). It is
// EncodeE2M1 and sameE2M1 without forming the code: x has the stored
// code's value iff its magnitude lies in that code's rounding interval
// and the signs agree or the code is a zero.
func countPacked(w []float32, codes []byte, f float32, div, triton bool) (cnt, zeroSign int64) {
	w = w[:2*len(codes)]
	for i, x := range w {
		if div {
			x /= f
		} else {
			x *= f
		}
		u := math.Float32bits(x)
		if triton && u>>23&0xff == 125 {
			u &^= 3
		}
		c := codes[i/2] >> (4 * (i & 1)) & 15
		m, a := c&7, u&0x7fffffff
		if a > 0x7f800000 { // NaN is code 7
			a, u = 0x7f800000, 0x7f800000
		}
		switch {
		case a < e2m1Lo[m] || a > e2m1Hi[m]:
			cnt++
		case byte(u>>28)&8 == c&8:
		case m == 0:
			zeroSign++
		default:
			cnt++
		}
	}
	return cnt, zeroSign
}

// MXFP4Requant re-quantises one block of 32 values w with the recipe and
// compares the result with a stored block: its 16 packed bytes codes and
// its E8M0 scale. It returns how many codes have another value (cnt),
// how many differ only in the sign of zero (zeroSign) and whether the
// scale differs. Codes are compared with the recipe's scale; when both
// the recipe's and the stored scale are NaN the codes are not compared
// (every value of such a block is NaN, whatever its codes).
func (r MXFP4Recipe) MXFP4Requant(w []float32, codes []byte, scale byte) (cnt, zeroSign int64, scaleDiffers bool) {
	w = w[:MXFP4BlockSize]
	code, mul := r.mxfp4Scale(BlockAmax(w))
	if code == e8m0NaN && scale == e8m0NaN {
		return 0, 0, false
	}
	cnt, zeroSign = countPacked(w, codes[:MXFP4BlockBytes], mul, false, r == MXFP4Triton)
	return cnt, zeroSign, code != scale
}

// NVFP4GlobalScale returns ModelOpt's weight_scale_2 for a tensor whose
// largest |w| is amax: float32(amax) / 2688.
func NVFP4GlobalScale(amax float32) float32 {
	return amax / (e2m1MaxFinite * E4M3MaxFinite)
}

// nvfp4BlockScale returns the F8_E4M3 code of ModelOpt's weight_scale for
// a block whose largest |w| is amax under the global scale global:
// amax / (6 × global) in float32, 1.0 when that is zero, cast as torch
// casts to float8_e4m3fn (nearest even; NaN, Inf and everything above
// 464, half-way to the absent 480, give the NaN code 0x7f).
func nvfp4BlockScale(amax, global float32) byte {
	s := amax / (e2m1MaxFinite * global)
	if s == 0 {
		s = 1
	}
	return encodeE4M3Torch(s)
}

// encodeE4M3Torch is torch's float32 → float8_e4m3fn cast: EncodeE4M3,
// except that magnitudes above 464 (which round to 480, not an E4M3FN
// value) and infinities become the NaN code of their sign instead of
// saturating (c10/util/Float8_e4m3fn.h fp8e4m3fn_from_fp32_value: NaN
// from 480 up, rounding to nearest even below).
func encodeE4M3Torch(f float32) byte {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x43e80000 { // > 464, Inf and NaN included
		return byte(u>>24)&0x80 | 0x7f
	}
	return EncodeE4M3(f)
}

// QuantizeNVFP4 quantises len(scales) blocks of 16 values w (a weight's
// values in row-major order, rows a multiple of 16 long) with ModelOpt's
// recipe: it returns weight_scale_2 (from the largest |w| of all of w),
// scales receives the F8_E4M3 codes of weight_scale and packed the E2M1
// codes (8 bytes per block, low nibble first). It fails without writing
// when the lengths disagree.
func QuantizeNVFP4(w []float32, packed, scales []byte) (float32, error) {
	g := len(scales)
	if len(w) != g*NVFP4BlockSize || len(packed) != g*NVFP4BlockSize/2 {
		return 0, fmt.Errorf("nvfp4: %d values and %d packed bytes for %d scales, want %d and %d", len(w), len(packed), g, g*NVFP4BlockSize, g*NVFP4BlockSize/2)
	}
	amax, nonFinite := BlockAmax(w)
	if nonFinite {
		amax = float32(math.NaN())
	}
	global := NVFP4GlobalScale(amax)
	for i := range scales {
		v := w[i*NVFP4BlockSize : (i+1)*NVFP4BlockSize]
		s := nvfp4Scale(v, global)
		scales[i] = s
		d := DecodeE4M3(s) * global
		out := packed[i*NVFP4BlockSize/2 : (i+1)*NVFP4BlockSize/2]
		for j := range out {
			out[j] = EncodeE2M1(v[2*j]/d) | EncodeE2M1(v[2*j+1]/d)<<4
		}
	}
	return global, nil
}

// nvfp4Scale is nvfp4BlockScale of the block v (NaN when v holds a NaN or
// an infinity).
func nvfp4Scale(v []float32, global float32) byte {
	amax, nonFinite := BlockAmax(v)
	if nonFinite {
		amax = float32(math.NaN())
	}
	return nvfp4BlockScale(amax, global)
}

// NVFP4Requant re-quantises one block of 16 values w with ModelOpt's
// recipe under the global scale global and compares the result with a
// stored block: its 8 packed bytes codes and its F8_E4M3 scale code. It
// returns how many codes have another value (cnt), how many differ only in
// the sign of zero (zeroSign) and whether the scale's value differs (two
// NaN scales are the same; their codes are not compared, every value of
// the block being NaN).
func NVFP4Requant(w []float32, codes []byte, scale byte, global float32) (cnt, zeroSign int64, scaleDiffers bool) {
	w = w[:NVFP4BlockSize]
	s := nvfp4Scale(w, global)
	same, _ := SameE4M3(s, scale)
	if same && s&0x7f == 0x7f {
		return 0, 0, false
	}
	d := DecodeE4M3(s) * global
	cnt, zeroSign = countPacked(w, codes[:NVFP4BlockSize/2], d, true, false)
	return cnt, zeroSign, !same
}

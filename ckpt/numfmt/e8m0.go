package numfmt

import "math"

// E8M0 (float8_e8m0fnu) is the scale format of the OCP Microscaling
// formats: eight exponent bits with bias 127, no sign, no mantissa, no zero
// and no infinity; code c is 2^(c-127) for c in 0..254 and 0xFF is NaN
// (LLVM/MLIR f8E8M0FNU, llvm/llvm-project commit 3f9cabae0029; NVIDIA's
// __nv_fp8_e8m0: "0xFF = 255 is reserved for NaN"; ml_dtypes'
// float8_e8m0fnu). gpt-oss and transformers apply an MXFP4 scale as
// ldexp(value, c-127) (openai/gpt-oss:gpt_oss/torch/weights.py@7a9ea75,
// huggingface/transformers:src/transformers/integrations/mxfp4.py@93a1c40).

// e8m0NaN is the one NaN code of E8M0.
const e8m0NaN = 0xFF

// e8m0Bias is the exponent bias of E8M0.
const e8m0Bias = 127

// E8M0ToFloat32 returns the value of the E8M0 code c: 2^(c-127), NaN for
// 0xFF. Every other code is exact in float32 (code 0, 2^-127, is a float32
// subnormal).
func E8M0ToFloat32(c byte) float32 {
	switch c {
	case e8m0NaN:
		return float32(math.NaN())
	case 0:
		return math.Float32frombits(1 << 22) // 2^-127
	}
	return math.Float32frombits(uint32(c) << 23)
}

// EncodeE8M0 returns the E8M0 code of f when f is a power of two
// 2^-127..2^127 (the scales the ue8m0 recipes make), else the NaN code
// 0xFF: E8M0 has no zero, sign, infinity or mantissa, and the recipes
// round to a power of two before they store.
func EncodeE8M0(f float32) byte {
	u := math.Float32bits(f)
	switch {
	case u == 1<<22: // 2^-127, a float32 subnormal
		return 0
	case u&0x807fffff == 0 && u>>23 >= 1 && u>>23 <= 254:
		return byte(u >> 23)
	}
	return e8m0NaN
}

// E8M0IsNaN reports whether c is the NaN code of E8M0.
func E8M0IsNaN(c byte) bool { return c == e8m0NaN }

// e8m0Exponent returns the power of two that the code c stands for
// (c - 127) and false for the NaN code.
func e8m0Exponent(c byte) (int, bool) {
	if c == e8m0NaN {
		return 0, false
	}
	return int(c) - e8m0Bias, true
}

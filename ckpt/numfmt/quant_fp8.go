package numfmt

import (
	"fmt"
	"math"
)

// The block-FP8 quantisation recipes. Every tool of the ecosystem takes a
// block's largest |w| (amax, in float32; NaN ignored here, see below) and
// makes one scale per block and one F8_E4M3 code per value, nearest even,
// saturating at ±448 (all of them clamp, or cannot exceed 448), but they
// differ in what they store and in the arithmetic of the division, so that
// a weight re-quantised with one recipe can differ from another's in the
// last bit of many scales. Each recipe here is named after its source and
// reproduces its float32 arithmetic (docs/formats.md "requant_identical,
// scheme by scheme" cites each):
//
//   - FP8Ckpt, "ckpt": the command contract's recipe (QuantizeBlockFP8):
//     s = amax/448 in float32, rounded to the scale dtype (F32, BF16 or
//     F16); codes e4m3(w/s); a zero scale (an all-zero block) gives zero
//     codes.
//   - FP8Transformers, "transformers": transformers' FineGrainedFP8
//     Fp8Quantize (huggingface/transformers:src/transformers/integrations/
//     finegrained_fp8.py@v5.23.0, _quantize_one): m = 448/amax as torch
//     computes a Python number over a tensor, (1/amax)·448 with the
//     reciprocal rounded to float32 first (1 for an all-zero block); the
//     stored F32 weight_scale_inv is 1/m rounded to float32 (1 for an
//     all-zero block), codes e4m3(clamp(w·m, ±448)). An amax so small
//     that 1/amax overflows gives m = +Inf, a stored scale 0 and the codes
//     of ±Inf (±448) and of 0·Inf (NaN).
//   - FP8TransformersUE8M0, "transformers-ue8m0": the same with
//     scale_fmt "ue8m0": the scale 1/m is raised to the power of two
//     2^ceil(log2(max(1/m, 2^-126))), log2 rounded to float32 first (as
//     torch's float32 log2, so that a scale a few ulps above a power of
//     two rounds down to it), stored as F8_E8M0; codes
//     e4m3(clamp(w·2^-e, ±448)).
//   - FP8CompressedTensors, "compressed-tensors": compressed-tensors'
//     calculate_qparams and quantize (vllm-project/compressed-tensors:src/
//     compressed_tensors/quantization/utils/helpers.py and
//     lifecycle/forward_helpers.py@ac8e2ba, as llm-compressor's FP8_BLOCK,
//     FP8 channel and tensor schemes call them): the arithmetic runs in
//     the weight's dtype, which is the stored scale's: s = amax/448 in
//     that dtype (float32 quotient rounded once more to BF16/F16), a zero
//     scale replaced by that dtype's machine epsilon (2^-23, 2^-7, 2^-10);
//     codes e4m3(clamp(w/s rounded to the dtype, ±448)): for BF16 and F16
//     the quotient is rounded twice, which moves a value just above an
//     E4M3 tie onto it.
//   - FP8DeepSeek, "deepseek-v3": DeepSeek-V3's reference kernel
//     (deepseek-ai/DeepSeek-V3:inference/kernel.py@9b4e978 act_quant,
//     whose arithmetic the published block-FP8 weights follow and
//     fp8_cast_bf16.py inverts with weight_dequant, code·scale):
//     s = max(amax, 1e-4)/448 in float32, stored F32; codes e4m3(w/s).
//   - FP8DeepSeekUE8M0, "deepseek-v3-ue8m0": the same kernel with
//     scale_fmt "ue8m0" (DeepSeek-V3.1): s = 2^ceil(log2(max(amax,
//     1e-4)/448)), stored F32. vLLM's per_block_cast_to_fp8 with
//     use_ue8m0 (vllm-project/vllm:vllm/utils/deep_gemm.py@779d1fc)
//     computes the same scales and codes (its w·(1/s) is exact for a power
//     of two).
//   - FP8VLLMBlock, "vllm-block": vLLM's per_block_cast_to_fp8 (same
//     file), the block cast vLLM applies when it re-quantises a weight:
//     s = max(amax, 1e-4)/448 in float32, stored F32; codes e4m3(w·(1/s)),
//     the reciprocal rounded to float32 first.
//   - FP8VLLMGroup, "vllm-group": vLLM's per_token_group_quant_fp8
//     (vllm-project/vllm:csrc/quantization/w8a8/fp8/
//     per_token_group_quant.cu@e3b7e36 and its Triton twin in
//     fp8_utils.py) applied block by block: s = max(amax, 1e-10)/448,
//     stored F32; codes e4m3(clamp(w/s, ±448)).
//   - FP8VLLMGroupUE8M0, "vllm-group-ue8m0": its scale_ue8m0 form:
//     s = 2^ceil(log2(max(max(amax, 1e-10)/448, 1e-10))), stored F32.
//
// The torch and Triton kernels take amax with NaN propagating (a block
// with a NaN gets a NaN or, in transformers, a unit scale); here every
// recipe ignores NaN as ckpt's does, so a block holding a NaN re-quantises
// under another scale than those kernels store. GPU kernels compute log2
// with up to an ulp of error, so a ue8m0 scale within a few ulps above a
// power of two can round either way on a GPU.

// FP8Recipe names a block-FP8 quantisation recipe (see above).
type FP8Recipe uint8

// The block-FP8 recipes, in the order diff tries them: when several
// reproduce a tensor (they agree wherever amax ≥ 1e-4 and the scales are
// exact), the first is named.
const (
	FP8Ckpt FP8Recipe = iota
	FP8Transformers
	FP8TransformersUE8M0
	FP8CompressedTensors
	FP8DeepSeek
	FP8DeepSeekUE8M0
	FP8VLLMBlock
	FP8VLLMGroup
	FP8VLLMGroupUE8M0
	numFP8Recipes
)

// FP8Recipes lists the block-FP8 recipes in the order diff tries them.
var FP8Recipes = []FP8Recipe{FP8Ckpt, FP8Transformers, FP8TransformersUE8M0, FP8CompressedTensors,
	FP8DeepSeek, FP8DeepSeekUE8M0, FP8VLLMBlock, FP8VLLMGroup, FP8VLLMGroupUE8M0}

var fp8RecipeNames = [numFP8Recipes]string{"ckpt", "transformers", "transformers-ue8m0", "compressed-tensors",
	"deepseek-v3", "deepseek-v3-ue8m0", "vllm-block", "vllm-group", "vllm-group-ue8m0"}

// String is the recipe's name ("ckpt", "transformers", ...).
func (r FP8Recipe) String() string {
	if r < numFP8Recipes {
		return fp8RecipeNames[r]
	}
	return fmt.Sprintf("FP8Recipe(%d)", uint8(r))
}

// ParseFP8Recipe returns the recipe of a name String gives.
func ParseFP8Recipe(name string) (FP8Recipe, bool) {
	for i, n := range fp8RecipeNames {
		if n == name {
			return FP8Recipe(i), true
		}
	}
	return 0, false
}

// Stores reports whether the recipe writes scales of dtype sd, as the
// scale of a block-FP8 weight_scale_inv (compressedTensors false) or of a
// compressed-tensors weight_scale (true): ckpt's for any float scale of
// either; compressed-tensors' for its own F32, BF16 or F16 weight_scale;
// transformers-ue8m0 F8_E8M0; the others F32 weight_scale_inv.
func (r FP8Recipe) Stores(sd DType, compressedTensors bool) bool {
	switch r {
	case FP8Ckpt:
		return sd == F32 || sd == BF16 || sd == F16
	case FP8CompressedTensors:
		return compressedTensors && (sd == F32 || sd == BF16 || sd == F16)
	case FP8TransformersUE8M0:
		return !compressedTensors && sd == F8E8M0
	}
	return !compressedTensors && sd == F32 && r < numFP8Recipes
}

// FP8Block is how a recipe quantises one block: the value of the scale it
// stores, and the operation that makes the codes: e4m3(w/K), or e4m3(w·K)
// when Mul, the quotient rounded to Round first (BF16 or F16; "" none),
// or zero codes when Zero.
type FP8Block struct {
	Scale float32
	K     float32
	Mul   bool
	Round DType
	Zero  bool
}

// Same reports whether two blocks make the same codes from the same
// values.
func (b FP8Block) Same(o FP8Block) bool {
	if b.Zero || o.Zero {
		return b.Zero == o.Zero
	}
	return b.Mul == o.Mul && b.Round == o.Round && math.Float32bits(b.K) == math.Float32bits(o.K)
}

// encode is the recipe's code of x.
func (b FP8Block) encode(x float32) byte {
	switch {
	case b.Zero:
		return 0
	case b.Mul:
		x *= b.K
	default:
		x /= b.K
	}
	return EncodeE4M3(RoundTo(b.Round, x))
}

// Mismatches counts the codes of w that the block's operation makes with
// another value than codes (cnt; NaN equals NaN) or only another sign of
// zero (zeroSign); len(codes) >= len(w). Division and multiplication go
// through the AVX2 kernel on amd64 (requantDivMismatches,
// requantMulMismatches); a rounded quotient through the Go loop.
func (b FP8Block) Mismatches(w []float32, codes []byte) (cnt, zeroSign int64) {
	switch {
	case b.Zero:
		for _, c := range codes[:len(w)] {
			if c == 0x80 {
				zeroSign++
			} else if c != 0 {
				cnt++
			}
		}
		return cnt, zeroSign
	case b.Round == BF16 || b.Round == F16:
		codes = codes[:len(w)]
		for i, x := range w {
			if c := b.encode(x); c != codes[i] {
				if same, zs := SameE4M3(c, codes[i]); !same {
					cnt++
				} else if zs {
					zeroSign++
				}
			}
		}
		return cnt, zeroSign
	case b.Mul:
		return requantMulMismatches(w, codes, b.K)
	}
	return requantDivMismatches(w, codes, b.K)
}

// Constants of the recipes: the amax floors of DeepSeek's and vLLM's
// kernels (float32(1e-4), float32(1e-10)) and 2^-126, transformers'
// floor of a ue8m0 scale (torch.finfo(torch.float32).tiny).
const (
	deepSeekAmaxFloor = float32(1e-4)
	vllmGroupEps      = float32(1e-10)
	float32Tiny       = float32(0x1p-126)
)

// ceilPow2 returns 2^ceil(log2 x) for x > 0 as torch computes it in
// float32: log2 rounded to float32, then ceil (so that x up to a few ulps
// above a power of two gives that power), with the exponent returned; +Inf
// (e > 127) for x too large, and x ≤ 0 or NaN give NaN.
func ceilPow2(x float32) (float32, int) {
	if !(x > 0) {
		return float32(math.NaN()), 0
	}
	e := int(math.Ceil(float64(float32(math.Log2(float64(x))))))
	if e > 127 {
		return float32(math.Inf(1)), e
	}
	return float32(math.Ldexp(1, e)), e
}

// epsOf is the machine epsilon of dt (compressed-tensors' replacement of a
// zero scale): 2^-7 for BF16, 2^-10 for F16, 2^-23 for F32.
func epsOf(dt DType) float32 {
	switch dt {
	case BF16:
		return 0x1p-7
	case F16:
		return 0x1p-10
	}
	return 0x1p-23
}

// Block returns how the recipe quantises a block whose largest |w| is amax
// (NaN ignored) with scales of dtype sd.
func (r FP8Recipe) Block(amax float32, sd DType) FP8Block {
	switch r {
	case FP8Transformers, FP8TransformersUE8M0:
		m, inv := float32(1), float32(1)
		if amax > 0 {
			m = 1 / amax * E4M3MaxFinite // torch's 448.0 / t: reciprocal, then product
			inv = 1 / m
		}
		if r == FP8Transformers {
			return FP8Block{Scale: inv, K: m, Mul: true}
		}
		s, _ := ceilPow2(max(inv, float32Tiny))
		if math.IsInf(float64(s), 1) {
			// torch's cast of +Inf to float8_e8m0fnu is its NaN, and 1/Inf = 0
			return FP8Block{Scale: float32(math.NaN()), K: 0, Mul: true}
		}
		return FP8Block{Scale: s, K: 1 / s, Mul: true}
	case FP8CompressedTensors:
		s := RoundTo(sd, amax/E4M3MaxFinite)
		if s == 0 {
			s = epsOf(sd)
		}
		b := FP8Block{Scale: s, K: s}
		if sd == BF16 || sd == F16 {
			b.Round = sd
		}
		return b
	case FP8DeepSeek, FP8DeepSeekUE8M0, FP8VLLMBlock:
		s := max(amax, deepSeekAmaxFloor) / E4M3MaxFinite
		switch r {
		case FP8DeepSeekUE8M0:
			s, _ = ceilPow2(s)
		case FP8VLLMBlock:
			return FP8Block{Scale: s, K: 1 / s, Mul: true}
		}
		return FP8Block{Scale: s, K: s}
	case FP8VLLMGroup, FP8VLLMGroupUE8M0:
		s := max(amax, vllmGroupEps) / E4M3MaxFinite
		if r == FP8VLLMGroupUE8M0 {
			s, _ = ceilPow2(max(s, vllmGroupEps))
		}
		return FP8Block{Scale: s, K: s}
	}
	s := scaleFor(amax, sd)
	return FP8Block{Scale: s, K: s, Zero: s == 0}
}

// QuantizeBlockFP8Recipe is QuantizeBlockFP8 with the recipe r: codes and
// scales (the stored values, already in sd) of a row-major [rows, cols]
// float32 matrix in [bm, bn] blocks.
func QuantizeBlockFP8Recipe(r FP8Recipe, w []float32, rows, cols, bm, bn int64, sd DType, codes []byte, scales []float32) {
	sRows, sCols := ceilDiv(rows, bm), ceilDiv(cols, bn)
	for bi := int64(0); bi < sRows; bi++ {
		r0, r1 := bi*bm, min((bi+1)*bm, rows)
		for bj := int64(0); bj < sCols; bj++ {
			c0, c1 := bj*bn, min((bj+1)*bn, cols)
			var amax float32
			for i := r0; i < r1; i++ {
				amax = max(amax, absMaxGo(w[i*cols+c0:i*cols+c1]))
			}
			b := r.Block(amax, sd)
			scales[bi*sCols+bj] = b.Scale
			for i := r0; i < r1; i++ {
				for j := c0; j < c1; j++ {
					codes[i*cols+j] = b.encode(w[i*cols+j])
				}
			}
		}
	}
}

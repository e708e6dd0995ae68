package quant

import "github.com/ckpt-dev/ckpt/ckpt/numfmt"

// Scheme names how the values of a tensor are made from what is stored.
type Scheme string

// The schemes. The reader's (*ckpt.Checkpoint).QuantScheme, which every
// command that reads values applies, makes values of each of them
// (ckpt.Values dequantises them through the numfmt codecs).
const (
	// Plain: the stored values are the tensor's values (BF16, F32, ...;
	// also quantisation bookkeeping such as a scale, read as it is).
	Plain Scheme = "plain"
	// BlockFP8: F8_E4M3 codes times <name>_scale_inv, one scale per
	// [bm, bn] block (quantization_config.weight_block_size, default
	// DefaultBlockSize): w[i,j] = e4m3(W[i,j]) * scale_inv[i/bm, j/bn].
	BlockFP8 Scheme = "block-fp8"
	// MXFP4: gpt-oss / transformers Mxfp4Config (quant_method "mxfp4"): a
	// weight X is X_blocks U8 [..., G, 16] (32 packed E2M1 codes per
	// block) and X_scales U8 [..., G] (E8M0 exponents), values [..., G*32].
	MXFP4 Scheme = "mxfp4"
	// NVFP4: NVIDIA ModelOpt (quant_method "modelopt", quant_algo "NVFP4"):
	// weight U8 [N, K/2] (packed E2M1), weight_scale F8_E4M3 [N, K/16],
	// weight_scale_2 F32 scalar (global), input_scale F32 (activations).
	NVFP4 Scheme = "nvfp4"
	// FP8Tensor, FP8Channel, FP8PerBlock: compressed-tensors float-quantized
	// FP8 (quant_method "compressed-tensors", format "float-quantized"):
	// weight F8_E4M3 [N, K] times weight_scale, a multiplier of shape [1]
	// (strategy tensor), [N, 1] (channel) or [ceil(N/bm), ceil(K/bk)]
	// (block, block_structure [bm, bk]).
	FP8Tensor   Scheme = "fp8-tensor"
	FP8Channel  Scheme = "fp8-channel"
	FP8PerBlock Scheme = "fp8-block"
)

// DefaultBlockSize is the block of a block-FP8 weight when the config
// gives no weight_block_size (transformers' FineGrainedFP8Config default).
var DefaultBlockSize = [2]int64{128, 128}

// IsCode reports whether d holds quantised codes whatever the config
// says: the FP8 weight formats and the sub-byte floats (F8_E8M0 is a scale
// format and is not one). U8 and I8 hold codes only in a quantised
// checkpoint (see (*ckpt.Checkpoint).IsQuantized).
func IsCode(d numfmt.DType) bool {
	switch d {
	case numfmt.F8E4M3, numfmt.F8E5M2, numfmt.F8E4M3FNUZ, numfmt.F8E5M2FNUZ, numfmt.F4, numfmt.F6E2M3, numfmt.F6E3M2:
		return true
	}
	return false
}

// CompanionSpec describes one companion tensor of a scheme's weight.
type CompanionSpec struct {
	// Role is what the companion is: "scale" (multiplies the codes),
	// "global_scale" (a per-tensor multiplier) or "input_scale" (the
	// activations' scale).
	Role string
	// Suffix names the companion: the weight's module + "." + Suffix
	// ("weight_scale"), or for MXFP4 the weight's base name + Suffix
	// ("_scales"), or the weight's name + Suffix for block FP8
	// ("_scale_inv", ckpt.ScaleSuffix).
	Suffix string
	// DTypes are the dtypes the companion may have.
	DTypes []numfmt.DType
	// Shape says in words which shape the companion has.
	Shape string
	// Optional companions may be absent (input_scale: the activations'
	// scale, not part of the weight's values).
	Optional bool
}

// Spec is the one description of a quantisation scheme: how the
// config declares it, how its weights and their companions are named,
// their dtypes, shapes, block sizes and the config key of its ignore list.
// Every command that needs to know a scheme reads it from here (SpecOf).
type Spec struct {
	Scheme Scheme
	// Title names the scheme for people ("MXFP4 (gpt-oss)").
	Title string
	// Declared says how a config declares the scheme.
	Declared string
	// WeightName and WeightDTypes: how the stored codes are named and
	// typed; WeightShape their shape in words.
	WeightName   string
	WeightDTypes []numfmt.DType
	WeightShape  string
	// ValuesPerElement is the number of values one stored element holds
	// (2 for packed E2M1 in U8, else 1): parameters count the values.
	ValuesPerElement int64
	// Block says which elements one scale covers.
	Block      string
	Companions []CompanionSpec
	// IgnoreKeys are the config keys of the modules left unquantised.
	IgnoreKeys []string
}

var floatScale = []numfmt.DType{numfmt.F32, numfmt.BF16, numfmt.F16}

// blockScale are the dtypes of a block-FP8 weight_scale_inv
// (ckpt.IsBlockScaleDType).
var blockScale = []numfmt.DType{numfmt.F32, numfmt.BF16, numfmt.F16, numfmt.F8E8M0}

// schemeSpecs: the upstream facts behind each entry are cited where they
// are used (numfmt for the element formats and layouts).
//   - block FP8: deepseek-ai/DeepSeek-V3 README_WEIGHTS.md, transformers
//     FineGrainedFP8Config (weight_block_size, modules_to_not_convert).
//   - MXFP4: huggingface/transformers:src/transformers/integrations/
//     mxfp4.py@93a1c40 (gate_up_proj_blocks [E, 2I, H/32, 16] U8,
//     gate_up_proj_scales [E, 2I, H/32] U8; modules_to_not_convert).
//   - NVFP4: vllm-project/vllm:vllm/model_executor/layers/quantization/
//     modelopt.py@c9a5990 (hf_quant_config.json {"quantization":
//     {"quant_algo", "group_size", "exclude_modules"}}, or config.json
//     quantization_config {"quant_method": "modelopt", "quant_algo",
//     "ignore"}; ModelOptNvFp4LinearMethod.create_weights: weight U8
//     [N, K/2], weight_scale F8_E4M3 [N, K/group_size], weight_scale_2 and
//     input_scale F32 per tensor; exclude_modules are fnmatch wildcards).
//   - compressed-tensors FP8: vllm-project/compressed-tensors:src/
//     compressed_tensors/quantization/quant_args.py@dc235db
//     (QuantizationStrategy tensor/channel/block, block_structure [rows,
//     cols], FP8 = num_bits 8, type float); ignore entries are module
//     names or "re:" regexes.
var schemeSpecs = []*Spec{
	{Scheme: BlockFP8, Title: "block FP8 (DeepSeek/Qwen style)", Declared: `quantization_config.quant_method "fp8" (weight_block_size, default [128, 128])`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "[bm, bn] = weight_block_size",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "_scale_inv", DTypes: blockScale, Shape: "[ceil(N/bm), ceil(K/bn)]"}},
		IgnoreKeys: []string{"modules_to_not_convert", "ignored_layers"}},
	{Scheme: MXFP4, Title: "MXFP4 (gpt-oss)", Declared: `quantization_config.quant_method "mxfp4"`,
		WeightName: "<x>_blocks", WeightDTypes: []numfmt.DType{numfmt.U8}, WeightShape: "[..., G, 16] (32 packed E2M1 codes per block, low nibble first)",
		ValuesPerElement: 2, Block: "32 elements of the last dimension",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "_scales", DTypes: []numfmt.DType{numfmt.U8}, Shape: "[..., G] (E8M0 exponents, bias 127, 0xFF NaN)"}},
		IgnoreKeys: []string{"modules_to_not_convert"}},
	{Scheme: NVFP4, Title: "NVFP4 (NVIDIA ModelOpt)",
		Declared:   `quantization_config.quant_method "modelopt" with quant_algo "NVFP4", or hf_quant_config.json quantization.quant_algo "NVFP4"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.U8}, WeightShape: "[N, K/2] (two E2M1 codes per byte, low nibble first)",
		ValuesPerElement: 2, Block: "16 elements of a row",
		Companions: []CompanionSpec{
			{Role: "scale", Suffix: "weight_scale", DTypes: []numfmt.DType{numfmt.F8E4M3}, Shape: "[N, K/16]"},
			{Role: "global_scale", Suffix: "weight_scale_2", DTypes: []numfmt.DType{numfmt.F32}, Shape: "a scalar ([] or [1])"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: []numfmt.DType{numfmt.F32}, Shape: "a scalar ([] or [1])", Optional: true},
		},
		IgnoreKeys: []string{"exclude_modules", "ignore"}},
	{Scheme: FP8Tensor, Title: "FP8 per tensor (compressed-tensors)",
		Declared:   `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "tensor"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "the whole tensor",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
	{Scheme: FP8Channel, Title: "FP8 per channel (compressed-tensors)",
		Declared:   `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "channel"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "one output row",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "[N, 1]"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
	{Scheme: FP8PerBlock, Title: "FP8 per block (compressed-tensors)",
		Declared:   `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "block"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "[bm, bn] = block_structure",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "[ceil(N/bm), ceil(K/bn)]"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
}

// SpecOf returns the description of scheme s, nil for Plain or an unknown
// scheme.
func SpecOf(s Scheme) *Spec {
	for _, sp := range schemeSpecs {
		if sp.Scheme == s {
			return sp
		}
	}
	return nil
}

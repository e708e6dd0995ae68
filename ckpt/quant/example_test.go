package quant_test

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// A config.json's quantization_config read as a recipe: its scheme, its
// block size, the description of its scale companion and its ignore list.
func ExampleFromConfig() {
	raw := map[string]any{
		"quant_method":           "fp8",
		"weight_block_size":      []any{128.0, 128.0},
		"modules_to_not_convert": []any{"lm_head", "model.layers.0.mlp"},
	}
	r, err := quant.FromConfig("config.json", quant.NewConfig("quantization_config", raw))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Scheme, r.Block, r.Spec().Title)
	sc := r.Spec().Companions[0]
	fmt.Printf("%s: <weight>%s %v %s\n", sc.Role, sc.Suffix, sc.DTypes, sc.Shape)
	fmt.Printf("%s: %q %q\n", r.IgnoreKey, r.Ignored("model.layers.0.mlp.up_proj"), r.Ignored("model.layers.1.mlp.up_proj"))

	_, err = quant.FromConfig("config.json", quant.NewConfig("quantization_config", map[string]any{"quant_method": "gptq"}))
	fmt.Println(err)
	// Output:
	// block-fp8 [128 128] block FP8 (DeepSeek/Qwen style)
	// scale: <weight>_scale_inv [F32 BF16 F16 F8_E8M0] [ceil(N/bm), ceil(K/bn)]
	// quantization_config.modules_to_not_convert: "model.layers.0.mlp" ""
	// config.json: quantization_config: quant_method "gptq" is not a scheme ckpt knows (fp8, mxfp4, modelopt NVFP4, compressed-tensors FP8)
}

package arch_test

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
)

// Derive the expected tensors of a (tiny) Qwen3.5 hybrid from its config:
// 3 linear-attention layers × (14 + 6 scales), 1 full-attention layer ×
// (11 + 7), embed, norm, lm_head, and the MTP head (15 + 7) = 103.
func ExampleParseQwen35() {
	cfg, _ := ckpt.ParseConfig([]byte(`{"model_type":"qwen3_5","text_config":{
		"hidden_size":64,"intermediate_size":128,"num_hidden_layers":4,"num_attention_heads":2,
		"num_key_value_heads":1,"head_dim":32,"linear_num_key_heads":1,"linear_num_value_heads":2,
		"linear_key_head_dim":16,"linear_value_head_dim":16,"vocab_size":100,"mtp_num_hidden_layers":1}}`), "config.json")
	q, err := arch.ParseQwen35(cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(q.LayerTypes)
	fp8, scales := 0, 0
	ts := q.Tensors(true, 128, 128)
	for _, t := range ts {
		if t.FP8 {
			fp8++
		}
		if t.ScaleOf != "" {
			scales++
		}
	}
	fmt.Println(len(ts), "tensors,", fp8, "FP8 weights,", scales, "scales")
	// Output:
	// [linear_attention linear_attention linear_attention full_attention]
	// 103 tensors, 32 FP8 weights, 32 scales
}

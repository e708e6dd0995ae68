package arch_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func configOf(t *testing.T, raw string) *ckpt.Config {
	t.Helper()
	c, err := ckpt.ParseConfig([]byte(raw), "config.json")
	require.NoError(t, err)
	return c
}

// TestFP8Modules: the FP8 module table names, for each family, the module
// and the class transformers' FineGrainedFP8 quantizer builds for the
// weight of every nn.Linear and experts module the family's modeling file
// builds (transformers' modeling files, fp8modules.go), and nothing for the routers, norms,
// biases, embeddings, Qwen3-Next's conv1d, MTP tensors or names out of the
// *ForCausalLM layout.
func TestFP8Modules(t *testing.T) {
	t.Parallel()
	const l = "model.layers.3."
	cases := []struct {
		modelType, name, module, class string
	}{
		{"llama", "lm_head.weight", "lm_head", arch.FP8Linear},
		{"llama", l + "self_attn.q_proj.weight", l + "self_attn.q_proj", arch.FP8Linear},
		{"llama", l + "mlp.down_proj.weight", l + "mlp.down_proj", arch.FP8Linear},
		{"llama", l + "self_attn.q_proj.bias", "", ""},
		{"llama", l + "input_layernorm.weight", "", ""},
		{"llama", "model.embed_tokens.weight", "", ""},
		{"llama", l + "mlp.experts.0.up_proj.weight", "", ""}, // Llama has no experts
		{"llama", "model.layers.+3.mlp.down_proj.weight", "", ""},
		{"llama", "model.layers.x.mlp.down_proj.weight", "", ""},
		{"llama", "layers.3.mlp.down_proj.weight", "", ""},
		{"qwen3", l + "self_attn.o_proj.weight", l + "self_attn.o_proj", arch.FP8Linear},
		{"qwen3", l + "self_attn.q_norm.weight", "", ""},
		{"qwen3_moe", l + "mlp.experts.7.gate_proj.weight", l + "mlp.experts", arch.FP8Experts},
		{"qwen3_moe", l + "mlp.experts.gate_up_proj", l + "mlp.experts", arch.FP8Experts},
		{"qwen3_moe", l + "mlp.experts.7.gate_proj.weight_scale_inv", "", ""},
		{"qwen3_moe", l + "mlp.gate.weight", "", ""},                               // Qwen3MoeTopKRouter
		{"qwen3_moe", l + "mlp.up_proj.weight", l + "mlp.up_proj", arch.FP8Linear}, // mlp_only_layers
		{"qwen3_next", l + "linear_attn.in_proj_qkvz.weight", l + "linear_attn.in_proj_qkvz", arch.FP8Linear},
		{"qwen3_next", l + "linear_attn.in_proj_ba.weight", l + "linear_attn.in_proj_ba", arch.FP8Linear},
		{"qwen3_next", l + "linear_attn.out_proj.weight", l + "linear_attn.out_proj", arch.FP8Linear},
		{"qwen3_next", l + "linear_attn.conv1d.weight", "", ""},
		{"qwen3_next", l + "mlp.shared_expert.down_proj.weight", l + "mlp.shared_expert.down_proj", arch.FP8Linear},
		{"qwen3_next", l + "mlp.shared_expert_gate.weight", l + "mlp.shared_expert_gate", arch.FP8Linear},
		{"qwen3_next", l + "mlp.experts.0.down_proj.weight", l + "mlp.experts", arch.FP8Experts},
		{"qwen3_next", "mtp.layers.0.mlp.experts.0.down_proj.weight", "", ""},
		{"gpt_oss", l + "self_attn.v_proj.weight", l + "self_attn.v_proj", arch.FP8Linear},
		{"gpt_oss", l + "self_attn.sinks", "", ""},
		{"gpt_oss", l + "mlp.router.weight", "", ""},
		{"gpt_oss", l + "mlp.experts.down_proj", l + "mlp.experts", arch.FP8Experts},
		{"gpt_oss", l + "mlp.experts.down_proj_bias", "", ""},
		{"gpt_oss", l + "mlp.gate_proj.weight", "", ""}, // GptOssMLP is router + experts only
	}
	for _, tc := range cases {
		m, ok := arch.FP8ModulesOf(configOf(t, `{"model_type": "`+tc.modelType+`"}`))
		require.True(t, ok, tc.modelType)
		mod, class, found := m.Module(tc.name)
		assert.Equal(t, tc.module != "", found, "%s %s", tc.modelType, tc.name)
		assert.Equal(t, tc.module, mod, "%s %s", tc.modelType, tc.name)
		assert.Equal(t, tc.class, class, "%s %s", tc.modelType, tc.name)
	}
	for _, mt := range []string{"", "mistral", "qwen3_5", "deepseek_v3"} {
		_, ok := arch.FP8ModulesOf(configOf(t, `{"model_type": "`+mt+`"}`))
		assert.False(t, ok, mt)
	}
	m, _ := arch.FP8ModulesOf(configOf(t, `{"model_type": "gpt_oss"}`))
	assert.True(t, m.ExpertBiases())
	assert.Equal(t, []string{"gpt_oss", "llama", "qwen3", "qwen3_moe", "qwen3_next"}, arch.FP8ModuleTypes())
}

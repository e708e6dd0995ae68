package quant_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRecipeIgnored(t *testing.T) {
	t.Parallel()
	r := &quant.Recipe{Ignore: []string{"lm_head", "model.layers.*.self_attn", "model.layers.1.mlp*", `re:.*\.mlp\.gate$`, "re:(", "mlp.up"}}
	tests := []struct{ module, want string }{
		{"lm_head", "lm_head"},
		{"lm_head_2", ""},
		{"model.layers.3.self_attn.q_proj", "model.layers.*.self_attn"},
		{"model.layers.3.self_attn_x.q_proj", ""},
		{"model.layers.1.mlp.down_proj", "model.layers.1.mlp*"},
		{"model.layers.10.mlp.down_proj", ""},
		{"model.layers.2.mlp.gate", `re:.*\.mlp\.gate$`},
		{"model.layers.2.mlp.gate_proj", ""},
		{"model.layers.2.mlp.up", ""}, // entries without * are whole module paths from the start
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, r.Ignored(tc.module), tc.module)
	}
}

// TestFromConfig reads recipes from config objects alone, without a
// checkpoint: what each declaration gives, and that a declaration ckpt
// cannot use is a *RecipeError and never a half-read recipe.
func TestFromConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		hf     bool // raw is hf_quant_config.json, else config.json's quantization_config
		raw    map[string]any
		scheme quant.Scheme
		block  [2]int64
		group  int64
		err    string
	}{
		{"fp8 default block", false, map[string]any{"quant_method": "fp8"}, quant.BlockFP8, quant.DefaultBlockSize, 0, ""},
		{"fp8 block", false, map[string]any{"quant_method": "fp8", "weight_block_size": []any{64.0, 32.0}}, quant.BlockFP8, [2]int64{64, 32}, 0, ""},
		{"mxfp4", false, map[string]any{"quant_method": "mxfp4"}, quant.MXFP4, [2]int64{}, 32, ""},
		{"modelopt nvfp4", false, map[string]any{"quant_method": "modelopt", "quant_algo": "NVFP4"}, quant.NVFP4, [2]int64{}, 16, ""},
		{"hf nvfp4", true, map[string]any{"quantization": map[string]any{"quant_algo": "NVFP4", "group_size": 16.0}}, quant.NVFP4, [2]int64{}, 16, ""},
		{"gptq", false, map[string]any{"quant_method": "gptq"}, "", [2]int64{}, 0, `quant_method "gptq" is not a scheme ckpt knows`},
		{"modelopt fp8", false, map[string]any{"quant_method": "modelopt", "quant_algo": "FP8"}, "", [2]int64{}, 0, `quant_algo "FP8" is not a ModelOpt scheme`},
		{"hf without quantization", true, map[string]any{"producer": map[string]any{}}, "", [2]int64{}, 0, `no "quantization" object`},
		{"hf group 32", true, map[string]any{"quantization": map[string]any{"quant_algo": "NVFP4", "group_size": 32.0}}, "", [2]int64{}, 0, "group_size 32, but NVFP4 scales blocks of 16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r *quant.Recipe
			var err error
			if tc.hf {
				r, err = quant.FromHFQuantConfig("hf_quant_config.json", tc.raw)
			} else {
				r, err = quant.FromConfig("config.json", quant.NewConfig("quantization_config", tc.raw))
			}
			if tc.err != "" {
				var re *quant.RecipeError
				require.ErrorAs(t, err, &re)
				assert.Contains(t, re.Reason, tc.err)
				assert.Nil(t, r, "never a half-read recipe")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.scheme, r.Scheme)
			assert.Equal(t, tc.block, r.Block)
			assert.Equal(t, tc.group, r.GroupSize)
			assert.Equal(t, tc.scheme, r.Spec().Scheme)
		})
	}
}

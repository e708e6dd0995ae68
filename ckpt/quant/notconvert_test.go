package quant_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/assert"
)

// TestNotConvertList holds the matcher to transformers' should_convert_module
// (quantizers_utils.py@v5.23.0): each want is what transformers 5.23.0 answered
// for the entry and module name (not should_convert_module(name, [entry])).
func TestNotConvertList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		entry, module string
		want          bool
	}{
		{"visual", "model.visual", true},
		{"visual", "model.visual.blocks.0.attn.qkv", false},
		{"visual", "visual.blocks.0", true},
		{"model.visual", "model.visual.blocks.0.attn.qkv", true},
		{"model.layers.1", "model.layers.10.mlp", false},
		{"model.layers.1", "model.layers.1.mlp", true},
		{"layers.1", "model.layers.1.mlp", false},
		{"mlp.gate", "model.layers.0.mlp.gate", true},
		{"mlp.gate", "model.layers.0.mlp.gate_proj", false},
		{"model.language_model.layers.0.mlp.gate", "model.language_model.layers.0.mlp.gate_proj", false},
		{"lm_head", "lm_head", true},
		{"fc1", "model.decoder.layers.23.fc1", true},
		{"model.layers.*.self_attn", "model.layers.3.self_attn.q_proj", true},
		{"model.layers.*", "model.layers.3.mlp.up_proj", true},
		{"model.decoder.layer.11.", "model.decoder.layer.11.attn", true},
		{"proj", "model.layers.0.self_attn.o_proj", true},
		{"re:.*gate", "model.layers.0.mlp.gate", false},
		{"", "x", true},
		{"gate_proj.x", "gate_proj", false},
		{`.*\.mlp\.gate$`, "model.layers.2.mlp.gate", true},
		{"model.layers.1.mlp*", "model.layers.1.mlp.down_proj", true},
		{"model.layers.1.mlp*", "model.layers.10.mlp.down_proj", false},
		{"model.layers.[0-2]", "model.layers.2.mlp", true},
		{"model.layers.[0-2]", "model.layers.20.mlp", false},
		{"a|model", "model.x", true},
		{"model.lay", "model.layers.0", false},
		{"model.layers.0.", "model.layers.0.mlp", true},
		{"model.layers.0.", "model.layers.0", false},
		{".*", "anything.at.all", true},
		{"mo.el", "model.x", true},
		{"mo.el", "moXel", true},
	} {
		l := quant.NewNotConvertList([]string{tc.entry})
		_, got := l.Match(tc.module)
		assert.Equal(t, tc.want, got, "%q vs %q", tc.entry, tc.module)
	}
	l := quant.NewNotConvertList([]string{"lm_head", "visual", "model.layers.0"})
	for module, want := range map[string]string{"model.visual": "visual", "model.layers.0.mlp.up_proj": "model.layers.0", "model.visual.merger.linear_fc1": ""} {
		e, kept := l.Match(module)
		assert.Equal(t, want, e, module)
		assert.Equal(t, want != "", kept, module)
	}
	var none *quant.NotConvertList
	_, kept := none.Match("lm_head")
	assert.False(t, kept, "an absent list keeps nothing")
}

package ckpt_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompareConfigAsBuilt: the config transformers 5.23.0 wrote back for
// the bf16 Small model (from_pretrained → save_pretrained, no change;
// synth's testdata) compares equal to the one it read, though 14 raw keys (bookkeeping aside)
// differ; every change of what transformers builds is one change with both
// values, an integer given as a float among them.
func TestCompareConfigAsBuilt(t *testing.T) {
	t.Parallel()
	o := synth.Small()
	o.FP8 = false
	raw, err := os.ReadFile(filepath.Join("synth", "testdata", "small_bf16_resaved_by_transformers_5.23.0.json"))
	require.NoError(t, err)
	resaved, err := ckpt.ParseConfig(raw, "config.json")
	require.NoError(t, err)
	base := parse(t, synth.Config(o))
	var notBookkeeping int
	for _, ch := range ckpt.CompareConfig(base, resaved.Raw) {
		if !ch.Bookkeeping {
			notBookkeeping++
		}
	}
	assert.Equal(t, 14, notBookkeeping, "the raw differences of a bare re-save")
	assert.Empty(t, ckpt.CompareConfigAsBuilt(base, resaved.Raw))
	assert.Empty(t, ckpt.CompareConfigAsBuilt(resaved.Raw, base))

	for _, tc := range []struct {
		name string
		edit func(text, vision map[string]any)
		want []ckpt.ConfigChange
	}{
		{"num_hidden_layers as a float", func(tc, _ map[string]any) { tc["num_hidden_layers"] = 4.0 },
			[]ckpt.ConfigChange{{Path: "text_config.num_hidden_layers", Base: "4", FT: "4.0", Change: ckpt.ConfigChanged, Kind: ckpt.ConfigIntAsFloat}}},
		{"rope_theta moved and changed", func(tc, _ map[string]any) { tc["rope_theta"] = 1e6 },
			[]ckpt.ConfigChange{{Path: "text_config.rope_parameters.rope_theta", Base: "10000.0", FT: "1e+06", Change: ckpt.ConfigChanged}}},
		{"partial_rotary_factor changed", func(tc, _ map[string]any) { tc["partial_rotary_factor"] = 0.5 },
			[]ckpt.ConfigChange{{Path: "text_config.rope_parameters.partial_rotary_factor", Base: "0.25", FT: "0.5", Change: ckpt.ConfigChanged}}},
		{"a default set to another value", func(tc, _ map[string]any) { tc["attention_dropout"] = 0.1 },
			[]ckpt.ConfigChange{{Path: "text_config.attention_dropout", Base: "0.0", FT: "0.1", Change: ckpt.ConfigChanged}}},
		{"a vision default set to another value", func(_, vc map[string]any) { vc["hidden_act"] = "gelu" },
			[]ckpt.ConfigChange{{Path: "vision_config.hidden_act", Base: "gelu_pytorch_tanh", FT: "gelu", Change: ckpt.ConfigChanged}}},
		{"an attribute_map alias", func(_, vc map[string]any) { delete(vc, "num_heads"); vc["num_attention_heads"] = 2 }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.Config(o)
			tc.edit(cfg["text_config"].(map[string]any), cfg["vision_config"].(map[string]any))
			got := ckpt.CompareConfigAsBuilt(base, parse(t, cfg))
			var norm []ckpt.ConfigChange
			for _, ch := range got {
				ch.Base, ch.FT = jsonText(ch.Base), jsonText(ch.FT)
				norm = append(norm, ch)
			}
			assert.Equal(t, tc.want, norm)
		})
	}
}

func parse(t *testing.T, cfg map[string]any) map[string]any {
	t.Helper()
	b, err := jsonMarshal(cfg)
	require.NoError(t, err)
	c, err := ckpt.ParseConfig(b, "config.json")
	require.NoError(t, err)
	return c.Raw
}

// jsonMarshal writes floats as Python does, with a fraction (4.0, not 4).
func jsonMarshal(v any) ([]byte, error) {
	return json.Marshal(pyFloats(v))
}

func pyFloats(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = pyFloats(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = pyFloats(e)
		}
		return out
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		return json.Number(s)
	}
	return v
}

func jsonText(v any) any {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return v
}

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
	base := parse(t, synth.ConfigJSON(o))
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
			cfg := synth.ConfigJSON(o)
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

// TestCompareConfigNoted: diff's comparison lists every change of the JSON
// and marks as notes exactly those after which transformers builds the
// same model, so that its differences are CompareConfigAsBuilt's: none for
// the bare re-save (14 BuildsSame notes, 4 bookkeeping), one for each
// change of what transformers builds, the as-built change added where no
// change of the JSON shows it (an integer given as a float).
func TestCompareConfigNoted(t *testing.T) {
	t.Parallel()
	o := synth.Small()
	o.FP8 = false
	raw, err := os.ReadFile(filepath.Join("synth", "testdata", "small_bf16_resaved_by_transformers_5.23.0.json"))
	require.NoError(t, err)
	resaved, err := ckpt.ParseConfig(raw, "config.json")
	require.NoError(t, err)
	count := func(cs []ckpt.ConfigChange) (book, same int, diffs []ckpt.ConfigChange) {
		for _, c := range cs {
			switch {
			case c.Bookkeeping:
				book++
			case c.BuildsSame:
				same++
			default:
				diffs = append(diffs, c)
			}
		}
		return book, same, diffs
	}
	base := parse(t, synth.ConfigJSON(o))
	book, same, diffs := count(ckpt.CompareConfigNoted(base, resaved.Raw))
	assert.Equal(t, 4, book)
	assert.Equal(t, 14, same)
	assert.Empty(t, diffs)

	for _, tc := range []struct {
		name  string
		edit  func(text map[string]any)
		same  int
		diffs []ckpt.ConfigChange
	}{
		{"num_hidden_layers as a float", func(tc map[string]any) { tc["num_hidden_layers"] = json.Number("4.0") }, 14,
			[]ckpt.ConfigChange{{Path: "text_config.num_hidden_layers", Base: json.Number("4"), FT: json.Number("4.0"), Change: ckpt.ConfigChanged, Kind: ckpt.ConfigIntAsFloat}}},
		{"a default changed", func(tc map[string]any) { tc["attention_dropout"] = json.Number("0.1") }, 13,
			[]ckpt.ConfigChange{{Path: "text_config.attention_dropout", FT: json.Number("0.1"), Change: ckpt.ConfigOnlyInFT}}},
		{"a moved key changed", func(tc map[string]any) {
			tc["rope_parameters"].(map[string]any)["partial_rotary_factor"] = json.Number("0.5")
		}, 13, []ckpt.ConfigChange{{Path: "text_config.rope_parameters", FT: map[string]any{"partial_rotary_factor": json.Number("0.5"),
			"rope_theta": json.Number("10000.0"), "rope_type": "default"}, Change: ckpt.ConfigOnlyInFT}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := parse(t, resaved.Raw) // a copy
			tc.edit(ft["text_config"].(map[string]any))
			got := ckpt.CompareConfigNoted(base, ft)
			_, same, diffs := count(got)
			assert.Equal(t, tc.same, same)
			assert.Equal(t, tc.diffs, diffs)
			assert.Len(t, ckpt.CompareConfigAsBuilt(base, ft), 1, "one change of what transformers builds")
			assert.IsNonDecreasing(t, paths(got))
		})
	}
}

func paths(cs []ckpt.ConfigChange) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path
	}
	return out
}

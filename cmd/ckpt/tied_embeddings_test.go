package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTieWordEmbeddingsTopLevel: in a composite Qwen3.5 config the
// top-level tie_word_embeddings is the one transformers ties on
// (PreTrainedModel.get_expanded_tied_weights_keys reads the model's own
// config, the composite one, in src/transformers/modeling_utils.py of the
// 5.23.0 release), whatever text_config says: Qwen3_5Config(
// tie_word_embeddings=True) saves text_config.tie_word_embeddings false and
// no lm_head.weight. verify and map follow the top-level key, both ways.
func TestTieWordEmbeddingsTopLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		top, text bool
		rule      string // the map rule of output.weight.vshard
	}{
		{"tied at the top level, text_config false: no lm_head.weight", true, false, "lm_head.tied"},
		{"untied at the top level, text_config true: lm_head.weight", false, true, "lm_head"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := bf16Save()
			o.LayersPerShard = 0
			dir := writeSynth(t, o)
			if tc.top {
				editSingle(t, dir, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
					var out []ckpt.MemTensor
					for _, mt := range ts {
						if mt.Name != "lm_head.weight" {
							out = append(out, mt)
						}
					}
					require.Len(t, out, len(ts)-1)
					return out
				})
			}
			p := filepath.Join(dir, "config.json")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			var cfg map[string]any
			require.NoError(t, json.Unmarshal(b, &cfg))
			cfg["tie_word_embeddings"] = tc.top
			cfg["text_config"].(map[string]any)["tie_word_embeddings"] = tc.text
			b, err = json.Marshal(cfg)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, 0o644))

			code, out, errs := runApp(t, "verify", dir, "--format", "json")
			assert.Equal(t, 0, code, "%s\n%s", out, errs)
			var rep struct {
				OK       bool           `json:"ok"`
				Findings []ckpt.Finding `json:"findings"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &rep))
			assert.True(t, rep.OK)
			for _, f := range rep.Findings {
				assert.NotEqual(t, ckpt.Fail, f.Status, "%s: %s", f.ID, f.Message)
			}

			code, res, errs := mapJSON(t, dir, "--mesh", "1x2")
			assert.Equal(t, 0, code, errs)
			assert.Empty(t, res.Problems)
			var rule string
			for _, e := range res.Entries {
				if e.Target == "output.weight.vshard" {
					rule = e.Rule
				}
			}
			assert.Equal(t, tc.rule, rule)
		})
	}
}

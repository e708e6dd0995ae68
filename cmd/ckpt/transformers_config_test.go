package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// contractChecks runs verify SRC --against CONTRACT and returns the exit
// code and the contract.config findings.
func contractChecks(t *testing.T, src, contractFile string) (int, []ckpt.Finding, verify.Result) {
	t.Helper()
	code, rep, stderr := verifyJSON(t, "verify", src, "--against", contractFile)
	require.Contains(t, []int{0, 1}, code, stderr)
	var out []ckpt.Finding
	for _, c := range rep.Checks {
		if c.ID == contract.ContractConfig {
			out = append(out, c)
		}
	}
	return code, out, rep
}

// TestContractBareResave (issue 33, behaviour 8): the checkpoint
// transformers' save_pretrained writes back with no change (its config
// with the class defaults filled in and partial_rotary_factor moved into
// rope_parameters; every tensor identical) keeps the contract of the one
// it read; a change of what transformers builds fails naming the key and
// both values, an integer key given as a float included.
func TestContractBareResave(t *testing.T) {
	t.Parallel()
	base := writeSmall(t, func(*synth.Options) {})
	resaved := writeSmall(t, func(o *synth.Options) { o.Resaved = true })
	contract := filepath.Join(t.TempDir(), "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract, "--progress", "none")
	require.Equal(t, 0, code, stderr)

	code, cfg, rep := contractChecks(t, resaved, contract)
	require.Equal(t, 0, code, "%v", cfg)
	assert.True(t, rep.OK)
	require.Len(t, cfg, 1)
	assert.Equal(t, ckpt.Pass, cfg[0].Status)
	assert.Contains(t, cfg[0].Message, "config identical (")

	for _, tc := range []struct {
		name string
		edit func(text map[string]any)
		msg  string
	}{
		{"an integer given as a float", func(tc map[string]any) { tc["num_hidden_layers"] = json.Number("4.0") },
			"config text_config.num_hidden_layers: 4 in the contract, 4.0 now (an integer given as a float: transformers' strict config refuses it, and Python's range() refuses a float)"},
		{"a default the re-save wrote, changed", func(tc map[string]any) { tc["attention_dropout"] = json.Number("0.1") },
			"config text_config.attention_dropout: 0.0 in the contract, 0.1 now"},
		{"rope_parameters changed", func(tc map[string]any) {
			tc["rope_parameters"].(map[string]any)["partial_rotary_factor"] = json.Number("0.5")
		}, "config text_config.rope_parameters.partial_rotary_factor: 0.25 in the contract, 0.5 now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := copyDir(t, resaved)
			editJSON(t, filepath.Join(edited, "config.json"), func(m map[string]any) { tc.edit(m["text_config"].(map[string]any)) })
			code, cfg, _ := contractChecks(t, edited, contract)
			assert.Equal(t, 1, code)
			require.Len(t, cfg, 1, "%v", cfg)
			assert.Equal(t, ckpt.Fail, cfg[0].Status)
			assert.Equal(t, tc.msg, cfg[0].Message)
		})
	}
}

// TestDiffBookkeepingIsANote (issue 33, behaviour 9): configs that differ
// only in bookkeeping keys (the contract's list: transformers_version,
// use_cache, ...) do not differ: exit 0, differs false, the changes listed
// as notes.
func TestDiffBookkeepingIsANote(t *testing.T) {
	t.Parallel()
	base := writeSmall(t, func(o *synth.Options) { o.FP8 = false })
	ft := copyDir(t, base)
	editJSON(t, filepath.Join(ft, "config.json"), func(m map[string]any) {
		m["transformers_version"] = "5.23.0"
		m["text_config"].(map[string]any)["use_cache"] = true
	})
	code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Differs bool `json:"differs"`
		Config  []struct {
			Path        string `json:"path"`
			Bookkeeping bool   `json:"bookkeeping"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.False(t, doc.Differs)
	require.Len(t, doc.Config, 2)
	for _, c := range doc.Config {
		assert.True(t, c.Bookkeeping, c.Path)
	}
	assert.Equal(t, []string{"text_config.use_cache", "transformers_version"}, []string{doc.Config[0].Path, doc.Config[1].Path})

	code, out, _ = runApp(t, "diff", base, ft, "--format", "text", "--progress", "none")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "config: 0 difference(s), 2 bookkeeping note(s)")
	assert.Contains(t, out, `transformers_version: (absent) → "5.23.0" (bookkeeping: a note, not a difference)`)

	// one real change next to them still differs
	editJSON(t, filepath.Join(ft, "config.json"), func(m map[string]any) { m["text_config"].(map[string]any)["rms_norm_eps"] = json.Number("1e-05") })
	code, out, _ = runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
	assert.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.True(t, doc.Differs)
}

// TestDiffBareResave: diff of a checkpoint and transformers' bare re-save
// of it (synth's Resaved: the class defaults filled in, partial_rotary_factor
// moved into rope_parameters, every tensor identical) is identical, exit 0:
// the 14 changed keys are notes, transformers builds the same model from
// both configs (the comparison of contracts, ckpt.CompareConfigAsBuilt);
// a change of what it builds differs, an integer given as a float included.
func TestDiffBareResave(t *testing.T) {
	t.Parallel()
	base := writeSmall(t, func(*synth.Options) {})
	resaved := writeSmall(t, func(o *synth.Options) { o.Resaved = true })
	type change struct {
		Path        string `json:"path"`
		Kind        string `json:"kind"`
		Bookkeeping bool   `json:"bookkeeping"`
		BuildsSame  bool   `json:"builds_same"`
	}
	diffJSON := func(ft string) (int, bool, []change) {
		code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
		require.NotEqual(t, 2, code, stderr)
		var doc struct {
			Differs bool     `json:"differs"`
			Config  []change `json:"config"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		return code, doc.Differs, doc.Config
	}
	code, differs, cfg := diffJSON(resaved)
	assert.Equal(t, 0, code)
	assert.False(t, differs)
	same := 0
	for _, c := range cfg {
		assert.True(t, c.Bookkeeping || c.BuildsSame, c.Path)
		if c.BuildsSame {
			same++
		}
	}
	assert.Equal(t, 14, same)
	code, out, _ := runApp(t, "diff", base, resaved, "--format", "text", "--progress", "none")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "config: 0 difference(s), 4 bookkeeping note(s), 14 note(s) transformers builds the same\n")
	assert.Contains(t, out, "text_config.attention_dropout: (absent) → 0.0 (transformers builds the same model: a note, not a difference)")

	for _, tc := range []struct {
		name        string
		edit        func(text map[string]any)
		want        change
		line, count string
	}{
		{"an integer given as a float", func(tc map[string]any) { tc["num_hidden_layers"] = json.Number("4.0") },
			change{Path: "text_config.num_hidden_layers", Kind: "integer_as_float"},
			"text_config.num_hidden_layers: 4 → 4.0 (an integer given as a float: transformers' strict config refuses it)", "14"},
		{"a default the re-save wrote, changed", func(tc map[string]any) { tc["attention_dropout"] = json.Number("0.1") },
			change{Path: "text_config.attention_dropout"}, "text_config.attention_dropout: (absent) → 0.1\n", "13"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := copyDir(t, resaved)
			editJSON(t, filepath.Join(edited, "config.json"), func(m map[string]any) { tc.edit(m["text_config"].(map[string]any)) })
			code, differs, cfg := diffJSON(edited)
			assert.Equal(t, 1, code)
			assert.True(t, differs)
			var diffs []change
			for _, c := range cfg {
				if !c.Bookkeeping && !c.BuildsSame {
					diffs = append(diffs, c)
				}
			}
			assert.Equal(t, []change{tc.want}, diffs)
			_, out, _ := runApp(t, "diff", base, edited, "--format", "text", "--progress", "none")
			assert.Contains(t, out, "config: 1 difference(s), 4 bookkeeping note(s), "+tc.count+" note(s) transformers builds the same\n")
			assert.Contains(t, out, tc.line)
		})
	}
}

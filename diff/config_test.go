package diff_test

import (
	"encoding/json"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDiffConfig(t *testing.T) {
	t.Parallel()
	parse := func(s string) *ckpt.Config {
		c, err := ckpt.ParseConfig([]byte(s), "config.json")
		require.NoError(t, err)
		return c
	}
	base := parse(`{"a": 1, "gone": true, "text_config": {"vocab_size": 248320, "layer_types": ["l", "l", "f"], "eps": 1e-6},
		"q": {"skip": ["x", "y"]}, "same": [1, 2]}`)
	ft := parse(`{"a": 1.0, "new": null, "text_config": {"vocab_size": 248384, "layer_types": ["l", "f", "f"], "eps": 1e-6},
		"q": {"skip": ["x", "y", "z"]}, "same": [1, 2]}`)
	got := diff.DiffConfig(base, ft)
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	// "a": 1 → 1.0 is a change, as the contract reads it
	// (ckpt.CompareConfigAsBuilt): an integer given as a float.
	assert.JSONEq(t, `[
		{"path": "a", "base": 1, "ft": 1.0, "change": "changed", "kind": "integer_as_float"},
		{"path": "gone", "base": true, "change": "only_in_base"},
		{"path": "new", "change": "only_in_ft"},
		{"path": "q.skip", "base": ["x", "y"], "ft": ["x", "y", "z"], "change": "changed"},
		{"path": "text_config.layer_types[1]", "base": "l", "ft": "f", "change": "changed"},
		{"path": "text_config.vocab_size", "base": 248320, "ft": 248384, "change": "changed"}
	]`, string(raw))
	assert.Empty(t, diff.DiffConfig(base, base))
	assert.Len(t, diff.DiffConfig(nil, base), 5, "a missing config is an empty object")
}

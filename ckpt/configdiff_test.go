package ckpt_test

import (
	"encoding/json"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigKeysAndCompare(t *testing.T) {
	t.Parallel()
	parse := func(s string) map[string]any {
		c, err := ckpt.ParseConfig([]byte(s), "config.json")
		require.NoError(t, err)
		return c.Raw
	}
	base := parse(`{"a": 1, "t": {"eps": 1e-6, "types": ["l", "f"], "rope": {"theta": 1e7}}, "empty": {}, "n": null}`)
	assert.Equal(t, []string{"a", "empty", "n", "t.eps", "t.rope.theta", "t.types"}, ckpt.ConfigKeys(base))
	assert.Empty(t, ckpt.ConfigKeys(nil))
	for _, tc := range []struct {
		name, ft string
		want     []ckpt.ConfigChange
	}{
		{"same, numbers by value", `{"a": 1.0, "t": {"eps": 0.000001, "types": ["l", "f"], "rope": {"theta": 10000000}}, "empty": {}, "n": null}`, []ckpt.ConfigChange{}},
		{"nested value", `{"a": 1, "t": {"eps": 1e-5, "types": ["l", "f"], "rope": {"theta": 1e6}}, "empty": {}, "n": null}`, []ckpt.ConfigChange{
			{Path: "t.eps", Base: jsonNum("1e-6"), FT: jsonNum("1e-5"), Change: ckpt.ConfigChanged},
			{Path: "t.rope.theta", Base: jsonNum("1e7"), FT: jsonNum("1e6"), Change: ckpt.ConfigChanged},
		}},
		{"one side only", `{"a": 1, "t": {"eps": 1e-6, "types": ["l", "f", "f"]}, "empty": {}, "n": null, "new": true}`, []ckpt.ConfigChange{
			{Path: "new", FT: true, Change: ckpt.ConfigOnlyInFT},
			{Path: "t.rope", Base: map[string]any{"theta": jsonNum("1e7")}, Change: ckpt.ConfigOnlyInBase},
			{Path: "t.types", Base: []any{"l", "f"}, FT: []any{"l", "f", "f"}, Change: ckpt.ConfigChanged},
		}},
	} {
		assert.Equal(t, tc.want, ckpt.CompareConfig(base, parse(tc.ft)), tc.name)
	}
}

func jsonNum(s string) json.Number { return json.Number(s) }

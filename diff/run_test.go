package diff_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunOptionError: what a caller can still get wrong in Options is a
// *ckpt.OptionError naming the field, before any work (the command line's
// rules are cmd/ckpt's).
func TestRunOptionError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opt   diff.Options
		field string
	}{
		{"sample", diff.Options{CompareOptions: diff.CompareOptions{Sample: -1, Workers: -1}}, "Sample"},
		{"workers", diff.Options{CompareOptions: diff.CompareOptions{Workers: -1}}, "Workers"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := diff.Run(context.Background(), tc.opt)
			var oe *ckpt.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.Equal(t, "Options."+tc.field+" is negative", err.Error())
			assert.ErrorIs(t, err, ckpt.ErrUsage)
			assert.Nil(t, res, "nothing was opened")
		})
	}
}

func TestRunPair(t *testing.T) {
	t.Parallel()
	b, f, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	res, err := diff.Run(context.Background(), diff.Options{Base: b, FT: f, CompareOptions: diff.CompareOptions{Mode: diff.ModeBytes}})
	require.NoError(t, err)
	assert.Equal(t, diff.ModeBytes, res.Mode)
	rec := res.SummaryRecord()
	assert.Equal(t, res.Differs(), rec.Differs)
	assert.Equal(t, res.Keys, rec.Keys)
	js, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"base":".*","ft":".*","mode":"bytes","differs":(true|false),"keys":\{`, string(js))

	none, err := ckpt.NewMatcher([]string{"no.such.**"}, nil)
	require.NoError(t, err)
	_, err = diff.Run(context.Background(), diff.Options{Base: b, FT: f, CompareOptions: diff.CompareOptions{Match: none}})
	assert.ErrorIs(t, err, ckpt.ErrEmptySelection)
	assert.ErrorIs(t, err, ckpt.ErrUsage, "a glob that selects nothing is a wrong request")
}

func TestArrayChange(t *testing.T) {
	t.Parallel()
	added, removed, ok := diff.ArrayChange(ckpt.ConfigChange{Path: "a", Change: "changed",
		Base: []any{"x", 1.0, map[string]any{"k": true}}, FT: []any{1.0, "y", map[string]any{"k": true}, "z"}})
	require.True(t, ok)
	assert.Equal(t, []any{"y", "z"}, added)
	assert.Equal(t, []any{"x"}, removed)
	_, _, ok = diff.ArrayChange(ckpt.ConfigChange{Path: "a", Change: "changed", Base: 1.0, FT: 2.0})
	assert.False(t, ok)
	_, _, ok = diff.ArrayChange(ckpt.ConfigChange{Path: "a", Change: string(diff.OnlyInFT), FT: []any{1.0}})
	assert.False(t, ok)
}

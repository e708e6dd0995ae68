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

func TestRunRequestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  diff.Options
		msg  string // "" valid
	}{
		{"defaults", diff.Options{}, ""},
		{"mode", diff.Options{Mode: "fast"}, `unknown --mode "fast" (want header, bytes or values)`},
		{"negative", diff.Options{Workers: -1}, "--sample and --workers must not be negative"},
		{"sample-bytes size", diff.Options{SampleBytes: "lots"}, "--sample-bytes: "},
		{"sample-bytes zero", diff.Options{SampleBytes: "0"}, "--sample-bytes must be positive, not 0"},
		{"sample-bytes mode", diff.Options{Mode: "header", SampleBytes: "4KiB"}, "--sample-bytes needs --mode values, not header"},
		{"both", diff.Options{SampleBytes: "4KiB", SampleBudget: "1M"}, "--sample-bytes and --sample-budget exclude each other"},
		{"budget mode", diff.Options{Mode: "bytes", SampleBudget: "1M"}, "--sample-budget needs --mode values, not bytes"},
		{"glob", diff.Options{Match: []string{"[a"}}, "["},
		{"sampled", diff.Options{SampleBudget: "200MB", ByLayer: true}, ""},
		{"sample-seed alone", diff.Options{SampleSeed: 3}, "--sample-seed seeds --sample-bytes or --sample-budget; give one of them"},
		{"sample-seed with budget", diff.Options{SampleSeed: 3, SampleBudget: "1M"}, ""},
		{"seed alone", diff.Options{Seed: 5}, "--seed seeds --sample N; give it"},
		{"seed with sample", diff.Options{Seed: 5, Sample: 3}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.req.Validate()
			if tc.msg == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ckpt.ErrUsage)
			assert.Contains(t, err.Error(), tc.msg)
			res, err := diff.Run(context.Background(), tc.req)
			assert.ErrorIs(t, err, ckpt.ErrUsage, "Run validates first")
			assert.Nil(t, res)
		})
	}
}

func TestRunPair(t *testing.T) {
	t.Parallel()
	b, f, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	res, err := diff.Run(context.Background(), diff.Options{Base: b, FT: f, Mode: "bytes"})
	require.NoError(t, err)
	assert.Equal(t, diff.ModeBytes, res.Mode)
	rec := res.SummaryRecord()
	assert.Equal(t, res.Differs(), rec.Differs)
	assert.Equal(t, res.Keys, rec.Keys)
	js, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"base":".*","ft":".*","mode":"bytes","differs":(true|false),"keys":\{`, string(js))

	_, err = diff.Run(context.Background(), diff.Options{Base: b, FT: f, Match: []string{"no.such.**"}})
	assert.ErrorIs(t, err, ckpt.ErrEmptySelection)
	assert.ErrorIs(t, err, ckpt.ErrUsage, "a glob that selects nothing is a wrong request")
}

func TestArrayChange(t *testing.T) {
	t.Parallel()
	added, removed, ok := diff.ArrayChange(diff.ConfigChange{Path: "a", Change: "changed",
		Base: []any{"x", 1.0, map[string]any{"k": true}}, FT: []any{1.0, "y", map[string]any{"k": true}, "z"}})
	require.True(t, ok)
	assert.Equal(t, []any{"y", "z"}, added)
	assert.Equal(t, []any{"x"}, removed)
	_, _, ok = diff.ArrayChange(diff.ConfigChange{Path: "a", Change: "changed", Base: 1.0, FT: 2.0})
	assert.False(t, ok)
	_, _, ok = diff.ArrayChange(diff.ConfigChange{Path: "a", Change: string(diff.OnlyInFT), FT: []any{1.0}})
	assert.False(t, ok)
}

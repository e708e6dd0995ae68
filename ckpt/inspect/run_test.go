package inspect_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()

	for _, tc := range []struct {
		req inspect.Options
		msg string
	}{
		{inspect.Options{Source: dir}, "--workers must be at least 1, got 0"},
		{inspect.Options{Source: dir, Workers: 4, Match: []string{"[a"}}, "["},
	} {
		_, err := inspect.Run(ctx, tc.req)
		require.ErrorIs(t, err, ckpt.ErrUsage)
		assert.Contains(t, err.Error(), tc.msg)
	}

	res, err := inspect.Run(ctx, inspect.Options{Source: dir, Workers: 4, Match: []string{"mtp.**"}})
	require.NoError(t, err)
	require.NotEmpty(t, res.Tensors)
	for _, tn := range res.Tensors {
		assert.Regexp(t, `^mtp\.`, tn.Name)
	}
	rec := res.SummaryRecord()
	assert.Equal(t, res.Summary, rec.Summary)
	b, err := json.Marshal(rec)
	require.NoError(t, err)
	assert.Regexp(t, `^\{"source":".*","sharded":true,"tensors":`, string(b))

	_, err = inspect.Run(ctx, inspect.Options{Source: dir, Workers: 4, Match: []string{"nothing.**"}})
	assert.ErrorIs(t, err, ckpt.ErrEmptySelection)
}

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

	sel := func(match ...string) *ckpt.Matcher {
		m, err := ckpt.NewMatcher(match, nil)
		require.NoError(t, err)
		return m
	}
	// No Select lists every tensor, with ckpt's default Workers.
	all, err := inspect.Run(ctx, inspect.Options{Source: dir})
	require.NoError(t, err)
	assert.Len(t, all.Tensors, int(all.Summary.Tensors))

	res, err := inspect.Run(ctx, inspect.Options{Source: dir, Workers: 4, Select: sel("mtp.**")})
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

	_, err = inspect.Run(ctx, inspect.Options{Source: dir, Workers: 4, Select: sel("nothing.**")})
	assert.ErrorIs(t, err, ckpt.ErrEmptySelection)
}

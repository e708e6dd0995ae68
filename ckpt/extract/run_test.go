package extract

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunOptionError: the invariants Run keeps for a caller other than
// the CLI (which checks its flags first, in its own words) are
// *ckpt.OptionError naming the field, before any work.
func TestRunOptionError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		opt   Options
		field string
	}{
		{"no out", Options{Source: "x"}, "Out"},
		{"with-scales", Options{Source: "x", Out: "x.safetensors", DType: "F32", WithScales: true}, "WithScales"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Run(context.Background(), tc.opt)
			var oe *ckpt.OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tc.field, oe.Field)
			assert.ErrorIs(t, err, ckpt.ErrUsage)
			assert.Nil(t, rep)
		})
	}
}

func mustSelect(t *testing.T, match ...string) *ckpt.Matcher {
	t.Helper()
	m, err := ckpt.NewMatcher(match, nil)
	require.NoError(t, err)
	return m
}

func TestRunWorkflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "mtp.safetensors")
	rep, err := Run(ctx, Options{Source: dir, Out: out, Select: mustSelect(t, "mtp.**"), DType: "BF16", Progress: ckpt.NewProgress()})
	require.NoError(t, err)
	assert.Equal(t, "bf16", rep.DType)
	assert.Equal(t, out, rep.Out)
	assert.NotZero(t, rep.Summary.Tensors)
	b, err := json.Marshal(rep.SummaryRecord())
	require.NoError(t, err)
	assert.Regexp(t, `^\{"source":".*","out":".*","dtype":"bf16","sharded":false,"tensors":\d+,`, string(b))

	// ChunkBytes tunes memory against read sizes: the same bytes.
	small := filepath.Join(t.TempDir(), "mtp.safetensors")
	_, err = Run(ctx, Options{Source: dir, Out: small, Select: mustSelect(t, "mtp.**"), DType: "BF16", ChunkBytes: 100})
	require.NoError(t, err)
	assert.Equal(t, mustRead(t, out), mustRead(t, small), "ChunkBytes changes no byte")

	_, err = Run(ctx, Options{Source: dir, Out: filepath.Join(dir, ckpt.IndexFile), Select: mustSelect(t, "**")})
	assert.ErrorIs(t, err, ckpt.ErrUsage, "an output over an input is refused")
	_, err = Run(ctx, Options{Source: dir, Out: out, Select: mustSelect(t, "**"), MaxShardSize: 1})
	assert.ErrorIs(t, err, ckpt.ErrUsage, "a sharded output needs a directory")
	var sf *ShardedFileError
	require.ErrorAs(t, err, &sf)
	assert.Equal(t, &ShardedFileError{Shards: sf.Shards, MaxShardSize: 1, Out: out}, sf)
}

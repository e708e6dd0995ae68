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

func TestRunOptionsValidate(t *testing.T) {
	t.Parallel()
	ok := Options{Source: "x", Out: "x.safetensors", Match: []string{"**"}}
	edit := func(f func(r *Options)) Options { r := ok; f(&r); return r }
	tests := []struct {
		name string
		req  Options
		msg  string // "" valid
	}{
		{"ok", ok, ""},
		{"upper dtype", edit(func(r *Options) { r.DType = "BF16" }), ""},
		{"no out", edit(func(r *Options) { r.Out = "" }), "extract needs -o/--out FILE.safetensors or -o/--out DIR"},
		{"no match", edit(func(r *Options) { r.Match = nil }), "extract needs --match GLOB (use --match '**' to extract everything)"},
		{"dtype", edit(func(r *Options) { r.DType = "f8" }), `--dtype: invalid dtype "f8" (want keep, bf16, f16 or f32)`},
		{"with-scales", edit(func(r *Options) { r.DType, r.WithScales = "f32", true }),
			"--with-scales only applies to --dtype keep: float dtypes dequantise FP8 weights and drop their scales"},
		{"shard size", edit(func(r *Options) { r.MaxShardSize = "0" }), `--max-shard-size: invalid size "0": must be at least 1 byte`},
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
			assert.EqualError(t, err, tc.msg)
			rep, err := Run(context.Background(), tc.req)
			assert.ErrorIs(t, err, ckpt.ErrUsage, "Run validates first")
			assert.Nil(t, rep)
		})
	}
}

func TestRunWorkflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "mtp.safetensors")
	rep, err := Run(ctx, Options{Source: dir, Out: out, Match: []string{"mtp.**"}, DType: "BF16", Progress: ckpt.NewProgress()})
	require.NoError(t, err)
	assert.Equal(t, "bf16", rep.DType)
	assert.Equal(t, out, rep.Out)
	assert.NotZero(t, rep.Summary.Tensors)
	b, err := json.Marshal(rep.SummaryRecord())
	require.NoError(t, err)
	assert.Regexp(t, `^\{"source":".*","out":".*","dtype":"bf16","sharded":false,"tensors":\d+,`, string(b))

	// ChunkBytes tunes memory against read sizes: the same bytes.
	small := filepath.Join(t.TempDir(), "mtp.safetensors")
	_, err = Run(ctx, Options{Source: dir, Out: small, Match: []string{"mtp.**"}, DType: "BF16", ChunkBytes: 100})
	require.NoError(t, err)
	assert.Equal(t, mustRead(t, out), mustRead(t, small), "ChunkBytes changes no byte")

	_, err = Run(ctx, Options{Source: dir, Out: filepath.Join(dir, ckpt.IndexFile), Match: []string{"**"}})
	assert.ErrorIs(t, err, ckpt.ErrUsage, "an output over an input is refused")
	_, err = Run(ctx, Options{Source: dir, Out: out, Match: []string{"**"}, MaxShardSize: "1"})
	assert.ErrorIs(t, err, ckpt.ErrUsage, "a sharded output needs a directory")
}

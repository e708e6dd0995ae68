package synth_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

func TestPairOpens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	for _, src := range []string{base, ft} {
		c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
		require.NoError(t, err)
		require.True(t, c.Sharded)
		require.Empty(t, c.Issues)
		require.NotNil(t, c.Config.Quantization())
		c.Close()
	}
	c, err := ckpt.Open(context.Background(), base, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	s := ckpt.Summarize(c.Tensors, true)
	t.Logf("%d tensors, %d bytes, %v, groups %v", s.Tensors, s.Bytes, s.ParametersByDType, s.ByGroup)
	w, ok := c.Lookup("mtp.layers.0.mlp.down_proj.weight")
	require.True(t, ok)
	require.Equal(t, ckpt.F8E4M3, w.DType)
	v, err := c.Values(w)
	require.NoError(t, err)
	dst := make([]float32, v.Rows*v.Cols)
	_, err = v.ReadRows(0, v.Rows, nil, dst)
	require.NoError(t, err)
	require.NotZero(t, dst[0])
}

package extract

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// TestExtractNonFinite: NaN codes in a selected FP8 weight fail the
// extraction (keep and dequantised) naming the tensor and count, and
// nothing is written; AllowNonFinite writes and counts them.
func TestExtractNonFinite(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(src, bad, 17))
	c := openCkpt(t, src)
	for _, mode := range []string{Keep, BF16} {
		out := filepath.Join(t.TempDir(), mode+".safetensors")
		p, err := NewPlan(c, PlanOptions{Match: []string{"model.language_model.layers.0.**"}, DType: mode, ChunkBytes: 1000})
		require.NoError(t, err)
		_, err = p.Write(context.Background(), out)
		var nf *ckpt.NonFiniteError
		require.ErrorAs(t, err, &nf, mode)
		require.Equal(t, bad, nf.Tensor)
		require.EqualValues(t, 17, nf.NaN)
		require.NoFileExists(t, out)

		p, err = NewPlan(c, PlanOptions{Match: []string{"model.language_model.layers.0.**"}, DType: mode, AllowNonFinite: true})
		require.NoError(t, err)
		_, err = p.Write(context.Background(), out)
		require.NoError(t, err)
		require.Equal(t, []ckpt.NonFinite{{Tensor: bad, NaN: 17}}, p.nonFinite())
	}
	// A selection without the tensor is clean.
	p, err := NewPlan(c, PlanOptions{Match: []string{"mtp.**"}})
	require.NoError(t, err)
	_, err = p.Write(context.Background(), filepath.Join(t.TempDir(), "mtp.safetensors"))
	require.NoError(t, err)
	require.Empty(t, p.nonFinite())
}

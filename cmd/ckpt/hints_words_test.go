package main

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// TestHintWords holds byte for byte the hints of findings and differences
// that name an option (verify's --arch none, the --dtype of an overflowing
// scale, cache compare's --nan styles), which the libraries spell through
// the CLI's ckpt.Words.
func TestHintWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))

	t.Run("arch none", func(t *testing.T) {
		t.Parallel()
		code, res, _ := verifyJSON(t, "verify", src, "--arch", "none")
		require.Equal(t, 0, code)
		for _, c := range res.Checks {
			if c.ID == "arch.config" {
				assert.Equal(t, "architecture profile: none (--arch none)", c.Message)
			}
		}
	})
	t.Run("overflowing scale", func(t *testing.T) {
		t.Parallel()
		ft := filepath.Join(t.TempDir(), "ft")
		require.NoError(t, synth.Write(ft, synth.Small()))
		const w = "model.language_model.layers.0.mlp.down_proj.weight"
		huge := make([]byte, 2)
		binary.LittleEndian.PutUint16(huge, numfmt.F32ToBF16(3.39e38))
		require.NoError(t, synth.PokeTensor(ft, w+ckpt.ScaleSuffix, 0, huge))
		code, stdout, stderr := runApp(t, "verify", ft, "--read-data", "--format", "text", "--progress", "none")
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, "dequantised weights there are Inf (cache build and extract --dtype refuse them)")
	})
	t.Run("nan styles", func(t *testing.T) {
		t.Parallel()
		nan := filepath.Join(t.TempDir(), "nan")
		require.NoError(t, synth.Write(nan, synth.Small()))
		require.NoError(t, ckpttest.SetNaN(nan, "model.language_model.norm.weight", 1))
		var folders []string
		for _, style := range []string{"vector", "scalar"} {
			out := filepath.Join(filepath.Dir(nan), style)
			code, _, stderr := runApp(t, "cache", "build", nan, "--out", out, "--progress", "none", "--fsync=false", "--allow-nonfinite", "--nan", style)
			require.Equal(t, 0, code, stderr)
			folders = append(folders, filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"))
		}
		code, stdout, stderr := runApp(t, "cache", "compare", folders[0], folders[1], "--progress", "none", "--format", "text")
		require.Equal(t, 1, code, stdout+stderr)
		assert.Contains(t, stdout, "1 element(s) NaN on both sides with different bits (not in the max: e.g. a --nan vector build against a --nan scalar one)")
	})
}

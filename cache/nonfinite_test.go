package cache_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/internal/ckpttest"
	"github.com/stretchr/testify/require"
)

// TestBuildNonFinite: FP8 NaN codes in a weight fail the build naming the
// tensor and the exact count; --allow-nonfinite builds and records them in
// the manifest; a later build without it refuses again.
func TestBuildNonFinite(t *testing.T) {
	t.Parallel()
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	for _, tc := range []struct {
		name   string
		tensor string
		n      int
	}{
		{"fp8 weight", bad, 1666 % 40960},
		{"bf16 norm", "model.language_model.layers.0.input_layernorm.weight", 3},
		{"f32 scale", bad + ckpt.ScaleSuffix, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := filepath.Join(t.TempDir(), "src")
			require.NoError(t, ckpttest.Write(src, ckpttest.Small()))
			require.NoError(t, ckpttest.SetNaN(src, tc.tensor, tc.n))
			c, plan := openPlan(t, src)
			out := filepath.Join(t.TempDir(), "cache")
			_, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, BandBytes: 4096})
			var nf *ckpt.NonFiniteError
			require.ErrorAs(t, err, &nf)
			require.Equal(t, tc.tensor, nf.Tensor)
			require.EqualValues(t, tc.n, nf.NaN)
			require.Contains(t, err.Error(), tc.tensor)
			require.Contains(t, err.Error(), "--allow-nonfinite")
			dir := cache.FolderOf(out, plan.CacheDir).Path()
			_, err = os.Stat(filepath.Join(dir, cache.ManifestName))
			require.ErrorIs(t, err, os.ErrNotExist)

			res, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, AllowNonFinite: true})
			require.NoError(t, err)
			require.Equal(t, []ckpt.NonFinite{{Tensor: tc.tensor, NaN: int64(tc.n)}}, res.NonFinite)
			m, err := cache.ReadManifest(dir)
			require.NoError(t, err)
			require.True(t, m.AllowNonFinite)
			require.Equal(t, res.NonFinite, m.NonFinite)

			// Kept files keep their record; without the flag the build refuses.
			res, err = cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, AllowNonFinite: true})
			require.NoError(t, err)
			require.Empty(t, res.Built)
			require.Equal(t, m.NonFinite, res.NonFinite)
			_, err = cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2})
			require.ErrorAs(t, err, &nf)
		})
	}
}

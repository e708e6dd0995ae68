package build_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
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
			require.NoError(t, synth.Write(src, synth.Small()))
			require.NoError(t, ckpttest.SetNaN(src, tc.tensor, tc.n))
			c, plan := openPlan(t, src)
			out := filepath.Join(t.TempDir(), "cache")
			_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, BandBytes: 4096})
			var nf *ckpt.NonFiniteError
			require.ErrorAs(t, err, &nf)
			require.Equal(t, tc.tensor, nf.Tensor)
			require.EqualValues(t, tc.n, nf.NaN)
			require.Contains(t, err.Error(), tc.tensor)
			require.Contains(t, err.Error(), " (pass Options.AllowNonFinite to proceed anyway)")
			dir := cache.FolderOf(out, plan.CacheDir).Path()
			_, err = os.Stat(filepath.Join(dir, cache.ManifestName))
			require.ErrorIs(t, err, os.ErrNotExist)

			res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, AllowNonFinite: true})
			require.NoError(t, err)
			require.Equal(t, []ckpt.NonFinite{{Tensor: tc.tensor, NaN: int64(tc.n)}}, res.NonFinite)
			m, err := cache.ReadManifest(dir)
			require.NoError(t, err)
			require.True(t, m.AllowNonFinite)
			require.Equal(t, res.NonFinite, m.NonFinite)

			// Kept files keep their record; without the flag the build refuses.
			res, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, AllowNonFinite: true})
			require.NoError(t, err)
			require.Empty(t, res.Built)
			require.Equal(t, m.NonFinite, res.NonFinite)
			_, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
			require.ErrorAs(t, err, &nf)
		})
	}
}

// asSingleFile rewrites the checkpoint at src as one file in dst with
// tensor name stored as F32 holding vals (the fixture has no F32 tensor).
func asSingleFile(t *testing.T, src, dst, name string, vals []float32) {
	t.Helper()
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	var ts []ckpt.MemTensor
	for _, tn := range c.Tensors {
		data := make([]byte, tn.NBytes())
		_, err := tn.ReadAt(data, 0)
		require.NoError(t, err)
		spec := ckpt.WriteSpec{Name: tn.Name, DType: tn.DType, Shape: tn.Shape}
		if tn.Name == name {
			require.Len(t, vals, int(tn.Numel()))
			spec.DType, data = numfmt.F32, make([]byte, 4*len(vals))
			require.NoError(t, numfmt.EncodeFloat32(numfmt.F32, vals, data))
		}
		ts = append(ts, ckpt.MemTensor{WriteSpec: spec, Data: data})
	}
	require.NoError(t, os.MkdirAll(dst, 0o755))
	require.NoError(t, ckpt.WriteFile(filepath.Join(dst, "model.safetensors"), ts, nil))
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "config.json"), cfg, 0o644))
}

// TestBuildOverflowF32: finite F32 values beyond the bf16 range (the
// targets round to bf16 first) fail the build with the exact count (the
// source is scanned band by band); with AllowNonFinite they are recorded
// as overflow.
func TestBuildOverflowF32(t *testing.T) {
	t.Parallel()
	const name = "model.language_model.layers.0.input_layernorm.weight"
	base := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(base, synth.Small()))
	vals := make([]float32, 128)
	for i := range vals {
		vals[i] = 1
	}
	vals[3], vals[77] = 3.4e38, -3.4e38 // finite in F32, Inf in bf16
	vals[100] = 3.38e38                 // rounds to the largest bf16: finite
	src := filepath.Join(t.TempDir(), "src")
	asSingleFile(t, base, src, name, vals)
	c, plan := openPlan(t, src)
	out := filepath.Join(t.TempDir(), "cache")
	_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, BandBytes: 4096})
	var nf *ckpt.NonFiniteError
	require.ErrorAs(t, err, &nf)
	require.Equal(t, name, nf.Tensor)
	require.EqualValues(t, 2, nf.Overflow)
	require.Equal(t, numfmt.BF16, nf.Output)
	require.Contains(t, err.Error(), `tensor "`+name+`" (F32): 2 of 128 values are finite but overflow to Inf when converted to BF16`)

	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, AllowNonFinite: true})
	require.NoError(t, err)
	require.Equal(t, []ckpt.NonFinite{{Tensor: name, Overflow: 2}}, res.NonFinite)
}

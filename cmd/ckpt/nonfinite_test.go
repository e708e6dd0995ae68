package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	cachebuild "github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// TestNonFiniteCommands: a checkpoint with 1,666 FP8 NaN codes in one
// weight fails cache build and extract (exit 1) naming the tensor and the
// count; --allow-nonfinite proceeds and records them.
func TestNonFiniteCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "ft")
	require.NoError(t, synth.Write(src, synth.Small()))
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(src, bad, 1666))
	out := filepath.Join(dir, "cache")

	code, stdout, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none")
	require.Equal(t, 1, code, stdout+stderr)
	require.Contains(t, stderr, `tensor "`+bad+`" (F8_E4M3) has 1666 NaN codes (0x7f/0xff) of 40960 values: refusing to build a cache from it (pass --allow-nonfinite`)
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 1, code, "a refused build leaves no cache that verifies: %s", stdout)

	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "--allow-nonfinite", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res cachebuild.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.NonFinite, 1)
	require.EqualValues(t, 1666, res.NonFinite[0].NaN)
	m, err := cache.ReadManifest(filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"))
	require.NoError(t, err)
	require.True(t, m.AllowNonFinite)
	require.Equal(t, bad, m.NonFinite[0].Tensor)

	x := filepath.Join(dir, "x.safetensors")
	code, _, stderr = runApp(t, "extract", src, "--match", "model.language_model.layers.0.mlp.**", "--dtype", "bf16", "--out", x, "--progress", "none")
	require.Equal(t, 1, code)
	require.Contains(t, stderr, bad)
	require.Contains(t, stderr, "1666 NaN")
	_, err = os.Stat(x)
	require.ErrorIs(t, err, os.ErrNotExist)
	code, _, stderr = runApp(t, "extract", src, "--match", "model.language_model.layers.0.mlp.**", "--out", x, "--progress", "none", "--allow-nonfinite")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stderr, "note: 1 source tensor(s) hold NaN or Inf")
}

// TestDiffNotesNonFinite: a tensor with NaN on one side gets a note
// saying which side, in the table and in JSON (next to the null
// statistics).
func TestDiffNotesNonFinite(t *testing.T) {
	t.Parallel()
	_, base, ft := small(t)
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(ft, bad, 1666))
	code, stdout, stderr := runApp(t, "diff", base, ft, "--format", "text", "--match", bad, "--progress", "none")
	require.Equal(t, 1, code, stderr)
	require.Contains(t, stdout, "ft has 1666 NaN (base is finite): statistics over them are not defined")
	code, stdout, _ = runApp(t, "diff", base, ft, "--format", "json", "--match", bad, "--progress", "none")
	require.Equal(t, 1, code)
	var res struct {
		Tensors []struct {
			Name       string
			MaxAbsDiff *float64 `json:"max_abs_diff"`
			Note       string
			NonFinite  *struct {
				BaseNaN int64 `json:"base_nan"`
				FTNaN   int64 `json:"ft_nan"`
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Tensors, 1)
	tn := res.Tensors[0]
	require.Nil(t, tn.MaxAbsDiff)
	require.NotNil(t, tn.NonFinite)
	require.EqualValues(t, 0, tn.NonFinite.BaseNaN)
	require.EqualValues(t, 1666, tn.NonFinite.FTNaN)
	require.Contains(t, tn.Note, "ft has 1666 NaN")
	// Reversed: the base side is named.
	_, stdout, _ = runApp(t, "diff", ft, base, "--format", "text", "--match", bad, "--progress", "none")
	require.Contains(t, stdout, "base has 1666 NaN (ft is finite)")
}

// TestCacheBuildNaNFlag: --nan picks the bits of the NaNs the serving
// host's torch produces (default vector, 0xFFFF); switching it rebuilds the
// files made from sources holding NaN (and only those); a bad value is a
// usage error.
func TestCacheBuildNaNFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(src, bad, 1666))
	out := filepath.Join(dir, "cache")
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	build := func(args ...string) cachebuild.Document {
		t.Helper()
		code, stdout, stderr := runApp(t, append([]string{"cache", "build", src, "--out", out, "--progress", "none", "--allow-nonfinite", "--format", "json"}, args...)...)
		require.Equal(t, 0, code, stderr)
		var res cachebuild.Document
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		return res
	}
	first := build()
	m, err := cache.ReadManifest(folder)
	require.NoError(t, err)
	require.Equal(t, string(cachebuild.NaNVector), m.NaN)
	require.Greater(t, len(first.Built), 1)

	again := build("--nan", "scalar")
	require.Equal(t, []string{"P300/tensor_cache_bfp8_mesh1x2/layers.0/mlp.down_proj.weight.tp_dtype_BFLOAT8_B_layout_TILE.tensorbin"}, again.Built,
		"only the file made from the NaN source is rebuilt")
	m, err = cache.ReadManifest(folder)
	require.NoError(t, err)
	require.Equal(t, string(cachebuild.NaNScalar), m.NaN)
	require.Empty(t, build("--nan", "scalar").Built)

	code, _, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "--allow-nonfinite", "--nan", "avx")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, `--nan: NaN style "avx": want vector or scalar`)
}

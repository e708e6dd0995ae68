package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// TestNaNBitsWords holds, byte for byte, the data difference of a cache
// whose NaN bits are not those of the NaN style it is held against (a
// --nan scalar build against a --nan vector one), which the data comparison
// of cache identify --source and cache verify --read-data (build.Compare)
// words with the CLI's --nan.
func TestNaNBitsWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	require.NoError(t, ckpttest.SetNaN(src, "model.language_model.norm.weight", 1))
	const hint = " differs from byte 0: first differing element 0; 1 differing elements, decoded max abs difference 0; 1 element(s) NaN on both sides with different bits (not in the max: e.g. a --nan vector build against a --nan scalar one)"
	out := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "--fsync=false", "--allow-nonfinite", "--nan", "scalar")
	require.Equal(t, 0, code, stderr)
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	manifest := filepath.Join(folder, "manifest.json")
	raw, err := os.ReadFile(manifest)
	require.NoError(t, err)

	// cache verify --read-data of a manifest that says vector: the source
	// builds other NaN bits than the folder holds.
	vector := strings.Replace(string(raw), `"nan": "scalar"`, `"nan": "vector"`, 1)
	require.NotEqual(t, string(raw), vector)
	require.NoError(t, os.WriteFile(manifest, []byte(vector), 0o644))
	code, stdout, stderr := runApp(t, "cache", "verify", out, "--source", src, "--read-data", "--progress", "none", "--format", "text")
	assert.Equal(t, 1, code, stderr)
	want := "data: P300/tensor_cache_bfp8_mesh1x2/norm.weight_distributed_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin: its data is not what the source builds " +
		"(target norm.weight_distributed): shard 0 (device [0,0])" + hint + "\n" +
		"data: P300/tensor_cache_bfp8_mesh1x2/norm.weight_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin: its data is not what the source builds " +
		"(target norm.weight): shard 0 (device [0,0])" + hint
	assert.Equal(t, want, nanLines(stdout), "verify")

	// cache identify --source of the folder without its manifest, under
	// the default NaN style (vector).
	require.NoError(t, os.Remove(manifest))
	code, stdout, stderr = runApp(t, "cache", "identify", out, "--source", src, "--progress", "none")
	assert.Equal(t, 1, code, stderr)
	want = "data  norm.weight_distributed_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin  shard 0 device [0,0]               shard 0 (device [0,0])" + hint + "\n" +
		"data  norm.weight_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin              shard 0 device [0,0]               shard 0 (device [0,0])" + hint
	assert.Equal(t, want, nanLines(stdout), "identify")
}

// nanLines are the lines of s that speak of NaN bits.
func nanLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "NaN on both sides") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

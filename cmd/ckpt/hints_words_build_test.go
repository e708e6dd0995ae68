package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheBuildWords holds, byte for byte, the stderr of cache build's
// refusals that name its flags: a cache folder that holds the checkpoint
// being read (--out), a setting the profile does not have (--set).
func TestCacheBuildWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	root := filepath.Join(dir, "cache")
	inside := filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.MkdirAll(filepath.Dir(inside), 0o755))
	require.NoError(t, synth.Write(inside, synth.Small()))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cache folder holds the source", []string{"cache", "build", inside, "--out", root, "--mesh", "1x2", "--progress", "none"},
			"ckpt: --out the cache folder " + inside + " holds " + filepath.Join(inside, "model.safetensors.index.json") +
				", a file of the checkpoint being read: refusing to build into it\n"},
		{"unknown setting", []string{"cache", "build", src, "--out", filepath.Join(dir, "out"), "--set", "nope=1", "--progress", "none"},
			`ckpt: --set: profile qwen36-mtp@pr55548 has no variable "nope" ` +
				"(it has: proj_1d_decode, mlp_1d_decode, mlp_gateup_agmm_enabled, rope_permuted_enabled)\n"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, tc.name)
		assert.Empty(t, stdout, tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

// TestCacheVerifySettingWords holds, byte for byte, cache verify's refusal
// of a setting the profile does not have (--set), after the folder it
// checked first (the vision folder).
func TestCacheVerifySettingWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "cache")
	buildSmall(t, src, out, "1x2")
	code, stdout, stderr := runApp(t, "cache", "verify", out, "--source", src, "--set", "nope=1", "--progress", "none")
	assert.Equal(t, exitUnreadable, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "ckpt: "+filepath.Join(out, "P300", "tensor_cache_bfp8")+`: --set: profile qwen36-mtp@pr55548 has no variable "nope" `+
		"(it has: proj_1d_decode, mlp_1d_decode, mlp_gateup_agmm_enabled, rope_permuted_enabled)\n", stderr)
}

// TestCacheBuildNonFiniteNote holds, byte for byte, cache build's note of
// the tensors --allow-nonfinite kept, on stderr and in the JSON warnings.
func TestCacheBuildNonFiniteNote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(src, bad, 1666))
	const note = "1 source tensor(s) hold NaN or Inf (or overflow when converted), kept as they are (--allow-nonfinite): " + bad +
		" (1666 NaN, 0 Inf); recorded in the manifest"
	code, stdout, stderr := runApp(t, "cache", "build", src, "--out", filepath.Join(dir, "cache"), "--allow-nonfinite", "--progress", "none", "--format", "json")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "\nckpt: note: "+note+"\n")
	var doc struct {
		Warnings []string `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Contains(t, doc.Warnings, note)
}

// TestExtractKeepWarningWords holds, byte for byte, extract's warnings of
// quantised weights written under keep without their scale (--with-scales,
// --dtype), on stderr and in the JSON warnings.
func TestExtractKeepWarningWords(t *testing.T) {
	t.Parallel()
	_, base := extractBase(t)
	perChannel := copyDir(t, base)
	scaleCases(t)[2].mutate(perChannel)
	const up = "mtp.layers.0.mlp.up_proj.weight"
	tests := []struct {
		name, src, match, want string
	}{
		{"block fp8", base, up, `tensor "` + up + `" is FP8 with block scale "` + ckpt.ScaleName(up) +
			`", which is not extracted: the output cannot be dequantised (add --with-scales, or use --dtype bf16)`},
		{"companion", perChannel, downProj, `tensor "` + downProj + `" is F8_E4M3 with scale companion "` + downProj +
			`_scale", which is not extracted: the output cannot be dequantised (add --with-scales)`},
	}
	for _, tc := range tests {
		out := filepath.Join(t.TempDir(), "x.safetensors")
		code, stdout, stderr := runApp(t, "extract", tc.src, "--match", tc.match, "--out", out, "--format", "json", "--progress", "none")
		require.Equal(t, exitOK, code, stderr)
		assert.Equal(t, "ckpt: warning: "+tc.want+"\n", stderr, tc.name)
		var res struct {
			Warnings []string `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		assert.Equal(t, []string{tc.want}, res.Warnings, tc.name)
	}
}

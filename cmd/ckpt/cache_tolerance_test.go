package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// negExpFiles are the small fixture's neg_exp_A_fp32 files under main's
// profile, relative to the cache folder.
var negExpFiles = []string{
	"layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin",
	"layers.1/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin",
	"layers.2/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin",
}

// A cache the serving stack wrote holds −torch.exp(A_log) in float32,
// one ulp from ckpt's correctly rounded −exp for ~1 % of inputs. cache
// compare, cache identify --source and cache verify --read-data pass such
// a cache (exit 0), name each neg_exp_A_fp32 file equal within 1 ulp and
// never say "identical" of it; 2 ulp fails (exit 1) naming the file, the
// tensor and the byte. Before values were compared within the op's
// tolerance all three exited 1 on the 1-ulp cache.
func TestCacheCommandsWithinULP(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	ours := filepath.Join(dir, "ours")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", ours, "--profile", "qwen36@main-2026-10", "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, stderr)
	oursDir := filepath.Join(ours, folder1x2)
	// The stack's cache: no ckpt manifest; a copy with a manifest whose
	// hashes are of its files stands for it where verify needs one.
	withManifest := filepath.Join(dir, "stack-manifest")
	require.NoError(t, cachetest.CopyTree(ours, withManifest))
	for _, f := range negExpFiles {
		_, err := cachetest.NudgeF32(filepath.Join(withManifest, folder1x2, f), 1, -1)
		require.NoError(t, err)
	}
	require.NoError(t, cachetest.Rehash(withManifest, folder1x2))
	stack := filepath.Join(dir, "stack")
	require.NoError(t, cachetest.CopyTree(withManifest, stack))
	stackDir := filepath.Join(stack, folder1x2)
	require.NoError(t, os.Remove(filepath.Join(stackDir, "manifest.json")))

	// cache compare: exit 0, each file named, not "identical".
	code, stdout, stderr := runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "text")
	require.Equal(t, 0, code, stdout+stderr)
	for _, f := range negExpFiles {
		assert.Contains(t, stdout, "within 1 ulp (neg_exp): "+f+": 2 element(s) differ, by at most 1 ulp\n")
	}
	assert.Contains(t, stdout, "74 in both, 71 identical, 3 equal within a tolerance, ")
	assert.Contains(t, stdout, ": equal within tolerance, not identical; the data of 3 file(s) equal within 1 ulp, not bit for bit (neg_exp: transcendental: within 1 ulp of float32")
	assert.NotContains(t, stdout, ": identical")
	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code)
	res := decodeCompare(t, stdout)
	assert.True(t, res.Same)
	require.Len(t, res.Tolerated, 3)
	assert.Equal(t, "layers.0/tp/neg_exp_A_fp32", res.Tolerated[0].Target)
	assert.Equal(t, uint64(1), res.Tolerated[0].Tolerance.ULP)

	// cache identify --source: exactly main, the note beside "data".
	code, stdout, stderr = runApp(t, "cache", "identify", stack, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "exactly qwen36@main-2026-10, by names, headers and data (")
	assert.Contains(t, stdout, " compared); the data of 3 file(s) equal within 1 ulp, not bit for bit (neg_exp: transcendental")

	// cache verify --read-data: ok, with the note.
	code, stdout, stderr = runApp(t, "cache", "verify", withManifest, "--source", src, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "the data built from the source (")
	assert.Contains(t, stdout, "); the data of 3 file(s) equal within 1 ulp, not bit for bit (neg_exp: transcendental")
	code, stdout, _ = runApp(t, "cache", "verify", withManifest, "--source", src, "--read-data", "--progress", "none", "--format", "json")
	require.Equal(t, 0, code)
	// The root holds the model's text folder and its vision folder: the
	// folders document, the text folder's result with the tolerated files.
	var all struct {
		Folders []check.DirResult `json:"folders"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	require.Len(t, all.Folders, 2, stdout)
	var vres check.DirResult
	for _, f := range all.Folders {
		if strings.HasSuffix(f.Dir, folder1x2) {
			vres = f
		}
	}
	assert.Len(t, vres.Tolerated, 3)

	// 2 ulp in layer 1's file: every command fails, naming it.
	for _, root := range []string{stack, withManifest} {
		_, err := cachetest.NudgeF32(filepath.Join(root, folder1x2, negExpFiles[1]), 1, -1)
		require.NoError(t, err)
	}
	require.NoError(t, cachetest.Rehash(withManifest, folder1x2))
	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "text")
	require.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, negExpFiles[1])
	assert.Contains(t, stdout, "differs by more than 1 ulp (the tolerance of neg_exp) from byte 4")
	assert.Contains(t, stdout, "2 ulp apart")
	assert.Contains(t, stdout, "2 equal within a tolerance")
	assert.Contains(t, stdout, ": DIFFERENT")
	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code)
	res = decodeCompare(t, stdout)
	require.Len(t, res.Diffs, 2)
	for _, d := range res.Diffs {
		assert.Equal(t, negExpFiles[1], d.File)
		assert.Equal(t, "layers.1/tp/neg_exp_A_fp32", d.Target)
		require.NotNil(t, d.FirstByte)
		assert.Equal(t, int64(4), *d.FirstByte)
	}
	code, stdout, _ = runApp(t, "cache", "identify", stack, "--source", src, "--progress", "none")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "closest qwen36@main-2026-10 with 0 name or header difference(s) and 2 data difference(s)")
	assert.Contains(t, stdout, negExpFiles[1])
	code, stdout, _ = runApp(t, "cache", "verify", withManifest, "--source", src, "--read-data", "--progress", "none", "--format", "text")
	assert.Equal(t, 1, code, stdout)
	lines := 0
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "data: "+folder1x2+"/"+negExpFiles[1]+": its data is not what the source builds (target layers.1/tp/neg_exp_A_fp32): shard ") {
			assert.Contains(t, l, "differs by more than 1 ulp (the tolerance of neg_exp) from byte 4")
			lines++
		}
	}
	assert.Equal(t, 2, lines, stdout)
}

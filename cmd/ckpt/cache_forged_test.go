package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheForgedArchive: an archive holding the cache files of another
// checkpoint (same structure, other values) under the base's manifest,
// with every file's hashes recomputed. No verdict that claims the base's
// data passes it: cache verify --source BASE says it compared names,
// headers and the manifest's hashes only (in words and JSON), with
// --read-data it fails naming the files, cache identify --source BASE
// finds no exact candidate, and a rebuild from BASE rebuilds
// every file the archive brought instead of calling it unchanged.
func TestCacheForgedArchive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, baseRoot, _ := packedCache(t, dir)
	otherOpts := synth.Small()
	otherOpts.Seed = 2
	other := filepath.Join(dir, "other")
	require.NoError(t, synth.Write(other, otherOpts))
	otherRoot := filepath.Join(dir, "other-cache")
	code, _, stderr := runApp(t, "cache", "build", other, "--out", otherRoot, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	entries, err := cachetest.Forge(baseRoot, otherRoot, folder1x2)
	require.NoError(t, err)
	forged := filepath.Join(dir, "forged.tar.zst")
	writeArchive(t, forged, manifestLast(entries), nil)

	// unpack: the files match the archive's manifest, which is all it says.
	shipped := filepath.Join(dir, "shipped")
	code, stdout, stderr := runApp(t, "cache", "unpack", forged, "-o", shipped, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "all match the archive's manifest; their data was not compared with any source")

	// verify without --read-data: says what it compared, and where the manifest came from.
	for _, extra := range [][]string{nil, {"--rehash"}} {
		args := append([]string{"cache", "verify", filepath.Join(shipped, folder1x2), "--source", base, "--progress", "none"}, extra...)
		code, stdout, _ = runApp(t, args...)
		require.Equal(t, 0, code, stdout)
		assert.Contains(t, stdout, "compared names, headers and the manifest's hashes only, not the data with the source's (--read-data compares it)", extra)
		assert.Contains(t, stdout, "the manifest came from the archive forged.tar.zst, so its hashes are that archive's word", extra)
		code, stdout, _ = runApp(t, append(args, "--format", "json")...)
		require.Equal(t, 0, code, stdout)
		var res check.DirResult
		require.NoError(t, json.Unmarshal([]byte(stdout), &res))
		assert.False(t, res.DataCompared)
		assert.Equal(t, "names, headers and the manifest's hashes", res.Compared)
		require.NotNil(t, res.Unpacked)
		assert.Equal(t, "forged.tar.zst", res.Unpacked.Archive)
	}

	// verify --read-data compares the data with a build of BASE: fails.
	code, stdout, _ = runApp(t, "cache", "verify", filepath.Join(shipped, folder1x2), "--source", base, "--read-data", "--format", "json", "--progress", "none")
	require.Equal(t, 1, code, stdout)
	var res check.DirResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.True(t, res.DataCompared)
	data := 0
	for _, f := range res.Findings {
		if f.ID == check.FindingCompanion && f.Status == ckpt.Warn {
			continue // the vision folder is not in the archive: not verified
		}
		require.Equal(t, check.FindingData, f.ID, f.Message)
		assert.Contains(t, f.Message, "its data is not what the source builds")
		data++
	}
	assert.Greater(t, data, 40, "most files differ: every tensor of the other checkpoint does")

	// cache identify --source compares the data too: no candidate is exact.
	code, stdout, _ = runApp(t, "cache", "identify", shipped, "--source", base, "--progress", "none")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "no candidate reproduces its names, headers and data")

	// A rebuild from BASE rebuilds every file the archive brought.
	code, stdout, stderr = runApp(t, "cache", "build", base, "--out", shipped, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var sum build.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &sum))
	assert.Equal(t, 0, sum.Skipped, "no file is unchanged on the archive's word")
	assert.Len(t, sum.Built, 82)
	assert.Equal(t, 82, sum.FromArchive)
	assert.Contains(t, sum.Warnings, "82 files came from forged.tar.zst (cache unpack): rebuilt from the source, as an archive's manifest is no proof of what they were built from")
	code, stdout, _ = runApp(t, "cache", "verify", filepath.Join(shipped, folder1x2), "--source", base, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "compared names, headers, the manifest's hashes and the data built from the source (")
	// The next rebuild trusts what this build wrote.
	code, stdout, _ = runApp(t, "cache", "build", base, "--out", shipped, "--progress", "none")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "0 built, 82 unchanged, 0 removed")

	// An honest archive of BASE's cache passes --read-data.
	_, _, arch := packedCache(t, filepath.Join(dir, "again"))
	honest := filepath.Join(dir, "honest")
	code, _, stderr = runApp(t, "cache", "unpack", arch, "-o", honest, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	code, stdout, _ = runApp(t, "cache", "verify", filepath.Join(honest, folder1x2), "--source", base, "--read-data", "--progress", "none")
	assert.Equal(t, 0, code, stdout)
}

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachePackVisionModel: `cache pack` of a vision model's cache root,
// device folder, text folder or vision folder writes one archive of both
// folders and says so (exit 0, nothing on stderr); `cache unpack` of it
// writes both, into the root or beside the folder named, and `cache
// verify` checks the two as the model. (Before: the archive held the
// text folder, a note named the vision folder to pack on its own, and
// the device folder was refused as holding no cache folder.)
func TestCachePackVisionModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, root, _ := packedCache(t, dir)
	tdir := filepath.Join(root, filepath.FromSlash(folder1x2))
	vdir := filepath.Join(root, filepath.FromSlash(visionFolder))
	for i, packed := range []string{root, filepath.Join(root, "P300"), tdir, vdir} {
		arch := filepath.Join(dir, "model.tar.zst")
		code, stdout, stderr := runApp(t, "cache", "pack", packed, "-o", arch, "--progress", "none")
		require.Equal(t, 0, code, "%s: %s", packed, stderr)
		assert.Empty(t, stderr)
		assert.Regexp(t, `^packed 82 files \(1\.5 MiB\) of `+regexp.QuoteMeta(tdir)+` and 21 files \(106\.3 KiB\) of its vision folder `+regexp.QuoteMeta(vdir)+
			` into `+regexp.QuoteMeta(arch)+` \([0-9.]+ KiB\): one model, one archive\n$`, stdout)

		shipped := filepath.Join(dir, "shipped", string(rune('a'+i)))
		dest := shipped
		if i == 3 {
			dest = filepath.Join(shipped, filepath.FromSlash(visionFolder)) // the vision folder named: the text folder goes beside it
		}
		code, stdout, stderr = runApp(t, "cache", "unpack", arch, "-o", dest, "--progress", "none")
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stderr)
		st := filepath.Join(shipped, filepath.FromSlash(folder1x2))
		sv := filepath.Join(shipped, filepath.FromSlash(visionFolder))
		assert.Equal(t, "unpacked 82 files (1.5 MiB) into "+st+" and 21 files (106.3 KiB) into its vision folder "+sv+
			": all match the archive's manifests; their data was not compared with any source (cache verify --source SRC --read-data does)\n", stdout)
		code, stdout, _ = runApp(t, "cache", "verify", shipped, "--source", src, "--read-data", "--progress", "none")
		assert.Equal(t, 0, code, stdout)
		assert.Contains(t, stdout, st)
		assert.Contains(t, stdout, sv)
	}
}

// TestCachePackVisionCompanionMissing: a text folder whose vision folder
// is gone packs alone (exit 0) with a warning naming the missing folder
// and why; its archive unpacks alone with a note naming the folder it
// lacks, and the text folder verifies alone (the root does not: the model
// lacks its vision folder).
func TestCachePackVisionCompanionMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, root, _ := packedCache(t, dir)
	tdir := filepath.Join(root, filepath.FromSlash(folder1x2))
	vdir := filepath.Join(root, filepath.FromSlash(visionFolder))
	require.NoError(t, os.RemoveAll(vdir))
	arch := filepath.Join(dir, "text.tar.zst")
	code, stdout, stderr := runApp(t, "cache", "pack", root, "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "ckpt: warning: the model's other folder "+vdir+" is not in the archive: it does not exist; the archive holds "+tdir+" alone\n", stderr)
	assert.Contains(t, stdout, "packed 82 files (1.5 MiB) into "+arch)

	shipped := filepath.Join(dir, "shipped")
	code, stdout, stderr = runApp(t, "cache", "unpack", arch, "-o", shipped, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	st := filepath.Join(shipped, filepath.FromSlash(folder1x2))
	sv := filepath.Join(shipped, filepath.FromSlash(visionFolder))
	assert.Contains(t, stdout, "unpacked 82 files (1.5 MiB) into "+st+": all match the archive's manifest;")
	assert.Equal(t, "ckpt: note: the archive holds "+st+" alone: the model's other folder "+sv+", which its manifest names, is not in it (left as it is)\n", stderr)
	assert.NoDirExists(t, sv)
	require.FileExists(t, filepath.Join(st, cache.ManifestName))
	// The text folder verifies alone, saying its vision folder was not
	// verified; the root (the whole model) fails without it.
	code, stdout, _ = runApp(t, "cache", "verify", st, "--source", src, "--progress", "none")
	assert.Equal(t, 0, code, stdout)
	assert.Contains(t, stdout, "ok (text folder only: the vision folder "+sv+" was not found and not verified)")
	code, stdout, _ = runApp(t, "cache", "verify", shipped, "--source", src, "--progress", "none")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "companion: "+visionFolder+": the vision folder "+visionFolder+" that the manifest of "+folder1x2+" names is not there")
}

//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends; it skips the test, saying why, where mounting is
// not allowed (it needs CAP_SYS_ADMIN: root, outside a restricted
// container).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("needs a second file system: mounting a tmpfs on %s failed (%v; it takes CAP_SYS_ADMIN)", dir, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// TestCacheUnpackCrossDevice: a cache root whose device folder is a link to
// another file system. Unpacking the cache's own archive over it stages on
// that file system and swaps there (no "invalid cross-device link", no
// lost manifest); a bad archive leaves the cache there as it was.
func TestCacheUnpackCrossDevice(t *testing.T) {
	t.Parallel()
	fast := mountTmpfs(t, "64m")
	dir := t.TempDir()
	src, root, arch := packedCache(t, dir)
	// The serving host's layout: <root>/P300 -> /fast/P300.
	shipped := filepath.Join(dir, "shipped")
	require.NoError(t, os.MkdirAll(shipped, 0o755))
	require.NoError(t, cachetest.CopyTree(filepath.Join(root, "P300"), filepath.Join(fast, "P300")))
	require.NoError(t, os.Symlink(filepath.Join(fast, "P300"), filepath.Join(shipped, "P300")))
	code, stdout, _ := runApp(t, "cache", "verify", shipped, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout)

	code, stdout, stderr := runApp(t, "cache", "unpack", arch, "-o", shipped, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "unpacked 82 files")
	code, stdout, _ = runApp(t, "cache", "verify", shipped, "--source", src, "--progress", "none")
	assert.Equal(t, 0, code, stdout)
	link, err := os.Readlink(filepath.Join(shipped, "P300"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(fast, "P300"), link, "the device folder is still the link")
	ents, err := os.ReadDir(filepath.Join(fast, "P300"))
	require.NoError(t, err)
	require.Len(t, ents, 2, "only the folders (text and vision) are left on the other file system: %v", ents)

	// A bad archive: refused, the cache on the other file system intact.
	entries, _, err := cachetest.FolderEntries(root, folder1x2)
	require.NoError(t, err)
	entries[5].Data = append([]byte(nil), entries[5].Data...)
	entries[5].Data[len(entries[5].Data)/2] ^= 1
	bad := filepath.Join(dir, "bad.tar.zst")
	writeArchive(t, bad, entries, nil)
	before := snapshot(t, fast)
	code, _, stderr = runApp(t, "cache", "unpack", bad, "-o", shipped, "--progress", "none")
	require.Equal(t, 2, code, stderr)
	assert.Equal(t, before, snapshot(t, fast))
	assert.FileExists(t, filepath.Join(fast, "P300", "tensor_cache_bfp8_mesh1x2", cache.ManifestName))
}

// TestCacheUnpackBombSmallDisk: the bomb of an archive of an earlier
// layout (a huge entry, no manifest before it) unpacked onto a small file
// system: refused as a bad archive naming the entry (exit 2), not "cannot
// write output" (exit 3) after filling the disk.
func TestCacheUnpackBombSmallDisk(t *testing.T) {
	t.Parallel()
	small := mountTmpfs(t, "16m")
	dir := t.TempDir()
	const name = folder1x2 + "/layers.0/tp/A_log_dtype_BFLOAT16_layout_TILE.tensorbin"
	arch := filepath.Join(dir, "bomb.tar.zst")
	writeArchive(t, arch, []cachetest.ArchiveEntry{{Name: name, Size: 1 << 30}}, cachetest.ZeroFrame(1<<30))
	code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", filepath.Join(small, "cache"), "--progress", "none")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `bad archive: entry "`+name+`"`)
	assert.NotContains(t, stderr, "cannot write output")
	ents, err := os.ReadDir(small)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing is left on the small file system")
}

// TestCacheUnpackNoRoom: an honest archive larger than the free space
// beside the folder is refused as our side's failure (exit 3, saying how
// much it needs) once its first entry's header shows it is what it
// claims, before its data fills the disk; nothing is left. The archive of
// the small fixture holds its text and vision folders: 82 + 21 files,
// counted together; an archive of one folder says so for one.
func TestCacheUnpackNoRoom(t *testing.T) {
	t.Parallel()
	small := mountTmpfs(t, "1m")
	dir := t.TempDir()
	_, root, arch := packedCache(t, dir)
	code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", filepath.Join(small, "cache"), "--progress", "none")
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "ckpt: cannot write output: ")
	assert.Contains(t, stderr, "the archive's 103 files of the model's two folders (this one and "+filepath.Join(small, "cache", "P300", "tensor_cache_bfp8")+
		", on one file system) need 1.6 MiB (1667200 bytes) together; ")
	assert.Contains(t, stderr, " is free beside the folders (the old copies stay until the new ones are complete)")
	ents, err := os.ReadDir(small)
	require.NoError(t, err)
	assert.Empty(t, ents)

	entries, _, err := cachetest.FolderEntries(root, folder1x2)
	require.NoError(t, err)
	alone := filepath.Join(dir, "text.tar.zst")
	writeArchive(t, alone, entries, nil)
	code, _, stderr = runApp(t, "cache", "unpack", alone, "-o", filepath.Join(small, "cache"), "--progress", "none")
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "the archive's 82 files need 1.5 MiB; ")
	ents, err = os.ReadDir(small)
	require.NoError(t, err)
	assert.Empty(t, ents)
}

// TestCacheNoRoomForBothFolders: on a file system with room for a vision
// model's text folder and for its vision folder, but not for both, cache
// build and cache unpack of the model's archive are refused before
// anything is written (exit 3), the error naming the folder, the other
// folder, the bytes needed and the bytes free; nothing is left. (Before:
// the build checked each folder alone and ran out of space writing, and
// the archive held the text folder only, which fitted.)
func TestCacheNoRoomForBothFolders(t *testing.T) {
	t.Parallel()
	// 1600 KiB: the text folder's 1,558,336 bytes fit, and the vision
	// folder's 108,864, but not both.
	small := mountTmpfs(t, "1600k")
	free := func(stderr, after string) int64 { // the bytes free the message names
		t.Helper()
		m := regexp.MustCompile(`; [0-9.]+ [KM]iB \(([0-9]+) bytes\) ` + after).FindStringSubmatch(stderr)
		require.NotNil(t, m, stderr)
		n, err := strconv.ParseInt(m[1], 10, 64)
		require.NoError(t, err)
		return n
	}
	dir := t.TempDir()
	src, _, arch := packedCache(t, dir)
	out := filepath.Join(small, "cache")
	tdir := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	vdir := filepath.Join(out, "P300", "tensor_cache_bfp8")

	code, _, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none")
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "ckpt: cannot write output: checking free space: not enough free space in "+tdir+" (for it and "+vdir+
		", one file system: the model's folders are built together): the build writes 103 file(s), 1.6 MiB (1667200 bytes), and ")
	assert.Contains(t, stderr, " is available; free some, or pass --no-space-check")
	avail := free(strings.Replace(stderr, ", and ", "; ", 1), "is available")
	assert.Greater(t, avail, int64(1558336), "room for the text folder")
	assert.Less(t, avail, int64(1558336+108864), "not for both")
	for _, d := range []string{tdir, vdir} {
		files, err := cache.TensorbinFiles(d)
		require.NoError(t, err)
		assert.Empty(t, files, "nothing written in %s", d)
	}
	require.NoError(t, os.RemoveAll(out))

	code, _, stderr = runApp(t, "cache", "unpack", arch, "-o", out, "--progress", "none")
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "ckpt: cannot write output: unpacking "+arch+": unpacking "+tdir+": the archive's 103 files of the model's two folders (this one and "+vdir+
		", on one file system) need 1.6 MiB (1667200 bytes) together; ")
	assert.Contains(t, stderr, " is free beside the folders (the old copies stay until the new ones are complete)")
	avail = free(stderr, "is free beside")
	assert.Greater(t, avail, int64(1558336), "room for the text folder")
	assert.Less(t, avail, int64(1558336+108864), "not for both")
	ents, err := os.ReadDir(small)
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing is left")
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// folder1x2 is the cache folder of the small fixture's default build,
// visionFolder the folder of its vision tower.
const (
	folder1x2    = "P300/tensor_cache_bfp8_mesh1x2"
	visionFolder = "P300/tensor_cache_bfp8"
)

// packedCache builds the small fixture's cache into dir/cache and packs it
// into dir/cache.tar.zst; it returns the source, the cache root and the
// archive.
func packedCache(t *testing.T, dir string) (src, root, arch string) {
	t.Helper()
	src = filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	root = filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", root, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	arch = filepath.Join(dir, "cache.tar.zst")
	code, _, stderr = runApp(t, "cache", "pack", root, "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	return src, root, arch
}

// writeArchive writes entries as an archive file.
func writeArchive(t *testing.T, path string, entries []cachetest.ArchiveEntry, tail []byte) {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, cachetest.WriteArchive(&b, entries, tail))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
}

// manifestLast puts the manifest (first, as cache pack writes it) last, as
// archives of earlier versions have it.
func manifestLast(entries []cachetest.ArchiveEntry) []cachetest.ArchiveEntry {
	return append(append([]cachetest.ArchiveEntry(nil), entries[1:]...), entries[0])
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := cachetest.SnapshotTree(dir)
	require.NoError(t, err)
	return s
}

// TestCacheUnpackReplacesWholeFolder: unpacking over an existing folder
// leaves nothing of it behind (a stray file, a file of another plan, a
// directory where the archive has a file: all gone, and said so), and
// the result verifies; a bad archive over the same folder leaves it
// exactly as it was, manifest included.
func TestCacheUnpackReplacesWholeFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, root, arch := packedCache(t, dir)
	entries, _, err := cachetest.FolderEntries(root, folder1x2)
	require.NoError(t, err)
	target := filepath.Join(dir, "target")
	code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", target, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	folder := filepath.Join(target, filepath.FromSlash(folder1x2))

	// Stale things in the folder: a file of no plan, and a directory at
	// the path of one of the archive's files.
	require.NoError(t, os.WriteFile(filepath.Join(folder, "stray_dtype_BFLOAT16_layout_TILE.tensorbin"), []byte("old"), 0o644))
	asDir := filepath.Join(target, filepath.FromSlash(entries[1].Name))
	require.NoError(t, os.Remove(asDir))
	require.NoError(t, os.MkdirAll(filepath.Join(asDir, "inner"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(asDir, "inner", "old.tensorbin"), []byte("old"), 0o644))

	// A bad archive (the last file's data changed, the manifest honest):
	// refused, the folder as it was.
	bad := append([]cachetest.ArchiveEntry(nil), entries...)
	last := &bad[len(bad)-1]
	last.Data = bytes.Clone(last.Data)
	last.Data[len(last.Data)-1] ^= 0x40
	badArch := filepath.Join(dir, "bad.tar.zst")
	writeArchive(t, badArch, manifestLast(bad), nil)
	before := snapshot(t, target)
	code, _, stderr = runApp(t, "cache", "unpack", badArch, "-o", target, "--progress", "none")
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, last.Name+"\": data hash")
	assert.Equal(t, before, snapshot(t, target), "the existing folder, manifest included, is as it was")

	// The honest archive replaces the folder as a whole.
	code, stdout, stderr := runApp(t, "cache", "unpack", arch, "-o", target, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "unpacked 82 files")
	assert.Contains(t, stdout, "into "+folder+" and 21 files (106.3 KiB) into its vision folder "+filepath.Join(filepath.Dir(folder), "tensor_cache_bfp8")+
		": all match the archive's manifests; their data was not compared with any source")
	assert.Contains(t, stdout, "replaced the folder's earlier contents (2 files that the archive does not hold are gone)")
	assert.NoFileExists(t, filepath.Join(folder, "stray_dtype_BFLOAT16_layout_TILE.tensorbin"))
	assert.FileExists(t, asDir, "the archive's file, where a directory was")
	code, stdout, _ = runApp(t, "cache", "verify", folder, "--source", src, "--progress", "none") // the folder: the archive holds no vision folder
	assert.Equal(t, 0, code, stdout)
	ents, err := os.ReadDir(filepath.Dir(folder))
	require.NoError(t, err)
	require.Len(t, ents, 2, "no staging folder or old copy is left beside the folders: %v", ents)
	assert.Equal(t, []string{"tensor_cache_bfp8", "tensor_cache_bfp8_mesh1x2"}, []string{ents[0].Name(), ents[1].Name()})
}

// TestCacheUnpackTrustsNoFolderName: the folder written is the one the
// user names. Named as a folder, the archive must hold that folder; an
// archive whose manifest names another mesh's folder than its own mesh
// says is refused, and the other folder keeps its files.
func TestCacheUnpackTrustsNoFolderName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, root, arch := packedCache(t, dir)
	code, _, stderr := runApp(t, "cache", "build", src, "--out", root, "--mesh", "1x1", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	other := filepath.Join(root, "P150", "tensor_cache_bfp8_mesh1x1")
	before := snapshot(t, root)

	// Named as the folder of another mesh: refused, nothing written.
	code, _, stderr = runApp(t, "cache", "unpack", arch, "-o", other, "--progress", "none")
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "the archive holds cache folders "+folder1x2+" and "+visionFolder+" (one model), not P150/tensor_cache_bfp8_mesh1x1 (named by "+other+")")
	assert.Equal(t, before, snapshot(t, root))

	// Named as its own folder: written there (not nested under it).
	named := filepath.Join(dir, "elsewhere", filepath.FromSlash(folder1x2))
	code, stdout, stderr := runApp(t, "cache", "unpack", arch, "-o", named, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "into "+named+" and 21 files")
	require.FileExists(t, filepath.Join(named, cache.ManifestName))
	require.FileExists(t, filepath.Join(filepath.Dir(named), "tensor_cache_bfp8", cache.ManifestName), "the vision folder beside it")
	code, stdout, _ = runApp(t, "cache", "verify", named, "--source", src, "--progress", "none")
	assert.Equal(t, 0, code, stdout)

	// The 1x2 archive relabelled as the 1x1 folder (cache_dir and paths
	// rewritten, hashes intact): refused, the 1x1 folder untouched.
	entries, m, err := cachetest.FolderEntries(root, folder1x2)
	require.NoError(t, err)
	const to = "P150/tensor_cache_bfp8_mesh1x1"
	m.CacheDir = to
	for i := range m.Files {
		m.Files[i].Path = strings.Replace(m.Files[i].Path, folder1x2, to, 1)
	}
	entries[0] = cachetest.ManifestEntry(m)
	for i := range entries[1:] {
		entries[i+1].Name = strings.Replace(entries[i+1].Name, folder1x2, to, 1)
	}
	relabelled := filepath.Join(dir, "relabelled.tar.zst")
	writeArchive(t, relabelled, manifestLast(entries), nil)
	code, _, stderr = runApp(t, "cache", "unpack", relabelled, "-o", root, "--progress", "none")
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, `bad archive: entry "manifest.json": cache_dir "P150/tensor_cache_bfp8_mesh1x1" is not the folder of its device "P300", tag "bfp8" and mesh 1x2`)
	assert.Equal(t, before, snapshot(t, root), "the other mesh's folder keeps its files and manifest")
	code, stdout, _ = runApp(t, "cache", "verify", other, "--source", src, "--progress", "none")
	assert.Equal(t, 0, code, stdout)
}

// TestCacheUnpackTakesLock: an unpack into a folder another process is
// changing is refused (exit 2, naming the holder) and changes nothing.
func TestCacheUnpackTakesLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, root, arch := packedCache(t, dir)
	folder := filepath.Join(root, filepath.FromSlash(folder1x2))
	lock, err := cache.LockFolder(folder)
	require.NoError(t, err)
	defer lock.Release()
	before := snapshot(t, root)
	code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", root, "--progress", "none")
	require.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "is being changed by another process (pid ")
	assert.Equal(t, before, snapshot(t, root))
}

// TestCacheUnpackTakesNamedFolderLock: an unpack into a cache folder
// named as such (-o DEVICE/tensor_cache_...), which another process holds
// locked, is refused (exit 2, naming the holder) and the folder is
// untouched. (Before: the archive's folder was nested under the named one
// and only that nested folder was locked: the files went into the locked
// folder.)
func TestCacheUnpackTakesNamedFolderLock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, root, arch := packedCache(t, dir)
	folder := filepath.Join(root, filepath.FromSlash(folder1x2))
	lock, err := cache.LockFolder(folder)
	require.NoError(t, err)
	defer lock.Release()
	before := snapshot(t, root)
	code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", folder, "--progress", "none")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "is being changed by another process (pid ")
	assert.Equal(t, before, snapshot(t, root), "the locked folder is untouched")
}

// TestCacheUnpackBombIsBadArchive: archives of ~150 KB that declare a
// 4 GiB entry are refused as bad archives naming the entry (exit 2, not
// 3), before anything of it is written.
func TestCacheUnpackBombIsBadArchive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, root, _ := packedCache(t, dir)
	entries, m, err := cachetest.FolderEntries(root, folder1x2)
	require.NoError(t, err)
	name := entries[1].Name
	// One of the manifest's files declared at 4 GiB.
	bomb1 := []cachetest.ArchiveEntry{entries[0], {Name: name, Size: 4 << 30}}
	// The manifest agreeing (size recomputed for 4 GiB of zeros).
	m.Files[0].Size, m.Files[0].HeaderSize = 4<<30, 0
	bomb2 := []cachetest.ArchiveEntry{cachetest.ManifestEntry(m), {Name: name, Size: 4 << 30}}
	// No manifest before it (as an earlier ckpt wrote archives: last).
	bomb3 := []cachetest.ArchiveEntry{{Name: name, Size: 4 << 30}}
	for i, es := range [][]cachetest.ArchiveEntry{bomb1, bomb2, bomb3} {
		arch := filepath.Join(dir, "bomb.tar.zst")
		writeArchive(t, arch, es, cachetest.ZeroFrame(4<<30))
		st, err := os.Stat(arch)
		require.NoError(t, err)
		require.Less(t, st.Size(), int64(1<<20))
		out := filepath.Join(dir, "out")
		code, _, stderr := runApp(t, "cache", "unpack", arch, "-o", out, "--progress", "none")
		assert.Equal(t, 2, code, "bomb %d: %s", i+1, stderr)
		assert.Contains(t, stderr, "bad archive: entry \""+name+"\"", "bomb %d", i+1)
		assert.NotContains(t, stderr, "cannot write output")
		assert.NoDirExists(t, out, "bomb %d: nothing written", i+1)
	}
}

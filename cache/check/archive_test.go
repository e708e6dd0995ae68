package check_test

// Build, then pack or unpack, then verify: the tests of cache/archive that
// end in a verify, or need a build, moved here (cache/archive sits below
// cache/build and cache/check). They use verify_test.go's built and verify.

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// archiveBytes writes entries as an archive (cachetest.WriteArchive).
func archiveBytes(t testing.TB, entries []cachetest.ArchiveEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, cachetest.WriteArchive(&b, entries, nil))
	return b.Bytes()
}

func TestPackUnpack(t *testing.T) {
	t.Parallel()
	src, out, _ := built(t)
	var arch bytes.Buffer
	p, err := archive.Write(context.Background(), out, &arch, archive.WriteOptions{Workers: 2})
	require.NoError(t, err)
	m := p.Manifest

	dest := filepath.Join(t.TempDir(), "shipped")
	u, err := archive.Extract(context.Background(), bytes.NewReader(arch.Bytes()), dest, archive.ExtractOptions{})
	require.NoError(t, err)
	require.Equal(t, m.Files, u.Manifest.Files)
	for _, f := range m.Files {
		a, err := os.ReadFile(filepath.Join(out, f.Path))
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(dest, f.Path))
		require.NoError(t, err)
		require.True(t, bytes.Equal(a, b), f.Path)
	}
	require.True(t, verify(t, src, dest, check.FilesOptions{}).OK())

	// Damaged archives never yield a complete-looking cache.
	damaged := map[string][]byte{
		"truncated": arch.Bytes()[:arch.Len()*2/3],
		"no-tail":   arch.Bytes()[:arch.Len()-40],
	}
	flipped := bytes.Clone(arch.Bytes())
	flipped[len(flipped)/2] ^= 0x10
	damaged["flipped"] = flipped
	for name, b := range damaged {
		d := filepath.Join(t.TempDir(), name)
		_, err := archive.Extract(context.Background(), bytes.NewReader(b), d, archive.ExtractOptions{})
		require.Error(t, err, name)
		_, err = os.Stat(d)
		require.ErrorIs(t, err, os.ErrNotExist, "%s: the unpack leaves nothing behind, not even the root it created", name)
	}
}

// TestUnpackLegacyOrder: an archive of an earlier ckpt (manifest last) is
// still read from a file (twice: the manifest first, then the files).
func TestUnpackLegacyOrder(t *testing.T) {
	t.Parallel()
	src, out, plan := built(t)
	entries, m, err := cachetest.FolderEntries(out, plan.CacheDir)
	require.NoError(t, err)
	legacy := append(entries[1:], entries[0])
	dest := filepath.Join(t.TempDir(), "shipped")
	u, err := archive.Extract(context.Background(), bytes.NewReader(archiveBytes(t, legacy)), dest, archive.ExtractOptions{Archive: "/x/old.tar.zst"})
	require.NoError(t, err)
	assert.Equal(t, m.Files, u.Manifest.Files)
	require.NotNil(t, u.Manifest.Unpacked)
	assert.Equal(t, "old.tar.zst", u.Manifest.Unpacked.Archive, "the archive's base name is recorded")
	got, err := cache.ReadManifest(u.Folder.Path())
	require.NoError(t, err)
	assert.Equal(t, u.Manifest.Unpacked.Archive, got.Unpacked.Archive)
	require.True(t, verify(t, src, dest, check.FilesOptions{}).OK())
}

// TestPackRefusesDamagedVisionFile: the files of the vision folder packed
// with its text folder are held against their manifest's hashes and size
// too: a flipped byte or a truncated file is refused naming the file, and
// no archive is left at -o, whichever folder was named.
func TestPackRefusesDamagedVisionFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	rep, err := build.Run(ctx, build.Options{Source: src, Out: out})
	require.NoError(t, err)
	require.NotNil(t, rep.Plan.Vision)
	vm, err := cache.ReadManifest(cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path())
	require.NoError(t, err)
	victim := filepath.Join(out, filepath.FromSlash(vm.Files[len(vm.Files)-1].Path))
	orig, err := os.ReadFile(victim)
	require.NoError(t, err)
	for name, damaged := range map[string][]byte{
		"flipped":   append(append([]byte(nil), orig[:len(orig)-1]...), orig[len(orig)-1]^1),
		"truncated": orig[:len(orig)-1],
	} {
		require.NoError(t, os.WriteFile(victim, damaged, 0o644))
		for _, dir := range []string{out, cache.FolderOf(out, rep.Plan.CacheDir).Path(), cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()} {
			file := filepath.Join(t.TempDir(), "model.tar.zst")
			_, err := archive.Pack(ctx, archive.PackOptions{Dir: dir, Out: file})
			require.Error(t, err, "%s, %s", name, dir)
			assert.Contains(t, err.Error(), victim, name)
			assert.NoFileExists(t, file, "no archive is left")
		}
	}
}

// Pack writes the archive into place and says what it holds;
// Unpack counts the archive bytes it reads and places every file.
func TestPackUnpackWorkflow(t *testing.T) {
	t.Parallel()
	src, out, _ := built(t)
	file := filepath.Join(t.TempDir(), "cache.tar.zst")
	prog := ckpt.NewProgress()
	pr, err := archive.Pack(context.Background(), archive.PackOptions{Dir: out, Out: file, WriteOptions: archive.WriteOptions{Workers: 2, Progress: prog}})
	require.NoError(t, err)
	st, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), pr.ArchiveBytes)
	assert.Equal(t, file, pr.Out)
	var total int64
	for _, f := range pr.Manifest.Files {
		total += f.Size
	}
	assert.Equal(t, total, pr.Bytes)
	done, want, _ := prog.Snapshot()
	assert.Equal(t, total, want)
	assert.Equal(t, total, done)

	dest := filepath.Join(t.TempDir(), "shipped")
	prog = ckpt.NewProgress()
	ur, err := archive.Unpack(context.Background(), archive.UnpackOptions{File: file, Dir: dest, Progress: prog})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dest, "P300", "tensor_cache_bfp8_mesh1x2"), ur.Dir, "the folder written")
	assert.Equal(t, total, ur.Bytes)
	assert.Equal(t, pr.Manifest.Files, ur.Manifest.Files)
	done, want, _ = prog.Snapshot()
	assert.Equal(t, st.Size(), want, "the total is the archive's size")
	assert.Equal(t, st.Size(), done)
	require.True(t, verify(t, src, dest, check.FilesOptions{}).OK())
}

// archiveNames lists the entries of an archive file, in order.
func archiveNames(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	zr, err := zstd.NewReader(f)
	require.NoError(t, err)
	defer zr.Close()
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		require.NoError(t, err)
		names = append(names, h.Name)
	}
}

// A vision model's two folders are one model and one archive: packing
// its cache root, its device folder, its text folder or its vision folder
// writes the same entries — the text folder's manifest, the vision
// folder's (<its cache_dir>/manifest.json), the text folder's files, the
// vision folder's — and unpacking it places both, which verify as the
// model, data included. (Before: the archive held one folder, and the
// vision folder needed an archive of its own.)
func TestPackUnpackVisionModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	rep, err := build.Run(ctx, build.Options{Source: src, Out: out})
	require.NoError(t, err)
	require.NotNil(t, rep.Plan.Vision)
	tdir := cache.FolderOf(out, rep.Plan.CacheDir).Path()
	vdir := cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()
	tm, err := cache.ReadManifest(tdir)
	require.NoError(t, err)
	vm, err := cache.ReadManifest(vdir)
	require.NoError(t, err)
	want := []string{cache.ManifestName, rep.Plan.Vision.CacheDir + "/" + cache.ManifestName}
	for _, f := range tm.Files {
		want = append(want, f.Path)
	}
	for _, f := range vm.Files {
		want = append(want, f.Path)
	}

	for _, dir := range []string{out, filepath.Join(out, "P300"), tdir, vdir} {
		file := filepath.Join(t.TempDir(), "model.tar.zst")
		pr, err := archive.Pack(ctx, archive.PackOptions{Dir: dir, Out: file})
		require.NoError(t, err, dir)
		assert.Equal(t, rep.Plan.CacheDir, pr.Manifest.CacheDir, "%s: the text folder first", dir)
		require.NotNil(t, pr.Companion, dir)
		assert.Equal(t, rep.Plan.Vision.CacheDir, pr.Companion.CacheDir)
		assert.Equal(t, tdir, pr.Folder.Path())
		assert.Equal(t, vdir, pr.CompanionFolder.Path())
		assert.Empty(t, pr.Missing)
		assert.Empty(t, pr.Warnings)
		assert.Equal(t, filesSize(tm), pr.Bytes)
		assert.Equal(t, filesSize(vm), pr.CompanionBytes)
		assert.Equal(t, want, archiveNames(t, file), dir)

		dest := filepath.Join(t.TempDir(), "shipped")
		ur, err := archive.Unpack(ctx, archive.UnpackOptions{File: file, Dir: dest})
		require.NoError(t, err)
		assert.Equal(t, cache.FolderOf(dest, rep.Plan.CacheDir).Path(), ur.Dir)
		assert.Equal(t, cache.FolderOf(dest, rep.Plan.Vision.CacheDir).Path(), ur.CompanionDir)
		assert.Equal(t, filesSize(tm), ur.Bytes)
		assert.Equal(t, filesSize(vm), ur.CompanionBytes)
		assert.Empty(t, ur.Missing)
		res, err := check.Run(ctx, check.Options{Dir: dest, Source: src, ReadData: true})
		require.NoError(t, err)
		assert.True(t, res.OK, "%+v", res)
		assert.Len(t, res.Folders, 2, "both folders are there and checked")
	}
}

func filesSize(m *cache.Manifest) int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// A companion that cannot go into the archive — absent, an unfinished
// build, or a folder whose manifest does not name this one back — is
// left out: the folder is packed alone, Missing names the companion and
// a warning says why; the archive unpacks as that folder alone, saying
// which folder it lacks. The vision folder whose text folder is missing
// packs alone the same way.
func TestPackVisionModelCompanionMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	base := filepath.Join(t.TempDir(), "cache")
	rep, err := build.Run(ctx, build.Options{Source: src, Out: base})
	require.NoError(t, err)
	tdirOf := func(root string) string { return cache.FolderOf(root, rep.Plan.CacheDir).Path() }
	vdirOf := func(root string) string { return cache.FolderOf(root, rep.Plan.Vision.CacheDir).Path() }
	cases := []struct {
		name   string
		damage func(root string)
		pack   func(root string) string // the folder packed
		why    string
	}{
		{"vision folder absent", func(root string) { require.NoError(t, os.RemoveAll(vdirOf(root))) }, tdirOf, "it does not exist"},
		{"vision build unfinished", func(root string) {
			require.NoError(t, os.Remove(filepath.Join(vdirOf(root), cache.ManifestName)))
			require.NoError(t, os.WriteFile(filepath.Join(vdirOf(root), cache.JournalName), nil, 0o644))
		}, tdirOf, "is an unfinished build"},
		{"vision folder of another model", func(root string) {
			m, err := cache.ReadManifest(vdirOf(root))
			require.NoError(t, err)
			m.Companion = "P300/tensor_cache_bfp8_mesh1x1"
			require.NoError(t, cache.WriteManifest(vdirOf(root), m))
		}, tdirOf, `names "P300/tensor_cache_bfp8_mesh1x1" as its companion`},
		{"text folder absent", func(root string) { require.NoError(t, os.RemoveAll(tdirOf(root))) }, vdirOf, "it does not exist"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "cache")
			require.NoError(t, cachetest.CopyTree(base, root))
			tc.damage(root)
			packed := tc.pack(root)
			other := vdirOf(root)
			if packed == other {
				other = tdirOf(root)
			}
			file := filepath.Join(t.TempDir(), "alone.tar.zst")
			pr, err := archive.Pack(ctx, archive.PackOptions{Dir: packed, Out: file})
			require.NoError(t, err)
			assert.Nil(t, pr.Companion)
			assert.Equal(t, packed, pr.Folder.Path())
			assert.Equal(t, other, pr.Missing)
			require.Len(t, pr.Warnings, 1)
			assert.Contains(t, pr.Warnings[0], "the model's other folder "+other+" is not in the archive: ")
			assert.Contains(t, pr.Warnings[0], tc.why)
			assert.Contains(t, pr.Warnings[0], "the archive holds "+packed+" alone")
			names := archiveNames(t, file)
			assert.Len(t, names, 1+len(pr.Manifest.Files), "one manifest and its files")

			dest := filepath.Join(t.TempDir(), "shipped")
			ur, err := archive.Unpack(ctx, archive.UnpackOptions{File: file, Dir: dest})
			require.NoError(t, err)
			assert.Nil(t, ur.Companion)
			assert.Equal(t, cache.FolderOf(dest, pr.Manifest.CacheDir).Path(), ur.Dir)
			assert.Equal(t, cache.FolderOf(dest, pr.Manifest.Companion).Path(), ur.Missing)
			assert.NoDirExists(t, ur.Missing)
		})
	}
}

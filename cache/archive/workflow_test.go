package archive_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
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

func TestPackUnpackRequestErrors(t *testing.T) {
	t.Parallel()
	err := archive.PackRequest{Dir: "d"}.Validate()
	require.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
	assert.Equal(t, "cache pack needs -o/--out FILE.tar.zst", err.Error())
	_, err = archive.PackFile(context.Background(), archive.PackRequest{Dir: "d"})
	assert.Equal(t, "cache pack needs -o/--out FILE.tar.zst", err.Error())

	missing := filepath.Join(t.TempDir(), "missing.tar.zst")
	err = archive.UnpackRequest{File: missing}.Validate()
	require.True(t, errors.Is(err, ckpt.ErrUsage), "%v", err)
	assert.Equal(t, "cache unpack needs -o/--out DIR", err.Error())
	_, err = archive.UnpackFile(context.Background(), archive.UnpackRequest{File: missing})
	assert.Equal(t, "cache unpack needs -o/--out DIR", err.Error(), "refused before the archive is opened")
}

// PackFile writes the archive into place and says what it holds;
// UnpackFile counts the archive bytes it reads and places every file.
func TestPackFileUnpackFile(t *testing.T) {
	t.Parallel()
	src, out, _ := built(t)
	file := filepath.Join(t.TempDir(), "cache.tar.zst")
	prog := ckpt.NewProgress()
	pr, err := archive.PackFile(context.Background(), archive.PackRequest{Dir: out, Out: file, PackOptions: archive.PackOptions{Workers: 2, Progress: prog}})
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
	ur, err := archive.UnpackFile(context.Background(), archive.UnpackRequest{File: file, Dir: dest, Progress: prog})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dest, "P300", "tensor_cache_bfp8_mesh1x2"), ur.Dir, "the folder written")
	assert.Equal(t, total, ur.Bytes)
	assert.Equal(t, pr.Manifest.Files, ur.Manifest.Files)
	done, want, _ = prog.Snapshot()
	assert.Equal(t, st.Size(), want, "the total is the archive's size")
	assert.Equal(t, st.Size(), done)
	require.True(t, verify(t, src, dest, check.FilesOptions{}).OK())
}

// A failed pack leaves no file at Out; a failed unpack names the archive.
func TestPackFileUnpackFileErrors(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "cache.tar.zst")
	_, err := archive.PackFile(context.Background(), archive.PackRequest{Dir: t.TempDir(), Out: file})
	require.Error(t, err)
	_, err = os.Stat(file)
	assert.True(t, os.IsNotExist(err), "no archive is left: %v", err)

	require.NoError(t, os.WriteFile(file, []byte("not zstd"), 0o644))
	_, err = archive.UnpackFile(context.Background(), archive.UnpackRequest{File: file, Dir: t.TempDir()})
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "unpacking "+file+": "), err.Error())
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
		pr, err := archive.PackFile(ctx, archive.PackRequest{Dir: dir, Out: file})
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
		ur, err := archive.UnpackFile(ctx, archive.UnpackRequest{File: file, Dir: dest})
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
			pr, err := archive.PackFile(ctx, archive.PackRequest{Dir: packed, Out: file})
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
			ur, err := archive.UnpackFile(ctx, archive.UnpackRequest{File: file, Dir: dest})
			require.NoError(t, err)
			assert.Nil(t, ur.Companion)
			assert.Equal(t, cache.FolderOf(dest, pr.Manifest.CacheDir).Path(), ur.Dir)
			assert.Equal(t, cache.FolderOf(dest, pr.Manifest.Companion).Path(), ur.Missing)
			assert.NoDirExists(t, ur.Missing)
		})
	}
}

package archive_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
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
	require.True(t, verify(t, src, dest, check.VerifyOptions{}).OK())
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

// A vision model's two folders: an archive holds one folder, so packing
// the model's root packs its text folder and names the vision folder
// (PackResult.Companion); the vision folder packs and unpacks on its own
// (its manifest's cache_dir is named without the mesh: unpack refused it
// before); the text folder unpacked alone verifies alone, and with both
// unpacked the model verifies as two folders, data included.
func TestPackUnpackVisionModel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	rep, err := build.RunSource(ctx, build.Request{Source: src, Out: out})
	require.NoError(t, err)
	require.NotNil(t, rep.Plan.Vision)
	vdir := cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()

	textFile := filepath.Join(t.TempDir(), "text.tar.zst")
	pr, err := archive.PackFile(ctx, archive.PackRequest{Dir: out, Out: textFile})
	require.NoError(t, err)
	assert.Equal(t, rep.Plan.CacheDir, pr.Manifest.CacheDir, "the root packs the text folder")
	assert.Equal(t, vdir, pr.Companion)
	visionFile := filepath.Join(t.TempDir(), "vision.tar.zst")
	pv, err := archive.PackFile(ctx, archive.PackRequest{Dir: vdir, Out: visionFile})
	require.NoError(t, err)
	assert.Equal(t, rep.Plan.Vision.CacheDir, pv.Manifest.CacheDir)
	assert.Equal(t, cache.FolderOf(out, rep.Plan.CacheDir).Path(), pv.Companion)

	dest := filepath.Join(t.TempDir(), "shipped")
	_, err = archive.UnpackFile(ctx, archive.UnpackRequest{File: textFile, Dir: dest})
	require.NoError(t, err)
	res, err := check.RunAll(ctx, check.Request{Dir: dest, Source: src})
	require.NoError(t, err)
	assert.True(t, res.OK, "the text folder unpacked alone checks alone: %+v", res)
	require.Len(t, res.Folders, 1)

	ur, err := archive.UnpackFile(ctx, archive.UnpackRequest{File: visionFile, Dir: dest})
	require.NoError(t, err)
	assert.Equal(t, cache.FolderOf(dest, rep.Plan.Vision.CacheDir).Path(), ur.Dir)
	res, err = check.RunAll(ctx, check.Request{Dir: dest, Source: src, ReadData: true})
	require.NoError(t, err)
	assert.True(t, res.OK, "%+v", res)
	assert.Len(t, res.Folders, 2)
}

package build_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreeSpaceChecked: a build whose files do not fit the free space of
// the cache folder's file system fails before any file is written, with
// the numbers, as a write failure (exit 3); NoSpaceCheck builds anyway;
// a rebuild with nothing to write needs no room; statfs is the default.
// The small fixture is a vision model: its 82 text and 21 vision files
// are counted together.
func TestFreeSpaceChecked(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	var asked string
	tiny := func(dir string) (int64, error) { asked = dir; return 1000, nil }
	req := build.Options{Source: src, Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: mapping.DefaultMesh}, Out: out,
		WriteOptions: build.WriteOptions{Workers: 2, Tool: "test", FreeSpace: tiny}}
	_, err := build.Run(context.Background(), req)
	require.Error(t, err)
	assert.ErrorIs(t, err, atomicfile.ErrWrite)
	var ns *build.NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	assert.Equal(t, int64(1000), ns.Avail)
	assert.Greater(t, ns.Need, int64(1000))
	assert.Equal(t, 103, ns.Files)
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	vision := filepath.Join(out, "P300", "tensor_cache_bfp8")
	assert.Equal(t, folder, asked)
	assert.Equal(t, []string{vision}, ns.Also)
	assert.Contains(t, err.Error(), "not enough free space in "+folder+" (for it and "+vision+", one file system: the model's folders are built together): the build writes 103 file(s), ")
	assert.Contains(t, err.Error(), "and 1000 B (1000 bytes) is available; free some, or pass Options.NoSpaceCheck")
	req.Words = ckpt.Words{"NoSpaceCheck": "--no-space-check"} // the caller's words (the CLI's)
	_, err = build.Run(context.Background(), req)
	assert.Contains(t, err.Error(), "and 1000 B (1000 bytes) is available; free some, or pass --no-space-check")
	req.Words = nil
	for _, dir := range []string{folder, vision} {
		ents, err := filepath.Glob(filepath.Join(dir, "*.tensorbin"))
		require.NoError(t, err)
		assert.Empty(t, ents, "nothing written")
	}

	req.NoSpaceCheck = true
	_, err = build.Run(context.Background(), req)
	require.NoError(t, err)
	// nothing to rebuild: no room needed
	req.NoSpaceCheck = false
	rep, err := build.Run(context.Background(), req)
	require.NoError(t, err)
	assert.Empty(t, rep.Document.Built)

	// the file system's own free space (statfs): a small build fits
	req.FreeSpace = nil
	req.Out = filepath.Join(t.TempDir(), "cache2")
	_, err = build.Run(context.Background(), req)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(req.Out, "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))
	require.NoError(t, err)
}

// TestFreeSpaceCheckedBothFolders: a vision model's build is refused up
// front when the free space holds its text folder and its vision folder
// each, but not both together: nothing is written in either folder, and
// the error names the folder, both sizes and the other folder. (Before:
// each part was checked alone, so both were built.) A rebuild that has
// only the vision folder to write needs room for that folder alone.
func TestFreeSpaceCheckedBothFolders(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	plan := mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: mapping.DefaultMesh}
	// The sizes of both folders, from a build with room.
	scratch := filepath.Join(t.TempDir(), "scratch")
	rep, err := build.Run(context.Background(), build.Options{Source: src, Plan: plan, Out: scratch, WriteOptions: build.WriteOptions{Workers: 2, Tool: "test"}})
	require.NoError(t, err)
	require.NotNil(t, rep.Document.Vision)
	size := func(dir string) int64 {
		m, err := cache.ReadManifest(filepath.Join(scratch, filepath.FromSlash(dir)))
		require.NoError(t, err)
		var n int64
		for _, f := range m.Files {
			n += f.Size
		}
		return n
	}
	text, vision := size(rep.Plan.CacheDir), size(rep.Plan.Vision.CacheDir)
	room := text + vision - 1
	require.Greater(t, room, text)
	require.Greater(t, room, vision)

	out := filepath.Join(t.TempDir(), "cache")
	free := func(string) (int64, error) { return room, nil }
	req := build.Options{Source: src, Plan: plan, Out: out, WriteOptions: build.WriteOptions{Workers: 2, Tool: "test", FreeSpace: free}}
	_, err = build.Run(context.Background(), req)
	require.Error(t, err)
	assert.ErrorIs(t, err, atomicfile.ErrWrite)
	var ns *build.NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	tdir := filepath.Join(out, filepath.FromSlash(rep.Plan.CacheDir))
	vdir := filepath.Join(out, filepath.FromSlash(rep.Plan.Vision.CacheDir))
	assert.Equal(t, tdir, ns.Dir)
	assert.Equal(t, []string{vdir}, ns.Also)
	assert.Equal(t, text+vision, ns.Need)
	assert.Equal(t, room, ns.Avail)
	assert.Contains(t, err.Error(), fmt.Sprintf("the build writes 103 file(s), %s (%d bytes), and %s (%d bytes) is available",
		ckpt.FormatBytes(text+vision), text+vision, ckpt.FormatBytes(room), room))
	for _, dir := range []string{tdir, vdir} {
		var files []string
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		assert.Empty(t, files, "nothing written in %s", dir)
	}

	// Built with room; then only the vision folder is missing: its own
	// size is what the rebuild needs.
	req.FreeSpace = nil
	_, err = build.Run(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, os.RemoveAll(vdir))
	req.FreeSpace = func(string) (int64, error) { return vision - 1, nil }
	_, err = build.Run(context.Background(), req)
	require.True(t, errors.As(err, &ns), "%v", err)
	assert.Equal(t, vdir, ns.Dir)
	assert.Empty(t, ns.Also)
	assert.Equal(t, vision, ns.Need)
	req.FreeSpace = func(string) (int64, error) { return vision, nil }
	_, err = build.Run(context.Background(), req)
	require.NoError(t, err)
}

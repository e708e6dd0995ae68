package build_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFreeSpaceChecked: a build whose files do not fit the free space of
// the cache folder's file system fails before any file is written, with
// the numbers, as a write failure (exit 3); NoSpaceCheck builds anyway;
// a rebuild with nothing to write needs no room; statfs is the default.
func TestFreeSpaceChecked(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(t.TempDir(), "cache")
	var asked string
	tiny := func(dir string) (int64, error) { asked = dir; return 1000, nil }
	req := build.Request{Source: src, Plan: mapping.PlanOptions{Profile: mapping.BuiltinName, Mesh: "1x2"}, Out: out,
		Options: build.Options{Workers: 2, Tool: "test", FreeSpace: tiny}}
	_, err := build.RunSource(context.Background(), req)
	require.Error(t, err)
	assert.ErrorIs(t, err, ckpt.ErrWrite)
	var ns *build.NoSpaceError
	require.True(t, errors.As(err, &ns), "%v", err)
	assert.Equal(t, int64(1000), ns.Avail)
	assert.Greater(t, ns.Need, int64(1000))
	assert.Equal(t, 82, ns.Files)
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	assert.Equal(t, folder, asked)
	assert.Contains(t, err.Error(), "not enough free space in "+folder+": the build writes 82 file(s), ")
	assert.Contains(t, err.Error(), "and 1000 B (1000 bytes) is available; free some, or pass --no-space-check")
	ents, err := filepath.Glob(filepath.Join(folder, "*.tensorbin"))
	require.NoError(t, err)
	assert.Empty(t, ents, "nothing written")

	req.NoSpaceCheck = true
	_, err = build.RunSource(context.Background(), req)
	require.NoError(t, err)
	// nothing to rebuild: no room needed
	req.NoSpaceCheck = false
	rep, err := build.RunSource(context.Background(), req)
	require.NoError(t, err)
	assert.Empty(t, rep.Summary.Built)

	// the file system's own free space (statfs): a small build fits
	req.FreeSpace = nil
	req.Out = filepath.Join(t.TempDir(), "cache2")
	_, err = build.RunSource(context.Background(), req)
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(req.Out, "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))
	require.NoError(t, err)
}

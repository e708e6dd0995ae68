package archive_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			_, err := archive.PackFile(ctx, archive.PackRequest{Dir: dir, Out: file})
			require.Error(t, err, "%s, %s", name, dir)
			assert.Contains(t, err.Error(), victim, name)
			assert.NoFileExists(t, file, "no archive is left")
		}
	}
}

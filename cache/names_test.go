package cache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/stretchr/testify/require"
)

// TestTempNames: the temporary files of atomicfile (build outputs, the
// manifest) and an unpack's staging folder are temporary names; the
// folder's own files and cache files are not.
func TestTempNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, target := range []string{cache.ManifestName, "layers.0.weight_dtype_BFLOAT8_B_layout_TILE.tensorbin"} {
		f, err := atomicfile.Create(filepath.Join(dir, target))
		require.NoError(t, err)
		defer f.Abort()
		require.True(t, cache.IsTempName(filepath.Base(f.Name())), f.Name())
	}
	tmp, err := os.MkdirTemp(dir, ".unpack-")
	require.NoError(t, err)
	require.True(t, cache.IsTempName(filepath.Base(tmp)))
	for _, n := range []string{cache.ManifestName, cache.JournalName, cache.LockName, "a.tensorbin", "tmp-a"} {
		require.False(t, cache.IsTempName(n), n)
	}
}

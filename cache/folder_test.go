package cache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResolveFolderFromInside: a cache folder named from inside its device
// folder (`cd P300; ckpt cache identify tensor_cache_bfp8_mesh1x2`) or via
// .. is the device's folder, not ".". Before, its device was "." (and a
// plan made for it named device ".").
func TestResolveFolderFromInside(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "P300")
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "tensor_cache_bfp8_mesh1x2"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dev, "sub"), 0o755))
	t.Chdir(dev)
	for _, dir := range []string{"tensor_cache_bfp8_mesh1x2", "./tensor_cache_bfp8_mesh1x2", "sub/../tensor_cache_bfp8_mesh1x2"} {
		f, err := cache.ResolveFolder(dir, cache.Selector{})
		require.NoError(t, err, dir)
		assert.Equal(t, "P300", f.Device(), dir)
		assert.Equal(t, "1x2", f.Mesh(), dir)
	}
	t.Chdir(filepath.Join(dev, "sub"))
	f, err := cache.ResolveFolder("../tensor_cache_bfp8_mesh1x2", cache.Selector{Device: "P300"})
	require.NoError(t, err)
	assert.Equal(t, "P300", f.Device())
	st, err := os.Stat(f.Path())
	require.NoError(t, err)
	assert.True(t, st.IsDir())
}

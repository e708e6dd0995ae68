package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/stretchr/testify/require"
)

// TestPackRefusesDamagedCache: pack checks hashes while reading (of a
// hand-made finished folder: the build-pack-verify tests are cache/check's).
func TestPackRefusesDamagedCache(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "cache")
	m, err := cachetest.WriteTinyFolder(out, 6)
	require.NoError(t, err)
	p := filepath.Join(out, filepath.FromSlash(m.Files[5].Path))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, err = archive.Write(context.Background(), out, &bytes.Buffer{}, archive.WriteOptions{})
	require.ErrorContains(t, err, "data hash")
}

package archive_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// built writes the small fixture, builds its cache and returns the
// source dir, cache root and plan.
func built(t *testing.T) (string, string, *mapping.Plan) {
	t.Helper()
	src, c, plan := cachetest.Fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	return src, out, plan
}

// verify reopens the source and verifies the cache.
func verify(t *testing.T, src, out string, opt check.FilesOptions) *check.FilesReport {
	t.Helper()
	c, plan := cachetest.OpenPlan(t, src)
	m, err := cache.ReadManifest(cache.FolderOf(out, plan.CacheDir).Path())
	require.NoError(t, err)
	rep, err := check.Files(context.Background(), out, m, c, plan, opt)
	require.NoError(t, err)
	return rep
}

func TestPackUnpack(t *testing.T) {
	t.Parallel()
	src, out, _ := built(t)
	var arch bytes.Buffer
	p, err := archive.Pack(context.Background(), out, &arch, archive.PackOptions{Workers: 2})
	require.NoError(t, err)
	m := p.Manifest

	dest := filepath.Join(t.TempDir(), "shipped")
	u, err := archive.Unpack(context.Background(), bytes.NewReader(arch.Bytes()), dest, archive.UnpackOptions{})
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
		_, err := archive.Unpack(context.Background(), bytes.NewReader(b), d, archive.UnpackOptions{})
		require.Error(t, err, name)
		_, err = os.Stat(d)
		require.ErrorIs(t, err, os.ErrNotExist, "%s: the unpack leaves nothing behind, not even the root it created", name)
	}
}

// TestPackRefusesDamagedCache: pack checks hashes while reading.
func TestPackRefusesDamagedCache(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	p := filepath.Join(out, filepath.FromSlash(plan.Entries[5].File))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(p, b, 0o644))
	_, err = archive.Pack(context.Background(), out, &bytes.Buffer{}, archive.PackOptions{})
	require.ErrorContains(t, err, "data hash")
}

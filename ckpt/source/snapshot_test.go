package source_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A snapshot directory given as a plain path opens through the cache store
// (its links lead into ../../blobs/), with the same tensors as hf:, while a
// plain directory store refuses those links.
func TestSnapshotPath(t *testing.T) {
	t.Parallel()
	_, repo := cacheTree(t, false)
	openers := source.Openers(source.Options{Getenv: mapEnv(nil)})
	_, err := ckpt.Open(context.Background(), repo.Snapshot, ckpt.Options{})
	require.Error(t, err, "without the snapshot opener, links out of the directory are refused")

	for _, src := range []string{repo.Snapshot, filepath.Join(repo.Snapshot, ckpt.IndexFile)} {
		c, err := ckpt.Open(context.Background(), src, ckpt.Options{}, openers...)
		require.NoError(t, err, src)
		cs, ok := c.Store.(*source.CacheStore)
		require.True(t, ok, "a snapshot path is opened by the cache store")
		assert.Equal(t, repo.Commit, cs.Commit())
		local, err := ckpt.Open(context.Background(), smallFixture(t), ckpt.Options{})
		require.NoError(t, err)
		require.Len(t, c.Tensors, len(local.Tensors))
		for i := range local.Tensors {
			assert.Equal(t, local.Tensors[i].Name, c.Tensors[i].Name)
		}
		local.Close()
		c.Close()
	}
	// A directory that merely looks like a snapshot but is not in a cache
	// is left to the local opener.
	other := filepath.Join(t.TempDir(), "models--a--b", "snapshots", repo.Commit)
	_, _, ok, err := source.SnapshotPathOpener()(context.Background(), other)
	require.NoError(t, err)
	assert.False(t, ok)
}

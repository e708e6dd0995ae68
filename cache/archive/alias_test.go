package archive

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnpackVisionPairAliasedFolders: when the two folders of the archive
// are one directory, or one inside the other, through links in the cache
// root (the vision folder a link to the text folder, to the device folder,
// or the text folder a link into the vision folder), the unpack is
// refused (exit 2) before anything is written, naming both folders, and
// the root is as it was: a swap of one would carry the other away.
// (Before: a link to the text folder was refused as locked "by another
// process", ckpt itself; a link to the device folder swapped the whole
// device folder out, and back only because the second swap then failed.)
func TestUnpackVisionPairAliasedFolders(t *testing.T) {
	t.Parallel()
	es, _, _, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	arch := tarArchive(t, es)
	cases := []struct {
		name         string
		link, target string // link (main or vision) made to point at target (relative)
	}{
		{"vision is the text folder", "vision", "tensor_cache_bfp8_mesh1x2"},
		{"vision is the device folder", "vision", "."},
		{"text folder inside the vision folder", "main", "tensor_cache_bfp8/v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, mainDir, visionDir := pairRoot(t)
			l := map[string]string{"main": mainDir, "vision": visionDir}[tc.link]
			require.NoError(t, os.RemoveAll(l))
			require.NoError(t, os.Symlink(tc.target, l))
			before := snap(t, root)
			_, err := Extract(context.Background(), bytes.NewReader(arch), root, ExtractOptions{noSync: true})
			require.Error(t, err)
			assert.ErrorIs(t, err, atomicfile.ErrRefused)
			assert.Contains(t, err.Error(), mainDir)
			assert.Contains(t, err.Error(), visionDir)
			assert.Contains(t, err.Error(), "must be two directories, neither inside the other")
			assert.Equal(t, before, snap(t, root), "the cache root is as it was")
		})
	}
}

// TestUnpackVisionPairFreshRootAllOrNothing: into a root that holds
// neither folder, a failure of the second swap (and of the space check,
// and a damaged vision file) leaves the root as it was: no device folder,
// no empty folders, no staging folder, no lock file.
func TestUnpackVisionPairFreshRootAllOrNothing(t *testing.T) {
	t.Parallel()
	es, _, _, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	bad := append([]cachetest.ArchiveEntry(nil), es...)
	last := &bad[len(bad)-1]
	last.Data = bytes.Clone(last.Data)
	last.Data[len(last.Data)-1] ^= 1
	for name, tc := range map[string]struct {
		entries []cachetest.ArchiveEntry
		opt     func(root string) ExtractOptions
	}{
		"main swap fails": {es, func(root string) ExtractOptions {
			return ExtractOptions{noSync: true, exchange: func(stage, dir string) (string, error) {
				if filepath.Base(dir) == filepath.Base(cachetest.TinyFolderDir) {
					return "", errors.New("injected failure")
				}
				return exchange(stage, dir)
			}}
		}},
		"no room": {es, func(string) ExtractOptions {
			return ExtractOptions{noSync: true, freeBytes: func(string) (int64, bool) { return 1, true }}
		}},
		"vision file damaged": {bad, func(string) ExtractOptions { return ExtractOptions{noSync: true} }},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			top := t.TempDir()
			root := filepath.Join(top, "root")
			require.NoError(t, os.Mkdir(root, 0o755))
			before := snap(t, top)
			_, err := Extract(context.Background(), bytes.NewReader(tarArchive(t, tc.entries)), root, tc.opt(root))
			require.Error(t, err)
			assert.Equal(t, before, snap(t, top), "the root is as it was: %v", err)
		})
	}
}

package archive

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
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
			_, err := Unpack(context.Background(), bytes.NewReader(arch), root, UnpackOptions{noSync: true})
			require.Error(t, err)
			assert.ErrorIs(t, err, ckpt.ErrRefusedOutput)
			assert.Contains(t, err.Error(), mainDir)
			assert.Contains(t, err.Error(), visionDir)
			assert.Contains(t, err.Error(), "must be two directories, neither inside the other")
			assert.Equal(t, before, snap(t, root), "the cache root is as it was")
		})
	}
}

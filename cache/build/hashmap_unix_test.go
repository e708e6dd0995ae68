//go:build unix

package build

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/stretchr/testify/require"
)

// TestHashOwnFile: the mapped hash of a build's own file equals HashFile's
// streamed one (header and data regions).
func TestHashOwnFile(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct{ size, off int64 }{{1, 0}, {100, 40}, {300 << 10, 4096}, {(1 << 20) + 17, 1}, {hashWindow + 4096, hashWindow + 8}, {2*hashWindow + 5, 100}} {
		data := make([]byte, tc.size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		require.NoError(t, err)
		_, err = f.Write(data)
		require.NoError(t, err)
		wh, wd, err := cache.HashFile(f, tc.off, tc.size)
		require.NoError(t, err)
		gh, gd, ok := hashOwnFile(f, tc.off, tc.size)
		require.True(t, ok)
		require.Equal(t, [2]string{wh, wd}, [2]string{gh, gd}, "size %d", tc.size)
		require.NoError(t, f.Close())
	}
}

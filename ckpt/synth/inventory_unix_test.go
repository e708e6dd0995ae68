//go:build unix

package synth_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestInventorySparse(t *testing.T) {
	t.Parallel()
	loadInventory(t)
	dir := t.TempDir()
	require.NoError(t, synth.WriteInventory(dir, "fp8"))
	shards, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	assert.Len(t, shards, 66)
	var apparent, disk int64
	for _, s := range shards {
		st, err := os.Stat(s)
		require.NoError(t, err)
		apparent += st.Size()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			disk += sys.Blocks * 512
		}
	}
	assert.Greater(t, apparent, int64(30_866_663_264))
	assert.Less(t, disk, int64(64<<20), "data regions must be holes")
}

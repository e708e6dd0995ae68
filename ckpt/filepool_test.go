package ckpt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFilePoolBoundsOpenFiles: 50 blobs read concurrently through a pool
// of 4 always read their own bytes, never with more than 4 files open,
// and a file reopened after eviction is checked to be the one first
// opened.
func TestFilePoolBoundsOpenFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n, limit = 50, 4
	pool := NewFilePool(limit)
	var opens atomic.Int64
	blobs := make([]Blob, n)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("f%02d", i))
		require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf("file %02d: %s", i, "0123456789abcdef")), 0o644))
		b, err := NewPooledFileBlob(pool, func() (*os.File, error) { opens.Add(1); return os.Open(p) }, p)
		require.NoError(t, err)
		blobs[i] = b
	}
	var wg sync.WaitGroup
	var maxOpen atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 7)
			for k := range 300 {
				i := (k*7 + w*13) % n
				_, err := blobs[i].ReadAt(buf, 0)
				assert.NoError(t, err)
				assert.Equal(t, fmt.Sprintf("file %02d", i), string(buf))
				pool.mu.Lock()
				if o := int64(pool.open); o > maxOpen.Load() {
					maxOpen.Store(o)
				}
				pool.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.LessOrEqual(t, maxOpen.Load(), int64(limit))
	assert.Greater(t, opens.Load(), int64(n), "evicted files were opened again")

	// Replaced under the same name: refused, never read.
	p := filepath.Join(dir, "f07")
	require.NoError(t, os.WriteFile(p+".new", []byte(strings.Repeat("x", len("file 07: 0123456789abcdef"))), 0o644))
	require.NoError(t, os.Rename(p+".new", p))
	for i := range n { // evict f07
		if i != 7 {
			_, _ = blobs[i].ReadAt(make([]byte, 1), 0)
		}
	}
	_, err := blobs[7].ReadAt(make([]byte, 8), 0)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "was replaced while it was being read")

	for _, b := range blobs {
		require.NoError(t, b.Close())
	}
	assert.Zero(t, pool.open, "every file closed")
	_, err = blobs[0].ReadAt(make([]byte, 1), 0)
	assert.ErrorIs(t, err, os.ErrClosed)
}

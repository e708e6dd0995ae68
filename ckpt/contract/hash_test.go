package contract_test

import (
	"context"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashesIndependentOfChunking: the per-tensor xxh3 is over the whole
// raw bytes, whatever the chunk size and worker count.
func TestHashesIndependentOfChunking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
	require.NoError(t, err)
	defer c.Close()
	ref, err := contract.Hashes(context.Background(), c, contract.HashOptions{Workers: 1, ChunkSize: 1 << 30})
	require.NoError(t, err)
	require.Len(t, ref, len(c.Tensors))
	for _, o := range []contract.HashOptions{{Workers: 3, ChunkSize: 64}, {Workers: 8, ChunkSize: 4096}} {
		got, err := contract.Hashes(context.Background(), c, o)
		require.NoError(t, err)
		assert.Equal(t, ref, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = contract.Hashes(ctx, c, contract.HashOptions{ChunkSize: 64})
	assert.Error(t, err)
}

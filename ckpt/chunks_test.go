package ckpt_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamTensors: every byte of every tensor is fed once, in order
// inside each tensor (and, with Chain, inside each file), Read's result
// reaches Feed with its chunk, and the progress counts the bytes and the
// tensors; for any worker count and chunk size.
func TestStreamTensors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	c, err := ckpt.Open(ctx, dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ts := append([]*ckpt.Tensor(nil), c.Tensors...)
	ckpt.InFileOrder(c, ts, func(t *ckpt.Tensor) *ckpt.Tensor { return t })
	want := make([][]byte, len(ts))
	var total int64
	for i, tn := range ts {
		want[i], err = io.ReadAll(tn.Section())
		require.NoError(t, err)
		total += int64(len(want[i]))
	}
	for _, tc := range []struct {
		name    string
		workers int
		chunk   int64
		chain   bool
	}{
		{"one worker, small chunks", 1, 64, false},
		{"four workers, small chunks", 4, 64, false},
		{"four workers, chained files", 4, 100, true}, // 100 rounds down to 96
		{"chunks larger than tensors", 3, 1 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			got := make([][]byte, len(ts))
			next := map[*ckpt.File]int{} // with chain: the next tensor index of a file
			var p ckpt.Progress
			opt := ckpt.StreamOptions[int64]{Workers: tc.workers, Chunk: tc.chunk, Progress: &p,
				Read: func(ch *ckpt.Chunk) int64 { return ch.Off },
				Feed: func(ch *ckpt.Chunk, off int64) {
					mu.Lock()
					defer mu.Unlock()
					require.NoError(t, ch.Err)
					assert.Equal(t, ch.Off, off, "Read's result goes with its chunk")
					assert.Equal(t, int64(len(got[ch.Index])), ch.Off, "%s: chunks in order", ch.Tensor.Name)
					got[ch.Index] = append(got[ch.Index], ch.Data...)
					if ch.Last {
						assert.Len(t, got[ch.Index], len(want[ch.Index]), "last chunk of %s", ch.Tensor.Name)
					}
					if tc.chain {
						f := ch.Tensor.File
						if i, ok := next[f]; ok {
							assert.GreaterOrEqual(t, ch.Index, i, "chained: %s fed after a later tensor of its file", ch.Tensor.Name)
						}
						if ch.Last {
							next[f] = ch.Index + 1
						}
					}
				}}
			if tc.chain {
				opt.Chain = func(*ckpt.File) bool { return true }
			}
			require.NoError(t, ckpt.StreamTensors(ctx, ts, opt))
			for i := range ts {
				assert.True(t, bytes.Equal(want[i], got[i]), "bytes of %s", ts[i].Name)
			}
			done, tot, items := p.Snapshot()
			assert.Equal(t, total, done)
			assert.Equal(t, total, tot)
			assert.Equal(t, int64(len(ts)), items)
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := ckpt.StreamTensors(cctx, ts, ckpt.StreamOptions[struct{}]{Workers: 2, Chunk: 64})
		require.ErrorIs(t, err, context.Canceled)
	})
}

// TestStreamChunk: a checkpoint in a local directory streams in the small
// reads that stay in the CPU's cache, any other store in large requests;
// the deletion of DirStore.Dir once made every local read a remote-sized
// one (verify --read-data 1.4–1.7× the CPU), which this catches.
func TestStreamChunk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	ctx := context.Background()
	local, err := ckpt.Open(ctx, dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { local.Close() })
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	remote, err := ckpt.OpenStore(ctx, struct{ ckpt.Store }{ds}, "", ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { remote.Close() })
	assert.Equal(t, int64(256<<10), ckpt.StreamChunk(local))
	assert.Equal(t, int64(4<<20), ckpt.StreamChunk(remote))
}

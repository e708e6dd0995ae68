package extract

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingStore records the largest read and calls onRead (e.g. cancel a
// context) on every read once armed.
type countingStore struct {
	ckpttest.HookStore
	armed   atomic.Bool
	reads   atomic.Int64
	maxRead atomic.Int64
	onRead  func(n int64)
}

func (s *countingStore) read(_ string, _ int64, size int) {
	if !s.armed.Load() {
		return
	}
	n := s.reads.Add(1)
	for m := s.maxRead.Load(); int64(size) > m && !s.maxRead.CompareAndSwap(m, int64(size)); m = s.maxRead.Load() {
	}
	if s.onRead != nil {
		s.onRead(n)
	}
}

func openCounting(t *testing.T, dir string) (*ckpt.Checkpoint, *countingStore) {
	t.Helper()
	ds, err := ckpt.NewDirStore(dir)
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	cs := &countingStore{}
	cs.HookStore = ckpttest.HookStore{Store: ds, OnRead: cs.read}
	c, err := ckpt.OpenStore(context.Background(), &cs.HookStore, "", ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, cs
}

// writeRecorder records the size of every Write after the header.
type writeRecorder struct {
	writes   int
	maxWrite int
	total    int64
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.writes++
	if w.writes > 2 { // 1: length, 2: header
		w.maxWrite = max(w.maxWrite, len(p))
	}
	w.total += int64(len(p))
	return len(p), nil
}

// TestBoundedBuffers: with a chunk much smaller than the tensors, no read
// from the source and no write of tensor data exceeds the chunk, for raw
// copies, conversions and FP8 dequantisation.
func TestBoundedBuffers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFP8Dir(t, filepath.Join(dir, "src"), 200, 300, 64, 64, numfmt.BF16) // 60,000-byte FP8 weight
	const chunk = 1000
	for _, mode := range []string{Keep, BF16, F32} {
		t.Run(mode, func(t *testing.T) {
			c, cs := openCounting(t, src)
			p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: mode, ChunkBytes: chunk})
			require.NoError(t, err)
			cs.armed.Store(true)
			rec := &writeRecorder{}
			require.NoError(t, p.WriteShard(context.Background(), 0, rec))
			assert.LessOrEqual(t, cs.maxRead.Load(), int64(chunk))
			assert.Positive(t, cs.maxRead.Load())
			assert.LessOrEqual(t, rec.maxWrite, chunk)
			assert.Greater(t, rec.total, p.TotalBytes)
			w, _ := c.Lookup("w.weight")
			assert.Greater(t, int64(w.NBytes()), int64(20*chunk), "the tensor is much larger than the chunk")
		})
	}
}

// TestMemoryBounded measures the heap allocated while extracting an 8 MiB
// F32 tensor to bf16 and a 4 MiB FP8 weight to f32 with a 64 KiB chunk:
// a few chunks, not the tensor. Not parallel: it reads process-wide
// allocation counters.
func TestMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	srcF32 := writeSource(t, filepath.Join(dir), []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "big", DType: numfmt.F32, Shape: []int64{2048, 1024}}, Data: big}}, nil)
	srcFP8 := writeFP8Dir(t, filepath.Join(dir, "fp8"), 2048, 2048, 128, 128, numfmt.BF16)
	big = nil
	for _, tc := range []struct {
		src, mode string
		tensor    int64
	}{{srcF32, BF16, 8 << 20}, {srcFP8, F32, 4 << 20}} {
		c := openCkpt(t, tc.src)
		p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: tc.mode, ChunkBytes: 64 << 10})
		require.NoError(t, err)
		out := filepath.Join(dir, "out-"+tc.mode+".safetensors")
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = p.Write(context.Background(), out)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s → %s: %d bytes allocated for a %d-byte tensor", tc.src, tc.mode, alloc, tc.tensor)
		assert.Less(t, alloc, uint64(1<<20), "allocations stay within a few 64 KiB chunks")
		st, err := os.Stat(out)
		require.NoError(t, err)
		assert.Greater(t, st.Size(), int64(4<<20))
	}
}

// TestShardedRoundTrip: --max-shard-size splits the output into
// model-0000k-of-0000n shards with an index whose total_size is the
// payload; a weight and its scale share a shard; reading the directory back
// gives the source tensors; the config is copied, without
// quantization_config once everything is dequantised.
func TestShardedRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	c := openCkpt(t, src)
	for _, mode := range []string{Keep, BF16} {
		t.Run(mode, func(t *testing.T) {
			p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: mode, MaxShardSize: 200_000, ChunkBytes: 4096})
			require.NoError(t, err)
			require.True(t, p.Sharded)
			out := filepath.Join(dir, "out-"+mode)
			res, err := p.Write(context.Background(), out)
			require.NoError(t, err)
			n := len(p.Shards)
			require.Greater(t, n, 2)
			require.Len(t, res.Files, n)
			for i, f := range res.Files {
				assert.Equal(t, filepath.Join(out, shardName(i, n)), f.Path)
				assert.LessOrEqual(t, f.Bytes, int64(200_000), "shard %d payload", i)
			}
			oc := openCkpt(t, out)
			requireClean(t, oc)
			assert.True(t, oc.Sharded)
			assert.Equal(t, p.TotalBytes, oc.Index.TotalSize)
			assert.Len(t, oc.Files, n)
			assert.ElementsMatch(t, append(shardNames(n), ckpt.IndexFile, "config.json"), listDir(t, out))
			for _, name := range listDir(t, out) {
				st, err := os.Stat(filepath.Join(out, name))
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), name)
			}
			st, err := os.Stat(out)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o755), st.Mode().Perm())
			if mode == Keep {
				require.Len(t, oc.Tensors, len(c.Tensors))
				for _, x := range c.Tensors {
					got, ok := oc.Lookup(x.Name)
					require.True(t, ok, x.Name)
					assert.Equal(t, readTensor(t, x), readTensor(t, got), x.Name)
				}
				assert.Equal(t, c.Config.Quantization(), oc.Config.Quantization())
			} else {
				assert.Nil(t, oc.Config.Quantization(), "quantization_config removed")
				assert.Equal(t, c.Config.ModelType(), oc.Config.ModelType())
				for _, x := range oc.Tensors {
					assert.Equal(t, numfmt.BF16, x.DType)
				}
			}
		})
	}
	t.Run("file target", func(t *testing.T) {
		p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, MaxShardSize: 200_000})
		require.NoError(t, err)
		out := filepath.Join(dir, "x.safetensors")
		_, err = p.Write(context.Background(), out)
		require.ErrorIs(t, err, ErrNeedsDirectory)
		assert.NoFileExists(t, out)
	})
	t.Run("under the limit", func(t *testing.T) {
		p, err := NewPlan(c, PlanOptions{Match: []string{"mtp.**"}, MaxShardSize: 2_000_000})
		require.NoError(t, err)
		assert.False(t, p.Sharded)
		out := filepath.Join(dir, "mtp-dir")
		res, err := p.Write(context.Background(), out)
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{"model.safetensors", "config.json"}, listDir(t, out))
		assert.Empty(t, res.Index)
	})
	t.Run("non-empty directory", func(t *testing.T) {
		out := filepath.Join(dir, "busy")
		require.NoError(t, os.MkdirAll(out, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(out, "x"), nil, 0o644))
		p, err := NewPlan(c, PlanOptions{Match: []string{"mtp.**"}})
		require.NoError(t, err)
		_, err = p.Write(context.Background(), out)
		require.ErrorContains(t, err, "not empty")
		assert.Equal(t, []string{"x"}, listDir(t, out))
	})
}

func shardNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, shardName(i, n))
	}
	return out
}

// TestInterruptLeavesNothing cancels the context in the middle of a
// tensor: Write fails with context.Canceled and neither the target nor a
// temporary file remains, for a file and for a sharded directory.
func TestInterruptLeavesNothing(t *testing.T) {
	t.Parallel()
	for _, sharded := range []bool{false, true} {
		dir := t.TempDir()
		src := writeFP8Dir(t, filepath.Join(dir, "src"), 256, 256, 32, 32, numfmt.BF16)
		c, cs := openCounting(t, src)
		opt := PlanOptions{Match: []string{"**"}, DType: BF16, ChunkBytes: 1024}
		out := filepath.Join(dir, "out.safetensors")
		if sharded {
			opt.MaxShardSize = 1000
			out = filepath.Join(dir, "out")
		}
		p, err := NewPlan(c, opt)
		require.NoError(t, err)
		require.Equal(t, sharded, p.Sharded)
		ctx, cancel := context.WithCancel(context.Background())
		cs.onRead = func(n int64) {
			if n == 20 {
				cancel()
			}
		}
		cs.armed.Store(true)
		_, err = p.Write(ctx, out)
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []string{"src"}, listDir(t, dir), "no output and no temporary files")
		assert.Greater(t, cs.reads.Load(), int64(19))
	}
}

// TestWriteErrorLeavesNothing: a read error in the middle (a source file
// truncated after opening) fails the write and removes the temporary file.
func TestWriteErrorLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFP8Dir(t, filepath.Join(dir, "src"), 128, 128, 32, 32, numfmt.BF16)
	c, cs := openCounting(t, src)
	p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: F32, ChunkBytes: 512})
	require.NoError(t, err)
	cs.onRead = func(n int64) {
		if n == 5 {
			os.Truncate(filepath.Join(src, "model.safetensors"), 100)
		}
	}
	cs.armed.Store(true)
	out := filepath.Join(dir, "out.safetensors")
	_, err = p.Write(context.Background(), out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "out.safetensors")
	assert.Equal(t, []string{"src"}, listDir(t, dir))
}

// TestExistingDirKeptInPlace: an existing empty --out directory (a mount
// point, or a writable folder in a read-only parent) is filled in place:
// the directory itself is never replaced, nothing is created beside it, and
// an interrupted write leaves it empty.
func TestExistingDirKeptInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	c := openCkpt(t, src)
	p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: Keep, MaxShardSize: 200_000})
	require.NoError(t, err)
	require.True(t, p.Sharded)

	out := filepath.Join(dir, "mnt")
	require.NoError(t, os.Mkdir(out, 0o755))
	before, err := os.Stat(out)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Write(ctx, out)
	require.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, listDir(t, out), "an interrupted write leaves the directory empty")

	res, err := p.Write(context.Background(), out)
	require.NoError(t, err)
	after, err := os.Stat(out)
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the existing directory is filled, not replaced")
	assert.ElementsMatch(t, []string{"mnt", "src"}, listDir(t, dir), "nothing beside the output directory")
	assert.ElementsMatch(t, append(shardNames(len(p.Shards)), ckpt.IndexFile, "config.json"), listDir(t, out))
	assert.Equal(t, filepath.Join(out, ckpt.IndexFile), res.Index)
	requireClean(t, openCkpt(t, out))
}

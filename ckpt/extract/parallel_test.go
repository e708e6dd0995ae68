package extract

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memAt is an io.WriterAt into memory for concurrent writes of disjoint
// ranges; it fails every write that reaches failAt (when positive) and
// counts the writes made after the first failure.
type memAt struct {
	mu     sync.Mutex
	b      []byte
	failAt int64
	failed bool
	after  int // writes attempted after the first failure
}

var errDiskFull = errors.New("disk full (test)")

func (m *memAt) WriteAt(p []byte, off int64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failed {
		m.after++
	}
	if m.failAt > 0 && off+int64(len(p)) > m.failAt {
		m.failed = true
		return 0, errDiskFull
	}
	if end := off + int64(len(p)); end > int64(len(m.b)) {
		m.b = append(m.b, make([]byte, end-int64(len(m.b)))...)
	}
	copy(m.b[off:], p)
	return len(p), nil
}

// TestParallelSameBytes: the workers of WriteShardAt and Plan.Write
// produce, byte for byte, the file the sequential WriteShard streams (the
// order and bytes of the previous writer), for keep, bf16, f16 and f32, a
// single file and shards, on block-FP8 (Small, and a weight of ragged
// blocks with F32 scales), MXFP4 and NVFP4 sources, with pieces much
// smaller than the tensors; the non-finite counts agree too.
func TestParallelSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	require.NoError(t, synth.Write(small, synth.Small()))
	srcs := map[string]string{"small": small, "ragged": writeFP8Dir(t, filepath.Join(dir, "ragged"), 300, 500, 64, 128, numfmt.F32)}
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		d := filepath.Join(dir, string(s))
		require.NoError(t, synth.WriteScheme(d, s, synth.SchemeOptions{}))
		srcs[string(s)] = d
	}
	for name, src := range srcs {
		c := openCkpt(t, src)
		for _, mode := range []string{Keep, BF16, F16, F32} {
			for _, maxShard := range []int64{0, 60_000} {
				opt := PlanOptions{Match: []string{"**"}, DType: mode, ChunkBytes: 4096, MaxShardSize: maxShard, AllowNonFinite: true, Workers: 4}
				seq, err := NewPlan(c, opt)
				require.NoError(t, err)
				par, err := NewPlan(c, opt)
				require.NoError(t, err)
				var want [][]byte
				for i := range seq.Shards {
					var b bytes.Buffer
					require.NoError(t, seq.WriteShard(context.Background(), i, &b))
					m := &memAt{}
					size, err := par.writeShardAt(context.Background(), i, m)
					require.NoError(t, err)
					require.Equal(t, int64(b.Len()), size, "%s %s shard %d", name, mode, i)
					require.True(t, bytes.Equal(b.Bytes(), m.b), "%s %s shard %d: the workers' bytes differ", name, mode, i)
					want = append(want, b.Bytes())
				}
				assert.Equal(t, seq.nonFinite(), par.nonFinite(), "%s %s", name, mode)
				out := filepath.Join(dir, "out-"+name+"-"+mode)
				if !seq.Sharded {
					out += ".safetensors"
				}
				file, err := NewPlan(c, opt)
				require.NoError(t, err)
				res, err := file.Write(context.Background(), out)
				require.NoError(t, err)
				require.Len(t, res.Files, len(want))
				for i, f := range res.Files {
					got, err := os.ReadFile(f.Path)
					require.NoError(t, err)
					require.True(t, bytes.Equal(want[i], got), "%s %s %s", name, mode, f.Path)
					assert.Equal(t, int64(len(got)), f.Size)
				}
			}
		}
	}
}

// nanSource writes F32 tensors a..f of n values each, b and d with a NaN
// in their last value.
func nanSource(t *testing.T, dir string, n int) string {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var ts []ckpt.MemTensor
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		data := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i%100)*0.5))
		}
		if name == "b" || name == "d" {
			binary.LittleEndian.PutUint32(data[4*(n-1):], math.Float32bits(float32(math.NaN())))
		}
		ts = append(ts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.F32, Shape: []int64{int64(n)}}, Data: data})
	}
	return writeSource(t, dir, ts, nil)
}

// TestParallelErrorLeavesNothing: a failure in the middle of a file written
// by several workers (a NaN without AllowNonFinite; a write that fails)
// fails Write with the error of the first failing piece in file order,
// whichever worker meets which first, and leaves neither the target nor a
// temporary file; after a failed write at most the pieces already being
// converted are written.
func TestParallelErrorLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := nanSource(t, filepath.Join(dir, "src"), 20_000)
	c := openCkpt(t, src)
	for range 10 {
		p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: BF16, ChunkBytes: 1024, Workers: 4})
		require.NoError(t, err)
		_, err = p.Write(context.Background(), filepath.Join(dir, "out.safetensors"))
		var nf *ckpt.NonFiniteError
		require.ErrorAs(t, err, &nf)
		assert.Equal(t, "b", nf.Tensor, "the first tensor with a NaN in file order")
		assert.Equal(t, []string{"src"}, listDir(t, dir), "no output and no temporary files")
	}
	p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: BF16, ChunkBytes: 1024, Workers: 4, AllowNonFinite: true})
	require.NoError(t, err)
	m := &memAt{failAt: 50_000}
	_, err = p.writeShardAt(context.Background(), 0, m)
	require.ErrorIs(t, err, errDiskFull)
	assert.Contains(t, err.Error(), `writing tensor "b"`, "the first piece that reaches the failing offset")
	assert.Less(t, m.after, 4, "no piece claimed after the failure is written")
}

// TestParallelCancelStopsWorkers: cancelling the context in the middle of
// a file written by four workers fails Write with context.Canceled, leaves
// nothing behind, and stops the workers: after the cancel, each reads at
// most the piece it was converting.
func TestParallelCancelStopsWorkers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := writeFP8Dir(t, filepath.Join(dir, "src"), 512, 512, 32, 32, numfmt.BF16)
	c, cs := openCounting(t, src)
	p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: F16, ChunkBytes: 1024, Workers: 4})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var at atomic.Int64
	cs.onRead = func(n int64) {
		if n == 30 {
			at.Store(n)
			cancel()
		}
	}
	cs.armed.Store(true)
	_, err = p.Write(ctx, filepath.Join(dir, "out.safetensors"))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"src"}, listDir(t, dir))
	require.Equal(t, int64(30), at.Load())
	assert.LessOrEqual(t, cs.reads.Load(), int64(30+4), "at most one more read per worker after the cancel")
	assert.Greater(t, int64(512*512/1024), cs.reads.Load(), "far from every piece")
}

// TestWorkerBuffersBounded: whatever the tensor sizes, every worker's
// buffers hold at most three pieces (source, values, output: each at most
// the chunk size or 1 MiB), and a file gets at most the requested
// workers, at most 4 by default: the bytes in flight are bounded by
// 4 × 3 MiB, not by the tensors.
func TestWorkerBuffersBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	srcF32 := writeSource(t, dir, []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "big", DType: numfmt.F32, Shape: []int64{2048, 1024}}, Data: big}}, nil)
	srcFP8 := writeFP8Dir(t, filepath.Join(dir, "fp8"), 2048, 2048, 128, 128, numfmt.BF16)
	for _, tc := range []struct {
		src, mode string
		chunk     int64
		workers   int
	}{{srcF32, BF16, 0, 0}, {srcFP8, F32, 0, 0}, {srcFP8, BF16, 64 << 10, 3}, {srcF32, F16, 64 << 10, 0}, {srcFP8, Keep, 0, 2}} {
		c := openCkpt(t, tc.src)
		p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, DType: tc.mode, ChunkBytes: tc.chunk, Workers: tc.workers, AllowNonFinite: true})
		require.NoError(t, err)
		require.Len(t, p.Shards, 1)
		var mu sync.Mutex
		var bufs []int64
		bufStat := func(n int64) {
			mu.Lock()
			bufs = append(bufs, n)
			mu.Unlock()
		}
		_, err = p.writeShardAtHooked(context.Background(), 0, &memAt{}, hooks{bufStat: bufStat})
		require.NoError(t, err)
		piece := min(max(tc.chunk, 0), pieceMax)
		if tc.chunk == 0 {
			piece = pieceMax
		}
		want := tc.workers
		if want == 0 {
			want = min(runtime.GOMAXPROCS(0), maxWorkers)
		}
		assert.Len(t, bufs, want, "%s %s: workers", tc.src, tc.mode)
		var sum int64
		for _, n := range bufs { // a worker that got no piece has none
			assert.LessOrEqual(t, n, 3*piece, "%s %s chunk %d", tc.src, tc.mode, tc.chunk)
			sum += n
		}
		assert.Positive(t, sum)
	}
}

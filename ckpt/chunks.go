package ckpt

import (
	"context"
	"sort"

	"golang.org/x/sync/errgroup"
)

// Chunk is one piece of a tensor read by StreamTensors.
type Chunk struct {
	// Index is the position of the tensor in StreamTensors' list.
	Index  int
	Tensor *Tensor
	// Off is the offset of Data in the tensor; Data is valid only during
	// the callback.
	Off  int64
	Data []byte
	// Err is the error of reading Data (Data may then be partly read).
	Err error
	// Last marks the tensor's last chunk.
	Last bool
}

// StreamOptions tune StreamTensors. S is what Read hands to Feed.
type StreamOptions[S any] struct {
	// Workers bounds the chunks read at once (at least 1); each has one
	// buffer of Chunk bytes, so peak memory is about Workers × Chunk.
	Workers int
	// Chunk is the read size (at least 8, a multiple of 8).
	Chunk int64
	// Chain, if set, reports whether the chunks of a tensor of file f are
	// fed after those of the tensor before it in the list, so that a file's
	// bytes are fed in file order (a whole-file hash); otherwise only the
	// chunks of one tensor are fed in order.
	Chain func(f *File) bool
	// Read, if set, runs on each chunk right after it is read, in parallel
	// with other chunks (a scan that needs no order); its result goes to
	// Feed.
	Read func(c *Chunk) S
	// Feed runs on each chunk in order (see Chain): a tensor's hash.
	Feed func(c *Chunk, s S)
	// Progress, if set, is given the list's total bytes, each chunk's bytes
	// once fed, and an item per tensor after its last chunk.
	Progress *Progress
}

// StreamTensors reads the tensors ts once, in chunks read in parallel, in
// list order (which should be file order, then offset), and hands each
// chunk to opt.Read as soon as it is read and to opt.Feed in order. A
// zero-byte tensor has one empty chunk. It returns when every chunk was
// fed, or with the context's error (the chunks not yet read are then not
// fed).
func StreamTensors[S any](ctx context.Context, ts []*Tensor, opt StreamOptions[S]) error {
	workers := max(opt.Workers, 1)
	chunk := max(opt.Chunk/8*8, 8)
	var total int64
	for _, t := range ts {
		total += int64(t.NBytes())
	}
	opt.Progress.AddTotal(total)
	bufs := make(chan []byte, workers)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	closed := make(chan struct{})
	close(closed)
	prev := (<-chan struct{})(closed)
	for i, t := range ts {
		if opt.Chain == nil || !opt.Chain(t.File) {
			prev = closed // the order matters only inside a tensor
		}
		n := int64(t.NBytes())
		nChunks := max((n+chunk-1)/chunk, 1)
		for k := int64(0); k < nChunks; k++ {
			if gctx.Err() != nil {
				break
			}
			done := make(chan struct{})
			wait, off := prev, k*chunk
			size := min(chunk, n-off)
			last := k == nChunks-1
			g.Go(func() error {
				defer close(done)
				var buf []byte
				select {
				case buf = <-bufs:
				default:
					buf = make([]byte, chunk)
				}
				defer func() {
					select {
					case bufs <- buf:
					default:
					}
				}()
				c := &Chunk{Index: i, Tensor: t, Off: off, Data: buf[:size], Last: last}
				_, c.Err = t.ReadAt(c.Data, off)
				var s S
				if opt.Read != nil {
					s = opt.Read(c)
				}
				select { // feed in order
				case <-wait:
				case <-gctx.Done():
					return gctx.Err()
				}
				if opt.Feed != nil {
					opt.Feed(c, s)
				}
				opt.Progress.Add(size)
				if last {
					opt.Progress.ItemDone()
				}
				return nil
			})
			prev = done
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// The read sizes of StreamChunk.
const (
	remoteChunk = 4 << 20
	localChunk  = 256 << 10
)

// StreamChunk is the read size for streaming the tensors of c when the
// caller sets none: 256 KiB from a local directory or Hugging Face cache
// (chunks that stay in the L2 cache while they are read, scanned and
// hashed), else 4 MiB (remote reads keep large requests).
func StreamChunk(c *Checkpoint) int64 {
	if _, local := UnwrapStore(c.Store).(LocalStore); local {
		return localChunk
	}
	return remoteChunk
}

// InFileOrder sorts ts (tensors of c) in the order of c.Files, then by
// offset: the order StreamTensors reads best in.
func InFileOrder[T any](c *Checkpoint, ts []T, tensor func(T) *Tensor) {
	fileIdx := make(map[*File]int, len(c.Files))
	for i, f := range c.Files {
		fileIdx[f] = i
	}
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := tensor(ts[i]), tensor(ts[j])
		if fa, fb := fileIdx[a.File], fileIdx[b.File]; fa != fb {
			return fa < fb
		}
		return a.Offset() < b.Offset()
	})
}

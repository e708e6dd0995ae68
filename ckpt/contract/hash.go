package contract

import (
	"context"
	"fmt"
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"golang.org/x/sync/errgroup"
)

// The read sizes and parallelism of Hashes by default (verify's data checks
// read with the same).
const (
	defaultChunk   = 4 << 20
	localChunk     = 256 << 10 // default read size from a local directory
	defaultWorkers = 4
)

// HashOptions tune Hashes.
type HashOptions struct {
	// Workers bounds concurrent reads (default 4).
	Workers int
	// ChunkSize is the read size per worker in bytes (default 256 KiB from
	// a local directory or Hugging Face cache, else 4 MiB); peak memory is
	// about Workers × ChunkSize.
	ChunkSize int
	// Progress, if set, counts the bytes read.
	Progress *ckpt.Progress
}

// tensorHash is the hash of one tensor being read.
type tensorHash struct {
	t      *ckpt.Tensor
	hasher *xxh3s.Hasher
	hash   string
	err    error
}

// Hashes reads every tensor once (streamed, parallel, bounded memory:
// chunks are read in parallel, at most Workers at a time, each with one
// chunk-sized buffer, and each tensor's hash is fed in chunk order) and
// returns tensor name → xxh3-64 (16 hex digits) for the tensors that could
// be read. Tensors cut off by a truncated file are not read.
func Hashes(ctx context.Context, c *ckpt.Checkpoint, opt HashOptions) (map[string]string, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	chunk := int64(opt.ChunkSize)
	if chunk <= 0 {
		chunk = defaultChunk
		// Local files: chunks that stay in the L2 cache while they are
		// read and hashed (remote reads keep large requests).
		if _, local := ckpt.UnwrapStore(c.Store).(interface{ Dir() string }); local {
			chunk = localChunk
		}
	}
	chunk = max(chunk/8*8, 8)
	order := make([]*tensorHash, 0, len(c.Tensors))
	var total int64
	for _, t := range c.Tensors {
		if t.Offset()+int64(t.NBytes()) > t.File.RealSize {
			continue // cut off by a truncated file
		}
		total += int64(t.NBytes())
		order = append(order, &tensorHash{t: t, hasher: xxh3s.New()})
	}
	// File order, then offset.
	fileIdx := make(map[*ckpt.File]int, len(c.Files))
	for i, f := range c.Files {
		fileIdx[f] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i].t, order[j].t
		if fa, fb := fileIdx[a.File], fileIdx[b.File]; fa != fb {
			return fa < fb
		}
		return a.Offset() < b.Offset()
	})
	opt.Progress.AddTotal(total)
	bufs := make(chan []byte, workers)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	closed := make(chan struct{})
	close(closed)
	for _, th := range order {
		prev := (<-chan struct{})(closed) // the order matters only inside a tensor
		n := int64(th.t.NBytes())
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
				p := buf[:size]
				_, rerr := th.t.ReadAt(p, off)
				select { // hash in chunk order
				case <-wait:
				case <-gctx.Done():
					return gctx.Err()
				}
				if th.err == nil && rerr != nil {
					th.err = rerr
				}
				if th.err == nil {
					th.hasher.Write(p)
				}
				opt.Progress.Add(size)
				if last {
					if th.err == nil {
						th.hash = fmt.Sprintf("%016x", th.hasher.Sum64())
					}
					th.hasher = nil
					opt.Progress.ItemDone()
				}
				return nil
			})
			prev = done
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(order))
	for _, th := range order {
		if th.hash != "" {
			out[th.t.Name] = th.hash
		}
	}
	return out, nil
}

package contract

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
)

// defaultWorkers is the parallelism of hashTensors by default (verify's data
// checks read with the same; the read size is ckpt.StreamChunk's).
const defaultWorkers = 4

// HashOptions tune the hashing of Of with ReadData.
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

// hashTensors reads every tensor once (streamed, parallel, bounded memory:
// chunks are read in parallel, at most Workers at a time, each with one
// chunk-sized buffer, and each tensor's hash is fed in chunk order) and
// returns tensor name → xxh3-64 (16 hex digits) for the tensors that could
// be read. Tensors cut off by a truncated file are not read.
func hashTensors(ctx context.Context, c *ckpt.Checkpoint, opt HashOptions) (map[string]string, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = defaultWorkers
	}
	chunk := int64(opt.ChunkSize)
	if chunk <= 0 {
		chunk = ckpt.StreamChunk(c)
	}
	order := make([]*tensorHash, 0, len(c.Tensors))
	for _, t := range c.Tensors {
		if t.Offset()+int64(t.NBytes()) > t.File.RealSize {
			continue // cut off by a truncated file
		}
		order = append(order, &tensorHash{t: t, hasher: xxh3s.New()})
	}
	ckpt.InFileOrder(c, order, func(th *tensorHash) *ckpt.Tensor { return th.t })
	ts := make([]*ckpt.Tensor, len(order))
	for i, th := range order {
		ts[i] = th.t
	}
	err := ckpt.StreamTensors(ctx, ts, ckpt.StreamOptions[struct{}]{Workers: workers, Chunk: chunk, Progress: opt.Progress,
		Feed: func(c *ckpt.Chunk, _ struct{}) {
			th := order[c.Index]
			if th.err == nil && c.Err != nil {
				th.err = c.Err
			}
			if th.err == nil {
				th.hasher.Write(c.Data)
			}
			if c.Last {
				if th.err == nil {
					th.hash = fmt.Sprintf("%016x", th.hasher.Sum64())
				}
				th.hasher = nil
			}
		}})
	if err != nil {
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

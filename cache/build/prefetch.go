package build

import (
	"context"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Read-ahead: the raw bytes of the bands that are decoded from their raw
// bytes (block-FP8 codes, BF16 bits: readRaw) are read by readers of
// their own, ahead of the workers, into buffers of a bounded pool, so that
// the disk reads the next bands while the workers convert and write the
// current ones. The reads are ckpt.Tensor.ReadStream: direct from the disk
// where the page cache does not hold the bytes.

const (
	// prefetchBudget bounds the buffers of the bands read ahead (read or
	// being read, not yet converted).
	prefetchBudget = 48 << 20
	// prefetchReaders is the number of reads in flight.
	prefetchReaders = 4
)

// prefetched is a band being read ahead; done is closed when raw (or err)
// is set.
type prefetched struct {
	done chan struct{}
	buf  []byte // in the ring at off (own: a band larger than the ring)
	off  int
	own  bool
	raw  []byte // the band's bytes, in buf
	err  error
}

// prefetcher reads bands ahead of the workers into one buffer of
// prefetchBudget bytes, mapped once (bigBuf), used as a ring: bands are
// placed one after the other in the order they are read and their space
// comes back as the oldest ones are released (the workers release them
// about in that order). A fresh mapping for every band, or one per band
// size, had the kernel zero new pages all the time (clear_page: 10 % of a
// build's CPU time).
type prefetcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	ring   ring
	slab   []byte
	mapped bool
	reads  chan prefetchRead
	wg     sync.WaitGroup
}

type prefetchRead struct {
	p   *prefetched
	t   *ckpt.Tensor
	off int64
	n   int
}

func newPrefetcher() *prefetcher {
	pf := &prefetcher{reads: make(chan prefetchRead, 256)}
	pf.slab, pf.mapped = bigBuf(prefetchBudget)
	pf.ring.size = len(pf.slab)
	pf.cond = sync.NewCond(&pf.mu)
	for range prefetchReaders {
		pf.wg.Go(func() {
			for r := range pf.reads {
				r.p.raw, r.p.err = r.t.ReadStream(r.p.buf, r.off, r.n)
				close(r.p.done)
			}
		})
	}
	return pf
}

// start reads rows [r0, r0+n) of st ahead, waiting for room in the ring;
// nil when the context ends first.
func (pf *prefetcher) start(ctx context.Context, st *srcState, r0, n int64) *prefetched {
	v := st.v
	size := int(n * v.RowBytes())
	// ReadStream's margins, and whole alignment units in the ring.
	need := (size + 2*ckpt.StreamAlign + ckpt.StreamAlign - 1) &^ (ckpt.StreamAlign - 1)
	p := &prefetched{done: make(chan struct{})}
	if need > pf.ring.size {
		p.own, p.buf = true, ckpt.NewStreamBuffer(size)
	} else {
		pf.mu.Lock()
		for {
			if ctx.Err() != nil {
				pf.mu.Unlock()
				return nil
			}
			if off, ok := pf.ring.alloc(need); ok {
				p.off, p.buf = off, pf.slab[off:off+need:off+need]
				break
			}
			pf.cond.Wait() // the ring is full: wait for a band to be released
		}
		pf.mu.Unlock()
	}
	pf.reads <- prefetchRead{p: p, t: v.T, off: r0 * v.RowBytes(), n: size}
	return p
}

// release gives a band's room back.
func (pf *prefetcher) release(p *prefetched) {
	<-p.done // a band abandoned before its read ended
	if p.own {
		return
	}
	pf.mu.Lock()
	pf.ring.free(p.off)
	pf.cond.Broadcast()
	pf.mu.Unlock()
}

// wake lets a start waiting for room see that the context ended.
func (pf *prefetcher) wake() {
	pf.mu.Lock()
	pf.cond.Broadcast()
	pf.mu.Unlock()
}

// close stops the readers after the reads started and frees the ring
// (every band is released by then).
func (pf *prefetcher) close() {
	close(pf.reads)
	pf.wg.Wait()
	freeBig(pf.slab, pf.mapped)
	pf.slab = nil
}

// ring allocates spans of [0, size) in order, freed in any order: the
// room of the oldest live spans comes back once they and every span
// before them are free.
type ring struct {
	size, head int
	live       []ringSpan // in allocation order
}

type ringSpan struct {
	off, n int
	freed  bool
}

// alloc returns the offset of n bytes, or false when there is no room.
func (r *ring) alloc(n int) (int, bool) {
	if len(r.live) == 0 {
		r.head = 0
	}
	off := -1
	switch {
	case len(r.live) == 0 || r.head > r.live[0].off:
		// Live spans are [tail, head): room at the end, else at the start.
		if r.size-r.head >= n {
			off = r.head
		} else if len(r.live) == 0 || r.live[0].off >= n {
			off = 0
		}
	default:
		// Wrapped: live spans are [tail, end) and [0, head).
		if r.live[0].off-r.head >= n {
			off = r.head
		}
	}
	if off < 0 {
		return 0, false
	}
	r.live = append(r.live, ringSpan{off: off, n: n})
	r.head = off + n
	return off, true
}

// free frees the span at off.
func (r *ring) free(off int) {
	for i := range r.live {
		if r.live[i].off == off && !r.live[i].freed {
			r.live[i].freed = true
			break
		}
	}
	k := 0
	for k < len(r.live) && r.live[k].freed {
		k++
	}
	r.live = append(r.live[:0], r.live[k:]...)
}

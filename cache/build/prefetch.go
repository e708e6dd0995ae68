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
	buf  []byte // from the pool
	raw  []byte // the band's bytes, in buf
	err  error
}

// prefetcher reads bands ahead of the workers. Its buffers are kept by
// size for the next bands of that size (the bands of a source, and of most
// sources, have one size); all of them, in use or free, stay within
// prefetchBudget (a single band larger than that is read alone).
type prefetcher struct {
	mu     sync.Mutex
	cond   *sync.Cond
	alloc  int64 // bytes of the buffers, in use or free
	out    int   // bands held
	free   map[int][][]byte
	mapped map[*byte]bool // the buffers bigBuf mapped
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
	pf := &prefetcher{free: map[int][][]byte{}, mapped: map[*byte]bool{}, reads: make(chan prefetchRead, 256)}
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

// start reads rows [r0, r0+n) of st ahead, waiting for a buffer; nil when
// the context ends first.
func (pf *prefetcher) start(ctx context.Context, st *srcState, r0, n int64) *prefetched {
	v := st.v
	size := int(n * v.RowBytes())
	class := size + 2*ckpt.StreamAlign
	pf.mu.Lock()
	var buf []byte
	for ctx.Err() == nil {
		if fs := pf.free[class]; len(fs) > 0 {
			buf = fs[len(fs)-1]
			fs[len(fs)-1] = nil // the backing array must not keep it
			pf.free[class] = fs[:len(fs)-1]
			break
		}
		if pf.alloc+int64(class) <= prefetchBudget || pf.alloc == 0 {
			pf.alloc += int64(class)
			break
		}
		if pf.dropOne() {
			continue
		}
		pf.cond.Wait() // every buffer is in use: wait for one
	}
	if ctx.Err() != nil {
		pf.mu.Unlock()
		return nil
	}
	pf.out++
	if buf == nil {
		// Huge pages where they can be had (a band of codes is just
		// under 2 MiB with its margins); ReadStream's alignment.
		b, mapped := bigBuf(class)
		if mapped {
			pf.mapped[&b[0]] = true
		}
		buf = b[:class]
	}
	pf.mu.Unlock()
	p := &prefetched{done: make(chan struct{}), buf: buf}
	pf.reads <- prefetchRead{p: p, t: v.T, off: r0 * v.RowBytes(), n: size}
	return p
}

// dropOne lets a free buffer go (of another size than the one needed).
func (pf *prefetcher) dropOne() bool {
	for c, fs := range pf.free {
		if len(fs) > 0 {
			b := fs[len(fs)-1]
			fs[len(fs)-1] = nil // not kept by the backing array
			pf.free[c] = fs[:len(fs)-1]
			pf.alloc -= int64(c)
			freeBig(b, pf.mapped[&b[0]])
			delete(pf.mapped, &b[0])
			return true
		}
	}
	return false
}

// release gives a band's buffer and budget back.
func (pf *prefetcher) release(p *prefetched) {
	<-p.done // a band abandoned before its read ended
	pf.mu.Lock()
	class := len(p.buf)
	pf.free[class] = append(pf.free[class], p.buf)
	pf.out--
	pf.cond.Broadcast()
	pf.mu.Unlock()
}

// wake lets a start waiting for budget see that the context ended.
func (pf *prefetcher) wake() {
	pf.mu.Lock()
	pf.cond.Broadcast()
	pf.mu.Unlock()
}

// close stops the readers after the reads started and frees the buffers
// (every band is released by then).
func (pf *prefetcher) close() {
	close(pf.reads)
	pf.wg.Wait()
	pf.mu.Lock()
	defer pf.mu.Unlock()
	for _, fs := range pf.free {
		for _, b := range fs {
			freeBig(b, pf.mapped[&b[0]])
		}
	}
	pf.free, pf.mapped = nil, nil
}

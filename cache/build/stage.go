package build

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// Staged writes (durable builds): the bytes of a file are gathered in
// memory, in aligned chunks of its image, and each chunk that is complete
// is written with one direct (O_DIRECT) write, which moves the bytes from
// the build's memory to the disk without copying them into the page cache.
// On the machines this tool is measured on, the kernel's copy into the page
// cache (new pages for every byte written) was most of a build's CPU time;
// a direct write costs almost none, and the disk is written while the
// conversion goes on.
//
// The file is still the atomicfile temporary file: created, sized, hashed
// as written, fsynced (which also makes the direct writes' data and the
// file's blocks durable), renamed and journalled as any other, so crash
// safety does not change. Where the file system refuses direct writes
// (the probe at the start of the build, or a write failing with EINVAL),
// where the builder's staging memory is spent with nothing left to write
// out, and for the parts of a chunk past the last whole alignment unit of
// the file, the bytes go through the page cache as before.

const (
	// stageChunk is the size of a staged piece of a file image (and of
	// one direct write); chunks start at multiples of it.
	stageChunk = 4 << 20
	// dioAlign is the alignment of direct writes: memory, offset and
	// length (the logical block size of any disk is at most this).
	dioAlign = 4096
	// stageMaxFile is the largest file whose image is staged when its
	// tiles come column by column (a transposed target, whose every
	// chunk is complete only when its last source rows are in): larger
	// ones, such as an LM head, would hold more than the budget.
	stageMaxFile = 160 << 20
	// stageWriters is the number of direct writes in flight.
	stageWriters = 8
)

// stageBudget is the memory the staged images may hold at once (complete
// chunks waiting for their write included): 192 MiB at the default
// BandBytes, about what the three files a 27B MLP's gate and up weights
// fill together hold (200 MB; the last chunks wait for earlier writes).
// The tests' hooks.stageBytes, when set, is the budget instead.
func stageBudget(o WriteOptions, h hooks) int64 {
	if h.stageBytes > 0 {
		return h.stageBytes
	}
	return 24 * o.BandBytes
}

// stageChunkSize is stageChunk, or the tests' size.
func (o hooks) stageChunkSize() int64 {
	if o.stageChunk > 0 {
		return o.stageChunk
	}
	return stageChunk
}

// stager is the builder's pool of staging memory and its direct writers.
type stager struct {
	mu       sync.Mutex
	cond     *sync.Cond
	chunk    int64          // chunk size
	left     int64          // bytes of budget not allocated
	inflight int            // chunks queued or being written
	free     [][]byte       // chunk-sized buffers
	mapped   map[*byte]bool // those of them mapped by bigBuf (close frees them)
	queue    chan stageWrite
	wg       sync.WaitGroup
	// direct and paged count the bytes written directly and through the
	// page cache (tests, measurements).
	direct, paged atomic.Int64
}

type stageWrite struct {
	img *image
	c   int
}

func newStager(budget, chunk int64) *stager {
	st := &stager{left: budget, chunk: chunk, mapped: map[*byte]bool{}, queue: make(chan stageWrite, 1024)}
	st.cond = sync.NewCond(&st.mu)
	for range stageWriters {
		st.wg.Go(func() {
			for w := range st.queue {
				w.img.write(w.c)
			}
		})
	}
	return st
}

// close stops the writers once every queued write is done and frees the
// buffers.
func (st *stager) close() {
	close(st.queue)
	st.wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, b := range st.free {
		freeBig(b, st.mapped[&b[0]])
	}
	st.free, st.mapped = nil, nil
}

// get returns a chunk buffer (a recycled one holds the bytes of its last
// chunk: every byte of a chunk but its gaps is written before it is
// written out, and image.zeroGaps clears those), waiting for writes in
// flight to give memory back when the budget is spent; nil when the budget
// is spent and nothing is being written (the chunk then goes through the
// page cache).
//
// n is the chunk's size: a whole chunk gets a pooled buffer (bigBuf), the
// short last chunk of a file one of its own size from the heap.
func (st *stager) get(n int64) []byte {
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.left < n {
		if st.inflight == 0 {
			return nil
		}
		st.cond.Wait()
	}
	st.left -= n
	if n != st.chunk {
		return alignedBuf(int(n+dioAlign-1) &^ (dioAlign - 1))[:n]
	}
	if k := len(st.free); k > 0 {
		b := st.free[k-1]
		st.free[k-1] = nil
		st.free = st.free[:k-1]
		return b
	}
	b, mapped := bigBuf(int(n))
	if mapped {
		st.mapped[&b[0]] = true
	}
	return b[:n]
}

// put gives a chunk buffer back.
func (st *stager) put(b []byte) {
	st.mu.Lock()
	if int64(len(b)) == st.chunk {
		st.free = append(st.free, b)
	}
	st.left += int64(len(b))
	st.cond.Broadcast()
	st.mu.Unlock()
}

func (st *stager) submitted(d int) {
	st.mu.Lock()
	st.inflight += d
	st.cond.Broadcast()
	st.mu.Unlock()
}

// alignedBuf returns n bytes starting at a multiple of dioAlign.
func alignedBuf(n int) []byte {
	b := make([]byte, n+dioAlign)
	o := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (dioAlign - 1))
	return b[o : o+n : o+n]
}

// chunk states.
const (
	chunkFresh     = iota // nothing written yet
	chunkStaged           // gathering in buf
	chunkPaged            // written through the page cache
	chunkSubmitted        // handed to a direct writer (later writes wait for it)
)

type chunk struct {
	state  uint8
	buf    []byte
	filled int64 // bytes written (gaps counted in advance)
}

// image is the staged image of one file being written.
type image struct {
	st     *stager
	f      *os.File // the temporary file (page-cache writes, tails)
	direct *os.File // the same file opened for direct writes
	size   int64
	chunk  int64      // chunk size
	gaps   [][2]int64 // absolute ranges never written (zeros)

	mu     sync.Mutex
	chunks []chunk
	done   sync.WaitGroup // direct writes of this file not finished
	err    error          // the first failed write
	// bad: some byte was written twice, or (flush) never, so that a
	// chunk went out with bytes of the buffer's last use.
	bad bool
}

// newImage stages the file f (opened for direct writes as direct) of
// size bytes; written lists the absolute ranges the build writes (every
// other byte is a zero gap, never written).
func newImage(st *stager, f, direct *os.File, size int64, written [][2]int64) *image {
	img := &image{st: st, f: f, direct: direct, size: size, chunk: st.chunk, chunks: make([]chunk, (size+st.chunk-1)/st.chunk)}
	slices.SortFunc(written, func(a, b [2]int64) int { return int(min(max(a[0]-b[0], -1), 1)) })
	var end int64
	for _, r := range written {
		if r[0] > end {
			img.gaps = append(img.gaps, [2]int64{end, r[0]})
		}
		end = max(end, r[1])
	}
	if end < size {
		img.gaps = append(img.gaps, [2]int64{end, size})
	}
	for _, g := range img.gaps {
		img.count(g[0], g[1]-g[0])
	}
	return img
}

// count adds n bytes at off to the filled counts of their chunks (gaps).
func (img *image) count(off, n int64) {
	for n > 0 {
		c := off / img.chunk
		k := min(n, (c+1)*img.chunk-off)
		img.chunks[c].filled += k
		off, n = off+k, n-k
	}
}

// zeroGaps clears the bytes of chunk c's buffer that lie in gaps.
func (img *image) zeroGaps(c int) {
	lo, hi := int64(c)*img.chunk, int64(c)*img.chunk+img.valid(c)
	for _, g := range img.gaps {
		if a, b := max(g[0], lo), min(g[1], hi); a < b {
			clear(img.chunks[c].buf[a-lo : b-lo])
		}
	}
}

// valid is the number of bytes of chunk c inside the file.
func (img *image) valid(c int) int64 {
	return min(img.chunk, img.size-int64(c)*img.chunk)
}

// WriteAt writes p at off: into the staged chunks it falls in (a chunk
// complete with it is handed to a direct writer), or through the page
// cache for chunks that are not staged.
func (img *image) WriteAt(p []byte, off int64) error {
	for len(p) > 0 {
		c := int(off / img.chunk)
		if c >= len(img.chunks) {
			if _, err := img.f.WriteAt(p, off); err != nil {
				return &atomicfile.WriteError{Err: err}
			}
			return nil
		}
		k := min(int64(len(p)), int64(c+1)*img.chunk-off)
		if err := img.writeChunk(c, p[:k], off); err != nil {
			return err
		}
		p, off = p[k:], off+k
	}
	return nil
}

func (img *image) writeChunk(c int, p []byte, off int64) error {
	img.mu.Lock()
	ch := &img.chunks[c]
	if ch.state == chunkFresh {
		img.mu.Unlock()
		buf := img.st.get(img.valid(c))
		img.mu.Lock()
		switch {
		case ch.state != chunkFresh: // another writer staged it meanwhile
			if buf != nil {
				img.st.put(buf)
			}
		case buf == nil:
			ch.state = chunkPaged
		default:
			ch.state, ch.buf = chunkStaged, buf
			img.zeroGaps(c)
		}
	}
	switch ch.state {
	case chunkStaged:
		// The copy is made outside the lock: the chunk cannot be
		// submitted before its filled count includes these bytes (flush
		// and release run after the last write).
		buf := ch.buf
		img.mu.Unlock()
		copy(buf[off-int64(c)*img.chunk:], p)
		img.mu.Lock()
		ch.filled += int64(len(p))
		full := ch.filled >= img.valid(c)
		img.bad = img.bad || ch.filled > img.valid(c)
		if full {
			ch.state = chunkSubmitted
			img.done.Add(1)
		}
		img.mu.Unlock()
		if full {
			img.st.submitted(1)
			img.st.queue <- stageWrite{img, c}
		}
		return nil
	case chunkSubmitted:
		// Written twice: the build writes every byte once, so this is
		// an internal error (flush reports it); the bytes still land
		// after the direct write, through the page cache.
		img.bad = true
		img.mu.Unlock()
		img.done.Wait()
	default:
		img.mu.Unlock()
	}
	img.st.paged.Add(int64(len(p)))
	if _, err := img.f.WriteAt(p, off); err != nil {
		return &atomicfile.WriteError{Err: err}
	}
	return nil
}

// write writes chunk c (a direct writer's job): its whole alignment units
// directly, the rest of it (the file's last bytes) through the page cache
// afterwards, so that the two never share a page.
func (img *image) write(c int) {
	defer img.st.submitted(-1)
	defer img.done.Done()
	img.mu.Lock()
	buf := img.chunks[c].buf
	img.chunks[c].buf = nil
	direct := img.direct
	img.mu.Unlock()
	off := int64(c) * img.chunk
	n := img.valid(c)
	head := n &^ (dioAlign - 1)
	err := error(nil)
	if direct != nil && head > 0 {
		if _, err = direct.WriteAt(buf[:head], off); errors.Is(err, errDirectUnsupported) || isEINVAL(err) {
			img.mu.Lock()
			img.direct = nil // the file system refuses: the page cache from now on
			img.mu.Unlock()
			err = nil
			direct = nil
		}
	}
	if err == nil {
		from := head
		if direct == nil {
			from = 0
		}
		img.st.direct.Add(from)
		if from < n {
			img.st.paged.Add(n - from)
			_, err = img.f.WriteAt(buf[from:n], off+from)
		}
	}
	img.st.put(buf)
	if err != nil {
		img.mu.Lock()
		if img.err == nil {
			img.err = fmt.Errorf("writing bytes %d-%d: %w", off, off+n-1, err)
		}
		img.mu.Unlock()
	}
}

// flush writes out every chunk still staged (incomplete: an internal
// error, as the build writes every byte), waits for the direct writes of
// the file and closes its direct handle. It returns the first write error,
// or the internal error of bytes not written exactly once.
func (img *image) flush() error {
	img.mu.Lock()
	var rest []int
	for c := range img.chunks {
		if img.chunks[c].state == chunkStaged {
			img.chunks[c].state = chunkSubmitted
			img.done.Add(1)
			rest = append(rest, c)
			img.bad = true
		}
	}
	img.mu.Unlock()
	for _, c := range rest {
		img.st.submitted(1)
		img.write(c)
	}
	img.done.Wait()
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.direct != nil {
		img.direct.Close()
		img.direct = nil
	}
	if img.err != nil {
		return &atomicfile.WriteError{Op: "writing", Path: img.f.Name(), Err: img.err}
	}
	if img.bad {
		return fmt.Errorf("internal error: %s: the bytes of its staged image were not all written exactly once", img.f.Name())
	}
	return nil
}

// release gives the memory of an abandoned image back (its file is being
// removed) once its direct writes are done.
func (img *image) release() {
	img.mu.Lock()
	for c := range img.chunks {
		if ch := &img.chunks[c]; ch.state == chunkStaged {
			img.st.put(ch.buf)
			ch.buf, ch.state = nil, chunkPaged
		}
	}
	img.mu.Unlock()
	img.done.Wait()
	img.mu.Lock()
	defer img.mu.Unlock()
	if img.direct != nil {
		img.direct.Close()
		img.direct = nil
	}
}

// errDirectUnsupported is returned where direct writes do not exist.
var errDirectUnsupported = errors.New("direct writes not supported")

func isEINVAL(err error) bool { return errors.Is(err, syscall.EINVAL) }

// probeDirect reports whether files in dir take direct writes: it writes
// one aligned block to a temporary file there (removed again).
func probeDirect(dir string) bool {
	f, err := os.CreateTemp(dir, atomicfile.TempPattern("direct-probe"))
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	d, err := openDirect(f)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.WriteAt(alignedBuf(dioAlign), 0)
	return err == nil
}

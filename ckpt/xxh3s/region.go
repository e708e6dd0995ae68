package xxh3s

import (
	"encoding/binary"
	"math/bits"
	"sync"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Region computes the xxh3-64 hash of a byte range of known length whose
// bytes are written in any order, from any goroutine, each byte once —
// a file assembled by positional writes — from the written slices as they
// are written: nothing is copied or read back, beyond at most 64 bytes at
// the end of the range and 7 at each end of a write.
//
// For inputs over 240 bytes xxh3 adds, for every 8-byte lane of each
// 1 KiB block, a term that depends only on the lane's bytes and position
// into eight accumulators, and scrambles them after each block but the
// last. The terms of a block therefore add up in any order: Region keeps
// the sum of each block (64 bytes per KiB) until the blocks before it are
// complete, then folds it into the accumulators; the last block and the
// final stripe are added in Sum64. The secret and the initial accumulators
// are the library's, taken from a Hasher (layout mirrored as in Hasher);
// the result is checked once against xxh3.Hash and, should it differ,
// Sum64 reports that it has no hash (the caller then reads the bytes).
type Region struct {
	n  int64
	nb int64 // blocks scrambled: (n-1)/block
	t  int64 // stripes of block nb added as usual: ((n-1)-nb*block)/stripe

	mu    sync.Mutex
	front int64 // blocks folded into acc
	acc   [8]uint64
	pages map[int64]*page
	parts map[int64]*part // incomplete lanes by offset
	tail  [stripe]byte    // the last 64 bytes of the range
	small []byte          // the bytes of a range of at most 240
	seen  []bool          // the bytes of small written
	got   int64
	bad   bool
}

const pageBlocks = 64

type page struct {
	sum [pageBlocks][8]uint64
	got [pageBlocks]int32
}

type part struct {
	b    [8]byte
	mask uint8
}

// smallMax: xxh3 hashes inputs up to this length without accumulators.
const smallMax = 240

// NewRegion returns a Region for n bytes.
func NewRegion(n int64) *Region {
	r := &Region{n: n}
	if n < 0 {
		r.bad = true
		return r
	}
	if n <= smallMax {
		r.small, r.seen = make([]byte, n), make([]bool, n)
		return r
	}
	r.nb = (n - 1) / block
	r.t = ((n - 1) - r.nb*block) / stripe
	r.acc = sec.init
	r.pages = map[int64]*page{}
	return r
}

// secret holds what Region takes from the library.
type secret struct {
	lane [24]uint64 // the secret's 8-byte words (stripe s, lane j: lane[s+j])
	scr  [8]uint64  // scramble keys (bytes 128..191)
	last [8]uint64  // final stripe keys (bytes 121..184)
	mrg  [8]uint64  // merge keys (bytes 11..74)
	init [8]uint64  // initial accumulators
	ok   bool
}

var sec = loadSecret()

func loadSecret() (s secret) {
	if unsafe.Sizeof(layout{}) != unsafe.Sizeof(xxh3.Hasher{}) {
		return s
	}
	var h xxh3.Hasher
	h.Sum64() // sets the default secret and the initial accumulators
	l := (*layout)(unsafe.Pointer(&h))
	if l.key == nil {
		return s
	}
	k := unsafe.Slice((*byte)(l.key), 192)
	for i := range s.lane {
		s.lane[i] = binary.LittleEndian.Uint64(k[8*i:])
	}
	for j := range 8 {
		s.scr[j] = binary.LittleEndian.Uint64(k[128+8*j:])
		s.last[j] = binary.LittleEndian.Uint64(k[121+8*j:])
		s.mrg[j] = binary.LittleEndian.Uint64(k[11+8*j:])
	}
	s.init = l.acc
	s.ok = true
	return s
}

// regionOK: Region's hashes are the library's (checked once, on first
// use).
var regionOK = sync.OnceValue(checkRegion)

func checkRegion() bool {
	if !sec.ok {
		return false
	}
	data := make([]byte, 6*block+100)
	x := uint64(0x243f6a8885a308d3)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	for _, n := range []int{0, 1, 17, 240, 241, 300, 1023, 1024, 1025, 1088, 1089, 2048, 2049, 3000, 6*block + 100} {
		want := xxh3.Hash(data[:n])
		for _, step := range []int{1, 7, 64, 1000, 4096} {
			// Pieces of `step` bytes, odd pieces first, then the even.
			r := NewRegion(int64(n))
			for pass := 1; pass >= 0; pass-- {
				for i, o := 0, 0; o < n; i, o = i+1, o+step {
					if i%2 == pass {
						r.WriteAt(data[o:min(o+step, n)], int64(o))
					}
				}
			}
			if got, ok := r.sum(); !ok || got != want {
				return false
			}
		}
	}
	return true
}

// WriteAt adds the bytes p at offset off of the range. Bytes outside the
// range or written twice make Sum64 report no hash.
func (r *Region) WriteAt(p []byte, off int64) {
	if len(p) == 0 {
		return
	}
	if off < 0 || off > r.n-int64(len(p)) {
		r.mu.Lock()
		r.bad = true
		r.mu.Unlock()
		return
	}
	if r.small != nil || r.n <= smallMax {
		r.mu.Lock()
		copy(r.small[off:], p)
		for i := range p {
			if r.seen[off+int64(i)] {
				r.bad = true
			}
			r.seen[off+int64(i)] = true
		}
		r.got += int64(len(p))
		r.mu.Unlock()
		return
	}
	end := off + int64(len(p))
	if end > r.n-stripe {
		a := max(off, r.n-stripe)
		r.mu.Lock()
		copy(r.tail[a-(r.n-stripe):], p[a-off:])
		r.mu.Unlock()
	}
	// Whole lanes [a, e); the bytes before a and from e on are parts.
	a, e := (off+7)&^7, end&^7
	if a >= e {
		// Within one lane, or the ends of two.
		if k := min(a, end) - off; k > 0 {
			r.addPart(p[:k], off)
		}
		if a < end {
			r.addPart(p[a-off:], a)
		}
		return
	}
	if a > off {
		r.addPart(p[:a-off], off)
	}
	if e < end {
		r.addPart(p[e-off:], e)
	}
	// Page by page: the block sums of the page, then added under the lock.
	var local [pageBlocks][8]uint64
	var cnt [pageBlocks]int32
	for a < e {
		pg := a / (pageBlocks * block)
		pe := min(e, (pg+1)*pageBlocks*block)
		b0 := pg * pageBlocks
		lo, hi := int((a/block)-b0), int(((pe-1)/block)-b0)
		for i := lo; i <= hi; i++ {
			local[i] = [8]uint64{}
			bs := (b0 + int64(i)) * block
			s, t := max(a, bs), min(pe, bs+block)
			cnt[i] = int32(t - s)
			r.lanes(&local[i], p[s-off:t-off], s)
		}
		r.mu.Lock()
		pgp := r.page(pg)
		for i := lo; i <= hi; i++ {
			for j := range 8 {
				pgp.sum[i][j] += local[i][j]
			}
			pgp.got[i] += cnt[i]
		}
		r.got += pe - a
		r.fold()
		r.mu.Unlock()
		a = pe
	}
}

// page returns page pg, creating it (under mu).
func (r *Region) page(pg int64) *page {
	p := r.pages[pg]
	if p == nil {
		p = pagePool.Get().(*page)
		r.pages[pg] = p
	}
	return p
}

// pagePool recycles folded pages (cleared): a build's regions go through
// one page per 64 KiB written.
var pagePool = sync.Pool{New: func() any { return new(page) }}

// lanes adds the terms of the whole lanes p at offset off (p within one
// block, off a multiple of 8) to sum.
func (r *Region) lanes(sum *[8]uint64, p []byte, off int64) {
	blk := off / block
	s := (off % block) / stripe
	j := int((off % stripe) / 8)
	stop := int64(16)
	if blk == r.nb {
		stop = r.t // later stripes of the last block only enter the final stripe
	}
	// Up to the first stripe boundary, lane by lane.
	if j != 0 {
		p, s, j = laneByLane(sum, p, s, j, stop, true)
	}
	// Whole stripes.
	if len(p) >= stripe && s < stop {
		n := min(int64(len(p)/stripe), stop-s)
		stripes(sum, p[:n*stripe], sec.lane[s:s+n+7])
		p = p[n*stripe:]
		s += n
	}
	// The rest, lane by lane.
	laneByLane(sum, p, s, j, stop, false)
}

// laneByLane adds whole lanes of p to sum one at a time from lane j of
// stripe s, before stripe stop (toBoundary: only up to the next stripe
// boundary), and returns what is left of p and where it starts.
func laneByLane(sum *[8]uint64, p []byte, s int64, j int, stop int64, toBoundary bool) ([]byte, int64, int) {
	for len(p) >= 8 && s < stop {
		v := binary.LittleEndian.Uint64(p)
		k := v ^ sec.lane[s+int64(j)]
		sum[j] += uint64(uint32(k)) * (k >> 32)
		sum[j^1] += v
		p = p[8:]
		j++
		if j == 8 {
			j = 0
			s++
			if toBoundary {
				break
			}
		}
	}
	return p, s, j
}

// addPart adds bytes p at off that lie within one lane.
func (r *Region) addPart(p []byte, off int64) {
	lo := off &^ 7
	blk := lo / block
	r.mu.Lock()
	defer r.mu.Unlock()
	pgp := r.page(blk / pageBlocks)
	pgp.got[blk%pageBlocks] += int32(len(p))
	r.got += int64(len(p))
	if blk == r.nb && (lo%block)/stripe >= r.t {
		return // only in the final stripe (the tail)
	}
	pt := r.parts[lo]
	if pt == nil {
		if r.parts == nil {
			r.parts = map[int64]*part{}
		}
		pt = new(part)
		r.parts[lo] = pt
	}
	for i, c := range p {
		bit := uint8(1) << (int(off-lo) + i)
		if pt.mask&bit != 0 {
			r.bad = true
		}
		pt.mask |= bit
		pt.b[int(off-lo)+i] = c
	}
	if pt.mask == 0xff {
		delete(r.parts, lo)
		r.lanes(&pgp.sum[blk%pageBlocks], pt.b[:], lo)
		r.fold()
	}
}

// fold folds the complete blocks at the front into acc (under mu).
func (r *Region) fold() {
	var pg *page
	for r.front < r.nb {
		i := r.front % pageBlocks
		if pg == nil || i == 0 {
			pg = r.pages[r.front/pageBlocks]
		}
		if pg == nil || pg.got[i] < block {
			return
		}
		if pg.got[i] > block {
			r.bad = true
			return
		}
		acc, sum := &r.acc, &pg.sum[i]
		for j := range 8 {
			a := acc[j] + sum[j]
			a ^= a >> 47
			a ^= sec.scr[j]
			a *= sec.init[7] // prime32_1
			acc[j] = a
		}
		r.front++
		if r.front%pageBlocks == 0 {
			pg := r.front/pageBlocks - 1
			p := r.pages[pg]
			delete(r.pages, pg)
			*p = page{}
			pagePool.Put(p)
		}
	}
}

// Sum64 returns the hash of the range; ok is false unless every byte was
// written exactly once (and Region's hashes are the library's).
func (r *Region) Sum64() (h uint64, ok bool) {
	if !regionOK() {
		return 0, false
	}
	return r.sum()
}

func (r *Region) sum() (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bad || r.got != r.n {
		return 0, false
	}
	if r.n <= smallMax {
		return xxh3.Hash(r.small), true
	}
	r.fold()
	if r.front != r.nb || len(r.parts) != 0 {
		return 0, false
	}
	acc := r.acc
	if pg := r.pages[r.nb/pageBlocks]; pg != nil {
		i := r.nb % pageBlocks
		if int64(pg.got[i]) != r.n-r.nb*block {
			return 0, false
		}
		for j := range 8 {
			acc[j] += pg.sum[i][j]
		}
	}
	for j := range 8 {
		v := binary.LittleEndian.Uint64(r.tail[8*j:])
		k := v ^ sec.last[j]
		acc[j] += uint64(uint32(k)) * (k >> 32)
		acc[j^1] += v
	}
	h := uint64(r.n) * sec.init[1] // prime64_1
	for j := 0; j < 8; j += 2 {
		hi, lo := bits.Mul64(acc[j]^sec.mrg[j], acc[j+1]^sec.mrg[j+1])
		h += hi ^ lo
	}
	h ^= h >> 37
	h *= 0x165667919e3779f9
	h ^= h >> 32
	return h, true
}

// stripesGo adds the terms of whole stripes p (stripe i keyed by
// key[i:i+8]) to sum.
func stripesGo(sum *[8]uint64, p []byte, key []uint64) {
	s0, s1, s2, s3, s4, s5, s6, s7 := sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7]
	for len(p) >= stripe && len(key) >= 8 {
		q := (*[stripe]byte)(p)
		k := (*[8]uint64)(key)
		v0 := binary.LittleEndian.Uint64(q[0:])
		v1 := binary.LittleEndian.Uint64(q[8:])
		v2 := binary.LittleEndian.Uint64(q[16:])
		v3 := binary.LittleEndian.Uint64(q[24:])
		v4 := binary.LittleEndian.Uint64(q[32:])
		v5 := binary.LittleEndian.Uint64(q[40:])
		v6 := binary.LittleEndian.Uint64(q[48:])
		v7 := binary.LittleEndian.Uint64(q[56:])
		k0, k1, k2, k3 := v0^k[0], v1^k[1], v2^k[2], v3^k[3]
		k4, k5, k6, k7 := v4^k[4], v5^k[5], v6^k[6], v7^k[7]
		s0 += uint64(uint32(k0))*(k0>>32) + v1
		s1 += uint64(uint32(k1))*(k1>>32) + v0
		s2 += uint64(uint32(k2))*(k2>>32) + v3
		s3 += uint64(uint32(k3))*(k3>>32) + v2
		s4 += uint64(uint32(k4))*(k4>>32) + v5
		s5 += uint64(uint32(k5))*(k5>>32) + v4
		s6 += uint64(uint32(k6))*(k6>>32) + v7
		s7 += uint64(uint32(k7))*(k7>>32) + v6
		p, key = p[stripe:], key[1:]
	}
	sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7] = s0, s1, s2, s3, s4, s5, s6, s7
}

// Package xxh3s streams bytes into zeebo/xxh3's 64-bit hash without the
// copy its Hasher makes of every byte after the first Write.
//
// xxh3.Hasher processes 1 KiB blocks in place only while nothing is
// buffered (the first Write); afterwards every byte is copied through its
// block buffer first (about an eighth of verify's CPU time). The buffer
// holds the bytes not yet accumulated, which after a block always start on
// a block boundary of the stream. Hasher.Write tops the buffer up from the
// new bytes to one block and one byte, so that the library accumulates
// that block and keeps the 65 bytes after it — which are then the start of
// the new bytes still in the caller's slice. Setting the buffered length
// to zero hands the library that slice from there: it accumulates the
// blocks in place, exactly as if the buffer had been filled. The hash is
// therefore the same as the library's for the same bytes (Sum64 is the
// library's). The buffered length is a field of xxh3.Hasher reached
// through a copy of its layout (go.mod pins v1.1.0); the layout is checked
// once against hashes of the library and, should it differ, Hasher writes
// through the library's copying route.
package xxh3s

import (
	"unsafe"

	"github.com/zeebo/xxh3"
)

const (
	block  = 1024 // xxh3's block (16 stripes)
	stripe = 64
	bufLen = block + stripe // xxh3.Hasher's buffer
	// minDirect is the smallest Write taken through the in-place route;
	// shorter ones are copied by the library as usual.
	minDirect = 4 * block
)

// layout mirrors xxh3.Hasher (v1.1.0).
type layout struct {
	acc  [8]uint64
	blk  uint64
	len  uint64
	key  unsafe.Pointer
	buf  [bufLen]byte
	seed uint64
}

// Hasher is a streaming xxh3 64-bit hash (seed 0).
type Hasher struct{ h xxh3.Hasher }

// New returns an empty Hasher.
func New() *Hasher { return new(Hasher) }

// Reset empties h.
func (h *Hasher) Reset() { h.h.Reset() }

// Sum64 returns the hash of the bytes written.
func (h *Hasher) Sum64() uint64 { return h.h.Sum64() }

// Write adds p to the hash; it never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	if !direct {
		h.h.Write(p)
		return len(p), nil
	}
	writeDirect(h, p)
	return len(p), nil
}

// writeDirect is Write through the in-place route.
func writeDirect(h *Hasher, p []byte) {
	l := (*layout)(unsafe.Pointer(&h.h))
	for l.len > block && len(p) >= minDirect {
		// More than a block buffered: its tail is not in p; let the
		// library accumulate that block (at most 64 bytes copied).
		k := bufLen - int(l.len)
		h.h.Write(p[:k+1])
		p = p[k+1:]
	}
	if l.len == 0 || len(p) < minDirect {
		// Nothing buffered (the library's own in-place route), or a
		// short rest.
		h.h.Write(p)
		return
	}
	// 1 <= buffered <= block: fill the buffer (it then ends with p[k-64:k])
	// and add one byte, which makes the library accumulate the block and
	// keep p[k-64:k+1].
	k := bufLen - int(l.len)
	h.h.Write(p[:k])
	h.h.Write(p[k : k+1])
	l.len = 0
	h.h.Write(p[k-stripe:])
}

// WriteString is Write for a string.
func (h *Hasher) WriteString(s string) (int, error) {
	return h.Write(unsafe.Slice(unsafe.StringData(s), len(s)))
}

// direct: the layout matches the library's (checked once).
var direct = checkLayout()

func checkLayout() bool {
	if unsafe.Sizeof(layout{}) != unsafe.Sizeof(xxh3.Hasher{}) {
		return false
	}
	data := make([]byte, 5*minDirect+block/3)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range data {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		data[i] = byte(x)
	}
	want := xxh3.Hash(data)
	// Writes that leave 1, 64, 65, block and block+64 bytes buffered
	// before a long one.
	for _, first := range []int{1, 64, 65, 100, block, block + 1, bufLen, 2*block + 7} {
		var h xxh3.Hasher
		h.Write(data[:first])
		l := (*layout)(unsafe.Pointer(&h))
		if l.len == 0 || l.len > bufLen || l.blk*block+l.len != uint64(first) {
			return false
		}
		s := Hasher{h: h}
		writeDirect(&s, data[first:minDirect+first])
		writeDirect(&s, data[minDirect+first:])
		if s.Sum64() != want {
			return false
		}
	}
	return true
}

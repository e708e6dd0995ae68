//go:build amd64 && !purego

package xxh3s

import "unsafe"

// stripesSSE2 is stripesGo for n stripes at p keyed from key, in SSE2.
//
//go:noescape
func stripesSSE2(sum *[8]uint64, p *byte, key *uint64, n uintptr)

// stripes is stripesGo in SSE2 (the same sums; compared by
// TestStripes).
func stripes(sum *[8]uint64, p []byte, key []uint64) {
	n := min(len(p)/stripe, len(key)-7)
	if n <= 0 {
		return
	}
	stripesSSE2(sum, unsafe.SliceData(p), unsafe.SliceData(key), uintptr(n))
}

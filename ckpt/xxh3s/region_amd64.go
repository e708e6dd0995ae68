//go:build amd64 && !purego

package xxh3s

//go:generate go run -C _asm . -out ../region_amd64.s

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// stripesSSE2 and stripesAVX2 are stripesGo for n stripes at p keyed
// from key.
//
//go:noescape
func stripesSSE2(sum *[8]uint64, p *byte, key *uint64, n uintptr)

//go:noescape
func stripesAVX2(sum *[8]uint64, p *byte, key *uint64, n uintptr)

var hasAVX2 = cpu.X86.HasAVX2

// stripes is stripesGo in AVX2 or SSE2 (the same sums; compared by
// TestStripes).
func stripes(sum *[8]uint64, p []byte, key []uint64) {
	n := min(len(p)/stripe, len(key)-7)
	if n <= 0 {
		return
	}
	if hasAVX2 {
		stripesAVX2(sum, unsafe.SliceData(p), unsafe.SliceData(key), uintptr(n))
		return
	}
	stripesSSE2(sum, unsafe.SliceData(p), unsafe.SliceData(key), uintptr(n))
}

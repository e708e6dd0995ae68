//go:build amd64 && !purego

package build

//go:generate go run -C _asm . -out ../transpose_amd64.s

import (
	"unsafe"

	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// transposeRowsSSE2 is transposeRowsGo with the values as 16-bit lanes:
// dst[j*32+k] is value j of the row at byte k*stride of src, for n values
// (a multiple of 8) per row; 8x8 blocks are transposed in SSE2 registers.
//
//go:noescape
func transposeRowsSSE2(dst *uint16, src *byte, stride uintptr, n uintptr)

// transposeRows is transposeRowsGo in SSE2 (identical words; compared by
// TestTransposeRowsSSE2).
func transposeRows(st []uint64, raw []byte, stride, n int) {
	if n == 0 {
		return
	}
	_ = raw[(tile.TileDim-1)*stride+2*n-1]
	st = st[:n/tile.TileDim*(tile.TileElems/4)]
	transposeRowsSSE2((*uint16)(unsafe.Pointer(&st[0])), &raw[0], uintptr(stride), uintptr(n))
}

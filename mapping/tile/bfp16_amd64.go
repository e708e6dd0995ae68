//go:build amd64 && !purego

package tile

//go:generate go run -C _asm . -out ../bfp16_amd64.s

import (
	"math/bits"

	"golang.org/x/sys/cpu"
)

// bfpParams are the per-format constants of the face kernels, each in the
// eight 16-bit lanes of a vector.
type bfpParams struct {
	base, dmax, limit, sign [8]uint16
}

var (
	bfp8Params = bfpParams{base: splat(1), dmax: splat(7), limit: splat(127), sign: splat(0x80)}
	bfp4Params = bfpParams{base: splat(5), dmax: splat(3), limit: splat(7), sign: splat(0x08)}
)

func splat(v uint16) (a [8]uint16) {
	for i := range a {
		a[i] = v
	}
	return a
}

func bfp8FaceRowBF16(out *[FaceDim]byte, src *[FaceDim]uint16) byte {
	var e byte
	if faceKernel(&src[0], 0, &e, &out[0], &bfp8Params, false, 1) == 0 {
		return e
	}
	return bfp8FaceRowBF16Go(out, src)
}

func bfp4FaceRowBF16(out *[FaceDim / 2]byte, src *[FaceDim]uint16) byte {
	var e byte
	if faceKernel(&src[0], 0, &e, &out[0], &bfp4Params, true, 1) == 0 {
		return e
	}
	return bfp4FaceRowBF16Go(out, src)
}

// bfpFaceSSE2 encodes rows (1..16) face rows of bfloat16 bits with SSE2
// (part of every amd64 CPU), eight lanes at a time: the codes
// RNE(significand / 2^(d+base)), clamped, zero for d > dmax or a zero
// exponent, the sign where the code is not zero — the codes of the tables.
// Row k is the 16 values at byte k*stride from src; its shared exponent
// goes to exps[k] and its 16 BFLOAT8_B codes to out+k*16 (with nibbles, 8
// bytes of BFLOAT4_B codes to out+k*8). A row of exponent 0 (zeros and
// denormals, codes 0) is written too; rows whose exponent is between 1 and
// minTableExp-1 are not written and are flagged in bit k of small.
// TestFaceKernels checks every value under every shared exponent.
//
//go:noescape
func bfpFaceSSE2(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) (small uint32)

// bfpFaceAVX2 is bfpFaceSSE2 with a face row per 16-lane AVX2 register
// (used when the CPU has AVX2; TestFaceKernels compares both with the Go
// encoder).
//
//go:noescape
func bfpFaceAVX2(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) (small uint32)

// faceKernel is the face encoder used on this CPU.
var faceKernel = func() func(src *uint16, stride uintptr, exps *byte, out *byte, p *bfpParams, nibbles bool, rows uintptr) uint32 {
	if cpu.X86.HasAVX2 {
		return bfpFaceAVX2
	}
	return bfpFaceSSE2
}()

// encodeFaceBF16 encodes face f (0..3) of a BFLOAT8_B or BFLOAT4_B tile
// from src, the face's first value in rows of stride values (the caller
// checked the bounds).
func encodeFaceBF16(dt DType, tile []byte, f int, src []uint16, stride int) {
	_ = tile[dt.TileBytes()-1]
	p, nibbles, cb := &bfp8Params, false, FaceDim
	if dt == BFLOAT4_B {
		p, nibbles, cb = &bfp4Params, true, FaceDim/2
	}
	r0 := f * FaceDim
	small := faceKernel(&src[0], uintptr(2*stride), &tile[r0], &tile[FaceRows+r0*cb], p, nibbles, FaceDim)
	for small != 0 {
		k := bits.TrailingZeros32(small)
		small &= small - 1
		EncodeFaceRowBF16(dt, tile, r0+k, (*[FaceDim]uint16)(src[k*stride:]))
	}
}

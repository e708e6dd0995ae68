package tile

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Block-float encoding straight from bfloat16 bits.
//
// A bfloat16 value h is the float32 with bits h<<16, so its BFLOAT8_B or
// BFLOAT4_B code under a face row's shared exponent e is
// bfpCode(h<<16, e, ...). For a value with a non-zero exponent field x, that
// code depends only on d = e - x and on the sign and the 7 stored
// significand bits (the significand shift drops only zero bits below bit
// 16). The codes are tabulated by d<<8 | sign<<7 | significand for every d in
// [0, 255] (in the order described at bfpTables); rows d ≥ 8 are all zero (the rounded magnitude is 0), so only the
// first few rows are ever hot. A zero or denormal (x = 0) looks up row e,
// which is zero as long as e ≥ 8: face rows whose largest exponent is
// smaller (values below 2^-119 only) take the exact float32 route instead.
// Each value then costs one exponent extraction and one table lookup, with
// no conversion to float32 and no branch.

// bfpTables holds the codes of every (d, sign, significand) triple at index
// d<<8 | 255-(significand<<1|sign): the index of h under shared exponent e
// is then (e<<8 | 255) - rotl16(h, 1), which never borrows across the low
// byte (see bf16CodeIndex).
type bfpTables struct {
	bfp8 [1 << 16]uint8
	bfp4 [1 << 16]uint8
}

// minTableExp is the smallest shared exponent whose face rows use the
// tables (rows d ≥ minTableExp are zero).
const minTableExp = 8

var codeTables = newBFPTables()

func newBFPTables() *bfpTables {
	t := new(bfpTables)
	for d := uint32(0); d < minTableExp; d++ {
		// A value of exponent field x = 127 under shared exponent 127+d.
		const x = 127
		for i := uint32(0); i < 256; i++ {
			s, m := i&1, i>>1
			b := s<<31 | x<<23 | m<<16
			t.bfp8[d<<8|(255-i)] = uint8(bfpCode(b, x+d, 17, 127, 7))
			t.bfp4[d<<8|(255-i)] = uint8(bfpCode(b, x+d, 21, 7, 3))
		}
	}
	return t
}

// bf16MaxExp returns the largest exponent field of a face row.
func bf16MaxExp(src *[FaceDim]uint16) uint32 {
	// Exponents compare like the bits with the sign masked. Four values
	// per 64-bit word, maxima taken lane-wise without branches (face rows
	// of weights have no predictable order), then across the lanes.
	b := (*[2 * FaceDim]byte)(unsafe.Pointer(src))
	const abs = 0x7fff7fff7fff7fff
	m := max4x16(binary.LittleEndian.Uint64(b[0:8])&abs, binary.LittleEndian.Uint64(b[8:16])&abs)
	m = max4x16(m, binary.LittleEndian.Uint64(b[16:24])&abs)
	m = max4x16(m, binary.LittleEndian.Uint64(b[24:32])&abs)
	m = max4x16(m, m>>32)
	m = max4x16(m, m>>16)
	return uint32(m&0x7fff) >> 7
}

// max4x16 returns the lane-wise maximum of four 16-bit lanes whose top
// bits are clear (a lane of a shifted word may hold garbage from a higher
// lane; the lowest lane is always exact).
func max4x16(a, m uint64) uint64 {
	const top = 0x8000800080008000
	t := ((a | top) - m) & top // lane top bit: a ≥ m (no borrow crosses lanes)
	mask := t<<1 - t>>15       // lanes with t set: all ones
	return m ^ (m^a)&mask
}

// bf16CodeIndex returns the table index of h under shared exponent e ≥ its
// exponent field x: rotl16(h, 1) = x<<8 | significand<<1 | sign, so
// (e<<8|255) - rotl16(h, 1) = (e-x)<<8 | 255-(significand<<1|sign).
func bf16CodeIndex(h uint16, e uint32) uint16 {
	return uint16(e<<8 | 0xff - uint32(bits.RotateLeft16(h, 1)))
}

// bfp8FaceRowBF16Go is bfp8FaceRow for bfloat16 bits (identical codes);
// bfp8FaceRowBF16 is it or its SSE2 version.
func bfp8FaceRowBF16Go(out *[FaceDim]byte, src *[FaceDim]uint16) byte {
	e := bf16MaxExp(src)
	s := *src
	var o [FaceDim]byte
	if e < minTableExp {
		for i, h := range s {
			o[i] = byte(bfpCode(uint32(h)<<16, e, 17, 127, 7))
		}
		*out = o
		return byte(e)
	}
	t := &codeTables.bfp8
	k := e<<8 | 0xff
	for i := 0; i < FaceDim; i += 4 {
		o[i] = t[uint16(k-uint32(bits.RotateLeft16(s[i], 1)))]
		o[i+1] = t[uint16(k-uint32(bits.RotateLeft16(s[i+1], 1)))]
		o[i+2] = t[uint16(k-uint32(bits.RotateLeft16(s[i+2], 1)))]
		o[i+3] = t[uint16(k-uint32(bits.RotateLeft16(s[i+3], 1)))]
	}
	*out = o
	return byte(e)
}

// bfp4FaceRowBF16Go is bfp4FaceRow for bfloat16 bits (identical codes);
// bfp4FaceRowBF16 is it or its SSE2 version.
func bfp4FaceRowBF16Go(out *[FaceDim / 2]byte, src *[FaceDim]uint16) byte {
	e := bf16MaxExp(src)
	s := *src
	var o [FaceDim / 2]byte
	if e < minTableExp {
		for k := range o {
			o[k] = byte(bfpCode(uint32(s[2*k])<<16, e, 21, 7, 3) | bfpCode(uint32(s[2*k+1])<<16, e, 21, 7, 3)<<4)
		}
		*out = o
		return byte(e)
	}
	t := &codeTables.bfp4
	k := e<<8 | 0xff
	for i := 0; i < FaceDim/2; i += 2 {
		o[i] = t[uint16(k-uint32(bits.RotateLeft16(s[2*i], 1)))] | t[uint16(k-uint32(bits.RotateLeft16(s[2*i+1], 1)))]<<4
		o[i+1] = t[uint16(k-uint32(bits.RotateLeft16(s[2*i+2], 1)))] | t[uint16(k-uint32(bits.RotateLeft16(s[2*i+3], 1)))]<<4
	}
	*out = o
	return byte(e)
}

// EncodeFaceRowBF16 encodes 16 bfloat16 values (bits) of a tile's face row r
// into tile: the same bytes as EncodeFaceRow of the exactly widened values,
// except that BFLOAT16 copies the bits (NaN payloads included).
func EncodeFaceRowBF16(dt DType, tile []byte, r int, p *[FaceDim]uint16) {
	switch dt {
	case BFLOAT8_B:
		tile[r] = bfp8FaceRowBF16((*[FaceDim]byte)(tile[FaceRows+r*FaceDim:]), p)
	case BFLOAT4_B:
		tile[r] = bfp4FaceRowBF16((*[FaceDim / 2]byte)(tile[FaceRows+r*FaceDim/2:]), p)
	case BFLOAT16:
		out := (*[2 * FaceDim]byte)(tile[r*2*FaceDim:])
		for i, h := range p {
			out[2*i], out[2*i+1] = byte(h), byte(h>>8)
		}
	case FLOAT32:
		out := (*[4 * FaceDim]byte)(tile[r*4*FaceDim:])
		for i, h := range p {
			out[4*i], out[4*i+1], out[4*i+2], out[4*i+3] = 0, 0, byte(h), byte(h>>8)
		}
	}
}

// EncodeTileBF16 encodes a complete 32×32 tile of bfloat16 bits — tile row
// i is src[i*stride : i*stride+32] — into tile: the bytes of
// EncodeFaceRowBF16 for each of its face rows, a face (16 face rows) per
// kernel call for the block-float formats.
func EncodeTileBF16(dt DType, tile []byte, src []uint16, stride int) {
	_ = src[(TileDim-1)*stride+TileDim-1]
	switch dt {
	case BFLOAT8_B, BFLOAT4_B:
		for f := range 4 {
			encodeFaceBF16(dt, tile, f, src[(f>>1)*FaceDim*stride+(f&1)*FaceDim:], stride)
		}
	default:
		for r := range FaceRows {
			fr, fc := FaceRowOrigin(r)
			EncodeFaceRowBF16(dt, tile, r, (*[FaceDim]uint16)(src[fr*stride+fc:]))
		}
	}
}

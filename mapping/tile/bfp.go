package tile

import (
	"math"
	"math/bits"
)

// Sizes of one packed 32x32 block-float tile.
const (
	BFP8TileBytes = FaceRows + TileElems   // 64 exponents + 1024 one-byte codes
	BFP4TileBytes = FaceRows + TileElems/2 // 64 exponents + 1024 nibbles
)

// bfpExp returns the shared exponent of a face row: the largest biased fp32
// exponent field among its 16 values (NaN and Inf count as 255, zeros and
// denormals as 0).
func bfpExp(src *[FaceDim]float32) uint32 {
	var e uint32
	for _, f := range src {
		e = max(e, math.Float32bits(f)>>23&0xff)
	}
	return e
}

// bfpCode returns the code of fp32 bits b under shared exponent e: a
// magnitude of 24-drop bits (7 for drop=17, 3 for drop=21) plus the sign at
// bit signBit. The significand (implicit one made explicit) is shifted right
// by e minus the value's exponent, dropping the shifted-out bits (Go shifts of
// 32 or more give 0), then rounded half to even and clamped to limit. Zeros
// and denormals give 0; the sign is set only on a non-zero magnitude. The
// body is branch-free so that it compiles to straight-line code.
func bfpCode(b, e, drop, limit, signBit uint32) uint32 {
	x := b >> 23 & 0xff
	m := (b&0x7fffff | 0x800000) >> (e - x)
	m = (m + (1<<(drop-1) - 1) + (m>>drop)&1) >> drop
	m = min(m, limit)
	m &= -((x + 0xff) >> 8) // zero when x == 0
	nz := (m + limit) >> (24 - drop)
	return m | (b>>31)&nz<<signBit
}

// bfp8FaceRow encodes 16 values into 16 BFLOAT8_B codes and returns the
// shared exponent.
func bfp8FaceRow(out *[FaceDim]byte, src *[FaceDim]float32) byte {
	e := bfpExp(src)
	for i, f := range src {
		out[i] = byte(bfpCode(math.Float32bits(f), e, 17, 127, 7))
	}
	return byte(e)
}

// bfp4FaceRow encodes 16 values into 8 bytes of BFLOAT4_B codes (lane 2k in
// the low nibble, lane 2k+1 in the high nibble) and returns the shared
// exponent.
func bfp4FaceRow(out *[FaceDim / 2]byte, src *[FaceDim]float32) byte {
	e := bfpExp(src)
	for k := range out {
		c0 := bfpCode(math.Float32bits(src[2*k]), e, 21, 7, 3)
		c1 := bfpCode(math.Float32bits(src[2*k+1]), e, 21, 7, 3)
		out[k] = byte(c0 | c1<<4)
	}
	return byte(e)
}

// bfpDecode returns the float32 value of a code with magnitude mag (width
// bits, 7 or 3), sign bit neg and shared exponent e: mag * 2^(e-127-bits+1).
// Like tt-metal's decoder it builds the fp32 bits directly, so exponent 255
// gives Inf or NaN; results below the normal range are computed exactly as
// denormals.
func bfpDecode(mag uint32, neg bool, e uint32, width uint32) float32 {
	if mag == 0 {
		return 0
	}
	// p = position of the leading one in mag.
	p := uint32(31 - bits.LeadingZeros32(mag))
	exp := int32(e) - int32(width-1-p)
	var v uint32
	if exp >= 1 {
		v = uint32(exp)<<23 | (mag<<(23-p))&0x7fffff
	} else {
		v = math.Float32bits(float32(math.Ldexp(float64(mag), int(e)-127-int(width)+1)))
	}
	if neg {
		v |= 0x80000000
	}
	return math.Float32frombits(v)
}

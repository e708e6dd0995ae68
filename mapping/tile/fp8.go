package tile

import (
	"math"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Block-float tiles straight from F8_E4M3 codes.
//
// A block-FP8 weight [out, in] is stored on the device transposed, [in,
// out], as BFLOAT8_B or BFLOAT4_B tiles. Tile q of a run of tiles along a
// 32-row strip of codes is the transpose of the 32×32 block of codes at
// columns [32q, 32q+32): its value (i, j) is
//
//	bf16(e4m3(src[j*stride + 32q + i]) × scales[q])
//
// with the float32 product rounded to bfloat16 nearest even, a NaN
// becoming the pattern the caller names (EncodeFP8TransposedNaN; 0x7FC0,
// tt-metal's host conversion, numfmt.TTNaNBF16), then encoded as
// EncodeTileBF16 does.
// EncodeFP8TransposedNaN computes exactly these bytes; on amd64 with AVX2 a
// kernel does the arithmetic per face without tables and hands tiles it
// cannot do exactly (a NaN code, a scale out of range, a face row whose
// shared exponent is below minTableExp but not 0) back to the table route
// here. Zero face rows, zero codes and zero scales stay in the kernel.

// maxFP8Scale bounds the scales the kernel takes (block-FP8 scales are far
// below it). For every positive scale below it the kernel's arithmetic is
// exact: it widens the codes to float32 values e4m3(m) × 2^-104 and
// multiplies them by scale × 2^104 times a power of two, which stay finite
// normal numbers (see _asm/fp8.go, which writes fp8_amd64.s).
const maxFP8Scale = 256

// fp8ScaleOK reports whether s can go to the kernel: +0 (every product
// is zero: the zero scales of pruned blocks), or positive and below
// maxFP8Scale. As float32 bits, those are the values below 256's (this
// leaves out -0, negative values and NaN).
func fp8ScaleOK(s float32) bool {
	return math.Float32bits(s) < math.Float32bits(maxFP8Scale)
}

// EncodeFP8TransposedNaN encodes n tiles of dt (BFLOAT8_B or BFLOAT4_B):
// tile q, from the codes src[k*stride + 32q + i] (k, i < 32) and
// scales[q], goes to dst[q*dt.TileBytes():], with the bfloat16 pattern nan
// for every NaN product (a NaN code, or a NaN or infinite scale). src must
// hold 31*stride + 32n codes, dst n tiles and scales n values.
func EncodeFP8TransposedNaN(dt DType, dst []byte, src []byte, stride int, scales []float32, n int, nan uint16) {
	if n <= 0 {
		return
	}
	tb := dt.TileBytes()
	_ = dst[n*tb-1]
	_ = src[(TileDim-1)*stride+n*TileDim-1]
	_ = scales[n-1]
	var f *fp8Tables
	table := func(q int) { // the table route, for a tile the kernel leaves
		if f == nil {
			f = &fp8Tables{nan: nan}
		}
		f.encode(dt, dst[q*tb:(q+1)*tb], src[q*TileDim:], stride, scales[q])
	}
	for q := 0; q < n; {
		if !fp8ScaleOK(scales[q]) {
			table(q)
			q++
			continue
		}
		// The longest run of tiles with scales the kernel takes; it stops
		// at the first tile it cannot do exactly.
		e := q + 1
		for e < n && fp8ScaleOK(scales[e]) {
			e++
		}
		q += fp8TilesKernel(dt, dst[q*tb:], src[q*TileDim:], stride, scales[q:e], e-q)
		if q < e {
			table(q)
			q++
		}
	}
}

// fp8Tables encodes tiles through a 256-entry table of bfloat16 bits per
// scale: the reference route, and the kernel's fallback.
type fp8Tables struct {
	scale uint32 // bits of the scale tab holds (valid when ok)
	ok    bool
	nan   uint16 // the NaN pattern of the products (0: numfmt.TTNaNBF16)
	tab   [256]uint16
	blk   [TileElems]uint16
}

// encode writes the tile of the 32×32 codes at src (rows of stride) under
// scale s into dst.
func (f *fp8Tables) encode(dt DType, dst []byte, src []byte, stride int, s float32) {
	f.encodePartial(dt, dst, src, stride, TileDim, TileDim, s)
}

// encodePartial is encode for a tile of which only rows × cols codes
// (source rows and columns) exist; the rest of the tile is zero.
func (f *fp8Tables) encodePartial(dt DType, dst []byte, src []byte, stride, rows, cols int, s float32) {
	if !f.ok || f.scale != math.Float32bits(s) {
		nan := f.nan
		if nan == 0 {
			nan = numfmt.TTNaNBF16
		}
		E4M3BF16TableNaN(&f.tab, s, nan)
		f.scale, f.ok = math.Float32bits(s), true
	}
	if rows < TileDim || cols < TileDim {
		clear(f.blk[:])
	}
	for k := 0; k < rows; k++ {
		row := src[k*stride : k*stride+cols]
		for i, c := range row {
			f.blk[i*TileDim+k] = f.tab[c]
		}
	}
	EncodeTileBF16(dt, dst, f.blk[:], TileDim)
}

// encodeFP8TransposedPartial is EncodeFP8TransposedPartialNaN with ttnn's NaN for one tile of which
// only rows × cols codes exist (rows, cols ≤ 32: the ragged edge of a
// matrix whose sides are not multiples of 32); the rest of the tile is
// padded with zeros.
func encodeFP8TransposedPartial(dt DType, dst []byte, src []byte, stride, rows, cols int, scale float32) {
	EncodeFP8TransposedPartialNaN(dt, dst, src, stride, rows, cols, scale, numfmt.TTNaNBF16)
}

// EncodeFP8TransposedPartialNaN is encodeFP8TransposedPartial with the
// pattern nan for NaN products.
func EncodeFP8TransposedPartialNaN(dt DType, dst []byte, src []byte, stride, rows, cols int, scale float32, nan uint16) {
	f := fp8Tables{nan: nan}
	f.encodePartial(dt, dst[:dt.TileBytes()], src, stride, min(rows, TileDim), min(cols, TileDim), scale)
}

// E4M3BF16Table sets t[c] to the bfloat16 bits of F8_E4M3 code c times
// scale: the float32 product rounded as tt-metal's host conversion does
// (numfmt.F32ToBF16TT), which is how the serving loader's dequantised, then
// bf16-cast weights come out.
func E4M3BF16Table(t *[256]uint16, scale float32) {
	E4M3BF16TableNaN(t, scale, numfmt.TTNaNBF16)
}

// E4M3BF16TableNaN is E4M3BF16Table with the bfloat16 pattern nan for the
// NaN products (numfmt.ScaleTable16 under the policy nan):
// numfmt.NaNBF16Vector is what the serving loader's bf16 dequantisation
// (torch bf16 arithmetic) writes on an AVX2/AVX-512 host.
func E4M3BF16TableNaN(t *[256]uint16, scale float32, nan uint16) {
	_ = numfmt.ScaleTable16(t, numfmt.F8E4M3, scale, numfmt.BF16, numfmt.NaNPolicy(nan)) // F8_E4M3 to BF16 cannot fail
}

// encodeFP8TransposedGo is EncodeFP8TransposedNaN through the tables only
// (the reference the kernel is tested against).
func encodeFP8TransposedGo(dt DType, dst []byte, src []byte, stride int, scales []float32, n int) {
	var f fp8Tables
	tb := dt.TileBytes()
	for q := 0; q < n; q++ {
		f.encode(dt, dst[q*tb:(q+1)*tb], src[q*TileDim:], stride, scales[q])
	}
}

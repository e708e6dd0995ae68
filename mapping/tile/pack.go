package tile

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// StripBytes returns the packed size of one tile row strip (32 rows) of a
// matrix cols wide: ceil(cols/32) tiles of dt.TileBytes().
func StripBytes(dt DType, cols int) int {
	return RoundUp(cols, TileDim) / TileDim * dt.TileBytes()
}

// TilesBytes returns the packed size of a [h, w] matrix in TILE layout.
func TilesBytes(dt DType, h, w int) int {
	return RoundUp(h, TileDim) / TileDim * StripBytes(dt, w)
}

// loadF32 returns the face row of matrix row `row`, columns col..col+15, of
// a strip of `rows` rows with `cols` valid columns. Inside the valid region it
// points into src; otherwise it fills tmp with the valid part and zeros.
func loadF32(src []float32, rows, cols, stride, row, col int, tmp *[FaceDim]float32) *[FaceDim]float32 {
	if row < rows && col+FaceDim <= cols {
		return (*[FaceDim]float32)(src[row*stride+col:])
	}
	clear(tmp[:])
	if row < rows && col < cols {
		copy(tmp[:], src[row*stride+col:row*stride+cols])
	}
	return tmp
}

func checkStrip(dt DType, dstLen, srcLen, rows, cols, stride int) error {
	switch dt {
	case BFLOAT16, FLOAT32, BFLOAT8_B, BFLOAT4_B:
	default:
		return fmt.Errorf("packing tiles: unsupported dtype %v", dt)
	}
	if rows < 1 || rows > TileDim || cols < 1 || stride < cols {
		return fmt.Errorf("packing tiles: bad strip geometry rows=%d cols=%d stride=%d", rows, cols, stride)
	}
	if need := (rows-1)*stride + cols; srcLen < need {
		return fmt.Errorf("packing tiles: source has %d values, need %d", srcLen, need)
	}
	if need := StripBytes(dt, cols); dstLen < need {
		return fmt.Errorf("packing tiles: destination has %d bytes, need %d", dstLen, need)
	}
	return nil
}

// PackStrip packs one tile row strip of a row-major float32 matrix into
// TILE-layout bytes of dt (BFLOAT16, FLOAT32, BFLOAT8_B or BFLOAT4_B), with no
// intermediate tilized copy and no allocation. src holds `rows` (1..32) rows;
// row r has `cols` valid values starting at src[r*stride]. Rows past `rows`
// and columns past `cols` are zero padding. dst receives StripBytes(dt, cols)
// bytes and the function returns that count.
//
// BFLOAT16 rounds to nearest even (see numfmt.F32ToBF16); values that are
// bfloat16 already keep their bits, NaN included (numfmt.BF16Bits), other
// NaNs become 0x7FC0 as in tt-metal's host conversion. The block-float encoding
// is bit-exact with tt-metal's host packer: per face row the shared exponent
// is the largest fp32 exponent field; values with exponent field 0 encode as
// 0; the significand with explicit leading one is shifted right by the
// exponent difference (bits shifted out are dropped), rounded half to even to
// 7 (BFLOAT8_B) or 3 (BFLOAT4_B) bits and saturated; the sign is set only on
// a non-zero magnitude. NaN and Inf are not special.
func PackStrip(dt DType, dst []byte, src []float32, rows, cols, stride int) (int, error) {
	if err := checkStrip(dt, len(dst), len(src), rows, cols, stride); err != nil {
		return 0, err
	}
	return packStrip(dt, dst, src, rows, cols, stride), nil
}

// packStrip packs a strip from f32.
func packStrip(dt DType, dst []byte, f32 []float32, rows, cols, stride int) int {
	tb := dt.TileBytes()
	ntiles := RoundUp(cols, TileDim) / TileDim
	var tmp [FaceDim]float32
	for t := range ntiles {
		tile := dst[t*tb : (t+1)*tb]
		for r := range FaceRows {
			fr, fc := FaceRowOrigin(r)
			EncodeFaceRow(dt, tile, r, loadF32(f32, rows, cols, stride, fr, t*TileDim+fc, &tmp))
		}
	}
	return ntiles * tb
}

// PackTiles packs the row-major [h, w] float32 matrix src into TILE-layout
// bytes of dt, zero padded to multiples of 32. dst must hold
// TilesBytes(dt, h, w) bytes; the count written is returned. See PackStrip
// for the encodings.
func PackTiles(dt DType, dst []byte, src []float32, h, w int) (int, error) {
	return packTiles(dt, dst, src, h, w, PackStrip)
}

// packTiles packs a whole matrix strip by strip of 32 rows.
func packTiles[T float32 | uint16](dt DType, dst []byte, src []T, h, w int,
	strip func(dt DType, dst []byte, src []T, rows, cols, stride int) (int, error)) (int, error) {
	if h < 1 || w < 1 || len(src) < h*w {
		return 0, fmt.Errorf("packing tiles: bad matrix %dx%d with %d values", h, w, len(src))
	}
	if need := TilesBytes(dt, h, w); len(dst) < need {
		return 0, fmt.Errorf("packing tiles: destination has %d bytes, need %d", len(dst), need)
	}
	n := 0
	for r0 := 0; r0 < h; r0 += TileDim {
		k, err := strip(dt, dst[n:], src[r0*w:], min(TileDim, h-r0), w, w)
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// PackRowMajor encodes float32 values as ROW_MAJOR bytes of dt (BFLOAT16,
// rounded to nearest even, or FLOAT32) into dst and returns the byte count.
func PackRowMajor(dt DType, dst []byte, src []float32) (int, error) {
	es := 0
	switch dt {
	case BFLOAT16:
		es = 2
	case FLOAT32:
		es = 4
	default:
		return 0, fmt.Errorf("packing row-major: unsupported dtype %v", dt)
	}
	if len(dst) < es*len(src) {
		return 0, fmt.Errorf("packing row-major: destination has %d bytes, need %d", len(dst), es*len(src))
	}
	for i, f := range src {
		if es == 2 {
			binary.LittleEndian.PutUint16(dst[2*i:], numfmt.BF16Bits(f))
		} else {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(f))
		}
	}
	return es * len(src), nil
}

// UnpackTiles decodes TILE-layout bytes of dt (BFLOAT16, FLOAT32, BFLOAT8_B or
// BFLOAT4_B) holding a padded [h, w] matrix into the row-major float32 matrix
// dst (h*w values), dropping the padding. Block floats decode to
// magnitude*2^(E-127-6) (BFLOAT8_B) or magnitude*2^(E-127-2) (BFLOAT4_B).
func UnpackTiles(dt DType, dst []float32, src []byte, h, w int) error {
	switch dt {
	case BFLOAT16, FLOAT32, BFLOAT8_B, BFLOAT4_B:
	default:
		return fmt.Errorf("unpacking tiles: unsupported dtype %v", dt)
	}
	if h < 1 || w < 1 || len(dst) < h*w {
		return fmt.Errorf("unpacking tiles: bad matrix %dx%d with %d values", h, w, len(dst))
	}
	if need := TilesBytes(dt, h, w); len(src) < need {
		return fmt.Errorf("unpacking tiles: source has %d bytes, need %d", len(src), need)
	}
	tb := dt.TileBytes()
	tw := RoundUp(w, TileDim) / TileDim
	var row [FaceDim]float32
	for t := range RoundUp(h, TileDim) / TileDim * tw {
		tile := src[t*tb : (t+1)*tb]
		r0, c0 := t/tw*TileDim, t%tw*TileDim
		for r := range FaceRows {
			fr, fc := FaceRowOrigin(r)
			y, x := r0+fr, c0+fc
			if y >= h || x >= w {
				continue
			}
			decodeFaceRow(dt, &row, tile, r)
			copy(dst[y*w+x:y*w+min(w, x+FaceDim)], row[:])
		}
	}
	return nil
}

func decodeFaceRow(dt DType, out *[FaceDim]float32, tile []byte, r int) {
	switch dt {
	case BFLOAT8_B:
		e := uint32(tile[r])
		codes := tile[FaceRows+r*FaceDim : FaceRows+(r+1)*FaceDim]
		for i, c := range codes {
			out[i] = bfpDecode(uint32(c&0x7f), c&0x80 != 0, e, 7)
		}
	case BFLOAT4_B:
		e := uint32(tile[r])
		codes := tile[FaceRows+r*FaceDim/2 : FaceRows+(r+1)*FaceDim/2]
		for k, c := range codes {
			out[2*k] = bfpDecode(uint32(c&0x7), c&0x8 != 0, e, 3)
			out[2*k+1] = bfpDecode(uint32(c>>4&0x7), c&0x80 != 0, e, 3)
		}
	case BFLOAT16:
		for i := range out {
			out[i] = numfmt.BF16ToF32(binary.LittleEndian.Uint16(tile[2*(r*FaceDim+i):]))
		}
	case FLOAT32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(tile[4*(r*FaceDim+i):]))
		}
	}
}

// EncodeFaceRow encodes 16 values of a tile's face row r into tile.
func EncodeFaceRow(dt DType, tile []byte, r int, p *[FaceDim]float32) {
	switch dt {
	case BFLOAT8_B:
		tile[r] = bfp8FaceRow((*[FaceDim]byte)(tile[FaceRows+r*FaceDim:]), p)
	case BFLOAT4_B:
		tile[r] = bfp4FaceRow((*[FaceDim / 2]byte)(tile[FaceRows+r*FaceDim/2:]), p)
	case BFLOAT16:
		out := (*[2 * FaceDim]byte)(tile[r*2*FaceDim:])
		for i, f := range p {
			binary.LittleEndian.PutUint16(out[2*i:], numfmt.BF16Bits(f))
		}
	case FLOAT32:
		out := (*[4 * FaceDim]byte)(tile[r*4*FaceDim:])
		for i, f := range p {
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
	}
}

package numfmt

import (
	"encoding/binary"
	"fmt"
	"math"
)

// BlockScales are the decoded block scales of a block-FP8 matrix of Cols
// columns: one scale per [BM, BN] block, row-major [ceil(rows/BM), SCols]
// with SCols = ceil(Cols/BN). Dequantize is the one block dequantiser of
// the module: the reader (ckpt.Values) and diff decode through it, the
// cache builder and extract through its tables (ScaleTable16,
// ScaleTable32).
type BlockScales struct {
	Cols, BM, BN, SCols int64
	Scale               []float32
	// FusedE4M3 decodes and scales F8_E4M3 codes in one pass,
	// table[code]·scale (an AVX2 kernel on amd64): the same products,
	// except that which NaN a NaN scale gives (its sign) may differ from
	// decoding first and then scaling in place, which Dequantize does
	// without it.
	FusedE4M3 bool
}

// At returns the scale of element (i, j).
func (b *BlockScales) At(i, j int64) float32 { return b.Scale[(i/b.BM)*b.SCols+j/b.BN] }

// Dequantize decodes len(dst) elements of dtype dt from raw, the elements
// [g, g+len(dst)) of the row-major matrix, into dst and multiplies each by
// its block's scale: the float32 product decode(code)·scale, rounded once.
// The run may cross rows. With FusedE4M3, F8_E4M3 codes are decoded and
// scaled in one pass.
func (b *BlockScales) Dequantize(dt DType, raw []byte, g int64, dst []float32) error {
	e4m3 := b.FusedE4M3 && dt == F8E4M3
	if e4m3 {
		if len(raw) < len(dst) {
			return fmt.Errorf("decoding %d F8_E4M3 values: have %d bytes", len(dst), len(raw))
		}
	} else if err := DecodeFloat32(dt, raw, dst); err != nil {
		return err
	}
	for k := int64(0); k < int64(len(dst)); {
		r, c := (g+k)/b.Cols, (g+k)%b.Cols
		srow := b.Scale[(r/b.BM)*b.SCols:]
		for ; c < b.Cols && k < int64(len(dst)); c = (c/b.BN + 1) * b.BN {
			end := min((c/b.BN+1)*b.BN, b.Cols)
			n := min(end-c, int64(len(dst))-k)
			sc := srow[c/b.BN]
			seg := dst[k : k+n]
			if e4m3 {
				decodeE4M3Scaled(e4m3Table, raw[k:k+n], seg, sc)
			} else {
				for i := range seg {
					seg[i] *= sc
				}
			}
			k += n
		}
	}
	return nil
}

// DequantizeE4M3 is Dequantize for F8_E4M3 codes encoded straight in out
// (BF16, F16 or F32, little-endian; DequantE4M3 for every block's run of
// codes): the elements [g, g+len(raw)) of the row-major matrix into dst
// (len(raw)·out bytes; the run may cross rows), the bytes of a
// ScaleTable16/ScaleTable32 lookup of each block's scale. It reports
// whether raw holds a NaN code.
func (b *BlockScales) DequantizeE4M3(out DType, raw []byte, g int64, dst []byte) (nan bool, err error) {
	n := int64(len(raw))
	if n == 0 {
		return false, nil
	}
	if b.Cols <= 0 || g < 0 {
		return false, fmt.Errorf("dequantising %d F8_E4M3 codes at element %d of a matrix of %d columns", n, g, b.Cols)
	}
	d, err := outBytes(out)
	if err != nil {
		return false, err
	}
	db := int64(d)
	if int64(len(dst)) < n*db {
		return false, fmt.Errorf("dequantising %d F8_E4M3 codes to %s: have %d of %d bytes", n, out, len(dst), n*db)
	}
	// One division per row, none per block.
	r, c := g/b.Cols, g%b.Cols
	for k := int64(0); k < n; r, c = r+1, 0 {
		srow := b.Scale[(r/b.BM)*b.SCols:]
		for bc := c / b.BN; c < b.Cols && k < n; bc++ {
			m := min(min((bc+1)*b.BN, b.Cols)-c, n-k)
			nan = dequantE4M3(dst[k*db:(k+m)*db], raw[k:k+m], srow[bc], out, int(db)) || nan
			k, c = k+m, c+m
		}
	}
	return nan, nil
}

// decodeE4M3Go sets dst[i] = t[codes[i]]·s; len(codes) >= len(dst).
func decodeE4M3Go(t *[256]float32, codes []byte, dst []float32, s float32) {
	codes = codes[:len(dst)]
	for i, c := range codes {
		dst[i] = t[c] * s
	}
}

// codeTable returns the float32 value of every code of a one-byte float
// dtype (nil for others).
func codeTable(dt DType) *[256]float32 {
	switch dt {
	case F8E4M3:
		return e4m3Table
	case F8E5M2:
		return e5m2Table
	case F8E8M0:
		return e8m0Table
	}
	return nil
}

// ScaleTable16 sets t[c], for every code c of the one-byte float dtype src,
// to the 16-bit encoding in out of the dequantised value decode(c)·scale
// (the float32 product): BF16 rounded under the NaN policy nan, or F16.
// One table serves a whole scale block: a lookup per code gives the same
// bits as dequantising and then encoding.
func ScaleTable16(t *[256]uint16, src DType, scale float32, out DType, nan NaNPolicy) error {
	var p [256]float32
	if err := products(&p, src, scale); err != nil {
		return err
	}
	switch out {
	case BF16:
		for c, x := range p {
			t[c] = F32ToBF16NaN(x, nan)
		}
	case F16:
		for c, x := range p {
			t[c] = F32ToF16(x)
		}
	default:
		return fmt.Errorf("cannot encode float32 as %s", out)
	}
	return nil
}

// products sets p[c] = decode(c)·scale for every code of src, in a loop of
// its own: which NaN a NaN scale gives (its sign, which F16 and KeepNaN
// keep) then does not depend on how an encoder is compiled around it.
func products(p *[256]float32, src DType, scale float32) error {
	dec := codeTable(src)
	if dec == nil {
		return fmt.Errorf("cannot decode dtype %s to float32", src)
	}
	for c, d := range dec {
		p[c] = d * scale
	}
	return nil
}

// ScaleTable32 is ScaleTable16 for F32 output: t[c] holds the float32 bits
// of decode(c)·scale.
func ScaleTable32(t *[256]uint32, src DType, scale float32) error {
	var p [256]float32
	if err := products(&p, src, scale); err != nil {
		return err
	}
	for c, x := range p {
		t[c] = math.Float32bits(x)
	}
	return nil
}

// LookupE4M3 is the table path of block dequantisation: out[i] = t[in[i]]
// for the F8_E4M3 codes in (len(out) >= len(in)), t a table of
// ScaleTable16, eight codes at a time. It reports whether in holds an
// F8_E4M3 NaN code (0x7f or 0xff, the format's only non-finite codes): the
// test rides on the words the lookups load, so a caller's NaN guard needs
// no pass of its own over the codes.
func LookupE4M3(out []uint16, in []byte, t *[256]uint16) (nan bool) {
	const low7, one, top = 0x7f7f7f7f7f7f7f7f, 0x0101010101010101, 0x8080808080808080
	out = out[:len(in)]
	var acc uint64
	for len(in) >= 8 {
		o := (*[8]uint16)(out)
		x := binary.LittleEndian.Uint64(in)
		// A byte's low seven bits plus one carry into its top bit only
		// when they are all ones (no carry crosses bytes).
		acc |= ((x & low7) + one) & top
		o[0], o[1], o[2], o[3] = t[byte(x)], t[byte(x>>8)], t[byte(x>>16)], t[byte(x>>24)]
		o[4], o[5], o[6], o[7] = t[byte(x>>32)], t[byte(x>>40)], t[byte(x>>48)], t[byte(x>>56)]
		in, out = in[8:], out[8:]
	}
	for i, c := range in {
		out[i] = t[c]
		if c&0x7f == 0x7f {
			acc = 1
		}
	}
	return acc != 0
}

// outBytes is the size of one BF16, F16 or F32 output value (no
// DType.Bits: a map lookup per call).
func outBytes(out DType) (int, error) {
	switch out {
	case BF16, F16:
		return 2, nil
	case F32:
		return 4, nil
	}
	return 0, fmt.Errorf("cannot encode float32 as %s", out)
}

// DequantE4M3 writes to dst the encoding in out (BF16, F16 or F32,
// little-endian) of e4m3(codes[i])·s for every code, the float32 product
// rounded once (BF16 nearest even keeping a NaN's sign and payload, as
// F32ToBF16): the bytes of EncodeFloat32(out, ...) of the products, and of
// a ScaleTable16 or ScaleTable32 lookup. dst must hold len(codes)·out
// bytes. It reports whether codes holds a NaN code (0x7f or 0xff, the
// format's only non-finite codes), so that a caller's NaN guard needs no
// pass of its own. On amd64 with AVX2 (and F16C for F16) a kernel does the
// work (DequantE4M3Fast).
func DequantE4M3(dst []byte, codes []byte, s float32, out DType) (nan bool, err error) {
	db, err := outBytes(out)
	if err != nil {
		return false, err
	}
	if need := len(codes) * db; len(dst) < need {
		return false, fmt.Errorf("dequantising %d F8_E4M3 codes to %s: have %d of %d bytes", len(codes), out, len(dst), need)
	}
	return dequantE4M3(dst, codes, s, out, db), nil
}

// DequantE4M3Fast reports whether DequantE4M3 into out runs a vector
// kernel on this machine (else it is a loop of scalar products, slower
// than a ScaleTable lookup).
func DequantE4M3Fast(out DType) bool { return dequantE4M3Kernel(out) }

// dequantE4M3Go is the Go reference of DequantE4M3.
func dequantE4M3Go(dst []byte, codes []byte, s float32, out DType, db int) (nan bool) {
	for i, c := range codes {
		putScaled(dst[i*db:], c, s, out)
		if c&0x7f == 0x7f {
			nan = true
		}
	}
	return nan
}

// putScaled encodes e4m3(c)·s in out at b. A NaN code gives its own
// (quiet) NaN whatever s is: the product the tables (products) and the
// decode loops give it, also under a NaN scale, where the compiled
// operand order of a product would otherwise choose between two NaNs.
func putScaled(b []byte, c byte, s float32, out DType) {
	x := e4m3Table[c]
	if x == x {
		x *= s
	}
	switch out {
	case BF16:
		binary.LittleEndian.PutUint16(b, F32ToBF16NaN(x, KeepNaN))
	case F16:
		binary.LittleEndian.PutUint16(b, F32ToF16(x))
	default:
		binary.LittleEndian.PutUint32(b, math.Float32bits(x))
	}
}

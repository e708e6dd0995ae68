package extract

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// scaleLUT dequantises 8-bit codes (F8_E4M3) under block scales: F8_E4M3
// codes by numfmt.BlockScales.DequantizeE4M3 where numfmt has a vector
// kernel for the output (numfmt.DequantE4M3Fast: AVX2), other codes by
// table:
// for each block column of the current block row, the output bytes of
// every code c, EncodeFloat32(decode(c) × scale) (numfmt.ScaleTable16/32):
// the float32 product and rounding of the dequantise (numfmt.BlockScales)
// and encode route, so the bytes are the same. A table costs 256
// conversions and serves a BM × BN block (16 Ki values for [128, 128]).
type scaleLUT struct {
	src, out numfmt.DType
	db       int      // output bytes per value (2 or 4)
	kernel   bool     // numfmt.DequantE4M3 instead of tables
	blockRow int64    // block row the tables are for (-1: none)
	t16      []uint16 // sCols tables of 256 (db = 2)
	t32      []uint32 // (db = 4)
}

func newScaleLUT(src, out numfmt.DType, v *ckpt.Values) (*scaleLUT, error) {
	if src == numfmt.F8E4M3 && numfmt.DequantE4M3Fast(out) {
		return &scaleLUT{src: src, out: out, db: out.Bits() / 8, blockRow: -1, kernel: true}, nil
	}
	return newTableLUT(src, out, v)
}

// newTableLUT is a scaleLUT of tables whatever the codes.
func newTableLUT(src, out numfmt.DType, v *ckpt.Values) (*scaleLUT, error) {
	l := &scaleLUT{src: src, out: out, db: out.Bits() / 8, blockRow: -1}
	sCols := (v.Cols + v.BN - 1) / v.BN
	if l.db == 2 {
		l.t16 = make([]uint16, sCols*256)
	} else {
		l.t32 = make([]uint32, sCols*256)
	}
	var codes [256]byte
	var dec [256]float32
	if err := numfmt.DecodeFloat32(src, codes[:], dec[:]); err != nil {
		return nil, err
	}
	return l, nil
}

// tables builds the tables of block row br (numfmt.ScaleTable16/32: the
// bits EncodeFloat32 gives the product, BF16 keeping NaN sign and payload).
func (l *scaleLUT) tables(v *ckpt.Values, br int64) error {
	sCols := (v.Cols + v.BN - 1) / v.BN
	for j := int64(0); j < sCols; j++ {
		sc := v.ScaleAt(br*v.BM, j*v.BN)
		var err error
		if l.db == 2 {
			err = numfmt.ScaleTable16((*[256]uint16)(l.t16[j*256:]), l.src, sc, l.out, numfmt.KeepNaN)
		} else if l.out == numfmt.F32 {
			err = numfmt.ScaleTable32((*[256]uint32)(l.t32[j*256:]), l.src, sc)
		} else {
			err = fmt.Errorf("cannot encode float32 as %s", l.out)
		}
		if err != nil {
			return err
		}
	}
	l.blockRow = br
	return nil
}

// convert writes to enc the output of the codes raw, the elements
// [e0, e0+len(raw)) of the row-major matrix v. When scanned, nan says
// whether raw holds a NaN code (F8_E4M3: the kernel and LookupE4M3 see
// them on the way); otherwise the caller scans raw itself.
func (l *scaleLUT) convert(v *ckpt.Values, e0 int64, raw []byte, enc []byte) (scanned, nan bool, err error) {
	if l.kernel {
		nan, err := v.Blocks().DequantizeE4M3(l.out, raw, e0, enc)
		return err == nil, nan, err
	}
	cols := v.Cols
	scanned = l.src == numfmt.F8E4M3 && l.db == 2 && littleEndian
	for k := int64(0); k < int64(len(raw)); {
		e := e0 + k
		i, j := e/cols, e%cols
		bc := j / v.BN
		run := min(min((bc+1)*v.BN, cols)-j, int64(len(raw))-k)
		seg := raw[k : k+run]
		if br := i / v.BM; br != l.blockRow {
			if err := l.tables(v, br); err != nil {
				return false, false, err
			}
		}
		switch {
		case l.db == 2 && littleEndian:
			t := (*[256]uint16)(l.t16[bc*256:])
			out := unsafe.Slice((*uint16)(unsafe.Pointer(&enc[2*k])), run)
			if l.src == numfmt.F8E4M3 {
				nan = numfmt.LookupE4M3(out, seg, t) || nan
				break
			}
			for x, c := range seg {
				out[x] = t[c]
			}
		case l.db == 2:
			t := (*[256]uint16)(l.t16[bc*256:])
			out := enc[2*k : 2*(k+run)]
			for x, c := range seg {
				binary.LittleEndian.PutUint16(out[2*x:], t[c])
			}
		case littleEndian:
			t := (*[256]uint32)(l.t32[bc*256:])
			out := unsafe.Slice((*uint32)(unsafe.Pointer(&enc[4*k])), run)
			for x, c := range seg {
				out[x] = t[c]
			}
		default:
			t := (*[256]uint32)(l.t32[bc*256:])
			out := enc[4*k : 4*(k+run)]
			for x, c := range seg {
				binary.LittleEndian.PutUint32(out[4*x:], t[c])
			}
		}
		k += run
	}
	return scanned, nan, nil
}

// littleEndian: the host stores integers as the output does, so tables of
// uint16 or uint32 are stored straight into the output bytes (encoded
// little-endian otherwise).
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

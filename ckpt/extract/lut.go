package extract

import (
	"encoding/binary"
	"unsafe"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// scaleLUT dequantises 8-bit codes (F8_E4M3) under block scales by table:
// for each block column of the current block row, the output bytes of
// every code c, EncodeFloat32(decode(c) × scale) — the float32 product and
// rounding of the decode, applyScale and encode route, computed by that
// route for the 256 codes, so the bytes are the same. A table costs 256
// conversions and serves a BM × BN block (16 Ki values for [128, 128]).
type scaleLUT struct {
	out      ckpt.DType
	db       int          // output bytes per value (2 or 4)
	dec      [256]float32 // decoded codes
	blockRow int64        // block row the tables are for (-1: none)
	t16      []uint16     // sCols tables of 256 (db = 2)
	t32      []uint32     // (db = 4)
	tmp      [256]float32
	tb       [256 * 4]byte
}

func newScaleLUT(src, out ckpt.DType, v *ckpt.Values) (*scaleLUT, error) {
	l := &scaleLUT{out: out, db: out.Bits() / 8, blockRow: -1}
	var codes [256]byte
	for c := range codes {
		codes[c] = byte(c)
	}
	if err := ckpt.DecodeFloat32(src, codes[:], l.dec[:]); err != nil {
		return nil, err
	}
	sCols := (v.Cols + v.BN - 1) / v.BN
	if l.db == 2 {
		l.t16 = make([]uint16, sCols*256)
	} else {
		l.t32 = make([]uint32, sCols*256)
	}
	return l, nil
}

// tables builds the tables of block row br.
func (l *scaleLUT) tables(v *ckpt.Values, br int64) error {
	sCols := (v.Cols + v.BN - 1) / v.BN
	for j := int64(0); j < sCols; j++ {
		sc := v.ScaleAt(br*v.BM, j*v.BN)
		for c, d := range l.dec {
			l.tmp[c] = d * sc
		}
		tb := l.tb[:256*l.db]
		if err := ckpt.EncodeFloat32(l.out, l.tmp[:], tb); err != nil {
			return err
		}
		if l.db == 2 {
			t := l.t16[j*256 : (j+1)*256]
			for c := range t {
				t[c] = binary.LittleEndian.Uint16(tb[2*c:])
			}
		} else {
			t := l.t32[j*256 : (j+1)*256]
			for c := range t {
				t[c] = binary.LittleEndian.Uint32(tb[4*c:])
			}
		}
	}
	l.blockRow = br
	return nil
}

// convert writes to enc the output of the codes raw, the elements
// [e0, e0+len(raw)) of the row-major matrix v.
func (l *scaleLUT) convert(v *ckpt.Values, e0 int64, raw []byte, enc []byte) error {
	cols := v.Cols
	for k := int64(0); k < int64(len(raw)); {
		e := e0 + k
		i, j := e/cols, e%cols
		if br := i / v.BM; br != l.blockRow {
			if err := l.tables(v, br); err != nil {
				return err
			}
		}
		bc := j / v.BN
		run := min(min((bc+1)*v.BN, cols)-j, int64(len(raw))-k)
		seg := raw[k : k+run]
		switch {
		case l.db == 2 && littleEndian:
			t := (*[256]uint16)(l.t16[bc*256:])
			out := unsafe.Slice((*uint16)(unsafe.Pointer(&enc[2*k])), run)
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
	return nil
}

// littleEndian: the host stores integers as the output does, so tables of
// uint16 or uint32 are stored straight into the output bytes (encoded
// little-endian otherwise).
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

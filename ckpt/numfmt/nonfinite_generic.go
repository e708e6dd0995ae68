package numfmt

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Scan is what ScanNonFinite found in a run of elements.
type Scan struct {
	NaN, Inf int64
	// First is the element index of the first NaN or Inf (-1 if none);
	// FirstInf says it is an Inf.
	First    int64
	FirstInf bool
}

// lanes describes where a dtype's exponent is: every lane of width bytes
// whose exp bits are all ones is NaN or Inf (mantissa bits man zero: Inf).
type lanes struct {
	width       int
	exp, lo     uint64 // exponent mask and its lowest bit, in one lane
	sign        uint64 // the lane's top bit
	man         uint64 // mantissa mask (0: every hit is NaN)
	nanOnlyCode int    // for 8-bit formats with one NaN code (FNUZ, E8M0): the code; else -1
	// exp8, lo8, sign8: exp, lo and sign repeated over a 64-bit word.
	exp8, lo8, sign8 uint64
}

var laneTable = func() map[DType]*lanes {
	t := map[DType]*lanes{
		F8E4M3: {width: 1, exp: 0x7f, lo: 0x01, sign: 0x80, nanOnlyCode: -1},
		F8E5M2: {width: 1, exp: 0x7c, lo: 0x04, sign: 0x80, man: 0x03, nanOnlyCode: -1},
		BF16:   {width: 2, exp: 0x7f80, lo: 0x0080, sign: 0x8000, man: 0x007f, nanOnlyCode: -1},
		F16:    {width: 2, exp: 0x7c00, lo: 0x0400, sign: 0x8000, man: 0x03ff, nanOnlyCode: -1},
		F32:    {width: 4, exp: 0x7f800000, lo: 0x00800000, sign: 0x80000000, man: 0x007fffff, nanOnlyCode: -1},
		F64:    {width: 8, exp: 0x7ff0000000000000, lo: 0x0010000000000000, sign: 0x8000000000000000, man: 0x000fffffffffffff, nanOnlyCode: -1},

		F8E8M0:     {width: 1, nanOnlyCode: 0xff},
		F8E4M3FNUZ: {width: 1, nanOnlyCode: 0x80},
		F8E5M2FNUZ: {width: 1, nanOnlyCode: 0x80},
	}
	for _, l := range t {
		l.exp8, l.lo8, l.sign8 = repeat(l.exp, l.width), repeat(l.lo, l.width), repeat(l.sign, l.width)
	}
	return t
}()

func repeat(v uint64, width int) uint64 {
	var out uint64
	for i := 0; i < 8; i += width {
		out |= v << (8 * i)
	}
	return out
}

// CanBeNonFinite reports whether dt has NaN or Inf encodings that
// ScanNonFinite counts.
func CanBeNonFinite(dt DType) bool { _, ok := laneTable[dt]; return ok }

// ScanNonFinite is the one NaN/Inf scanner of the module. It counts the
// NaN and Inf encodings in raw little-endian elements of dt: an all-ones
// exponent for F8_E5M2, BF16, F16, F32 and F64 (a zero mantissa is Inf),
// the NaN codes 0x7f/0xff of F8_E4M3 (which has no Inf), 0xff of F8_E8M0
// and 0x80 of the FNUZ formats; other dtypes count nothing, and a partial
// element at the end is ignored. Runs without any are skipped 32 bytes
// per test (eight bytes a word, one test for four words; F8_E4M3 128
// bytes per test with AVX2 on amd64); the group where a test fires is
// resolved element by element.
func ScanNonFinite(dt DType, raw []byte) Scan {
	s := Scan{First: -1}
	l, ok := laneTable[dt]
	if !ok {
		return s
	}
	if l.nanOnlyCode >= 0 {
		c := byte(l.nanOnlyCode)
		for i, b := range raw {
			if b == c {
				if s.First < 0 {
					s.First = int64(i)
				}
				s.NaN++
			}
		}
		return s
	}
	for i := 0; i < len(raw); {
		i += cleanPrefix(l, raw[i:])
		end := min(i+cleanGroup, len(raw))
		resolve(l, raw, i, end, &s)
		i = end
	}
	return s
}

// CountNonFiniteF32 counts the NaN and Inf values of vals: ScanNonFinite
// over their F32 encoding (on a little-endian host the memory of vals
// itself, not copied).
func CountNonFiniteF32(vals []float32) (nan, inf int64) {
	var raw []byte
	if littleEndian {
		raw = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(vals))), 4*len(vals))
	} else {
		raw = make([]byte, 4*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
		}
	}
	s := ScanNonFinite(F32, raw)
	return s.NaN, s.Inf
}

// littleEndian: the host stores a float32 as its little-endian encoding.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// HasNonFinite reports whether raw holds a NaN or Inf of dt
// (ScanNonFinite(dt, raw) finds one), stopping at the first.
func HasNonFinite(dt DType, raw []byte) bool {
	l, ok := laneTable[dt]
	if !ok {
		return false
	}
	if l.nanOnlyCode >= 0 {
		for _, b := range raw {
			if b == byte(l.nanOnlyCode) {
				return true
			}
		}
		return false
	}
	var s Scan
	s.First = -1
	i := cleanPrefix(l, raw)
	resolve(l, raw, i, min(i+cleanGroup, len(raw)), &s)
	return s.First >= 0
}

// resolve counts the hits among the elements in raw[i:end] (i a multiple
// of the width) into s.
func resolve(l *lanes, raw []byte, i, end int, s *Scan) {
	w := l.width
	for j := i; j+w <= end; j += w {
		var lane uint64
		switch w {
		case 1:
			lane = uint64(raw[j])
		case 2:
			lane = uint64(binary.LittleEndian.Uint16(raw[j:]))
		case 4:
			lane = uint64(binary.LittleEndian.Uint32(raw[j:]))
		default:
			lane = binary.LittleEndian.Uint64(raw[j:])
		}
		if lane&l.exp != l.exp {
			continue
		}
		inf := l.man != 0 && lane&l.man == 0
		if s.First < 0 {
			s.First, s.FirstInf = int64(j/w), inf
		}
		if inf {
			s.Inf++
		} else {
			s.NaN++
		}
	}
}

// cleanPrefixGo returns the length of the longest prefix of whole 32-byte
// groups of p without a NaN or Inf of l: a lane's masked exponent plus its
// lowest bit carries into the lane's top bit only when the exponent is all
// ones (no carry crosses lanes), so one test covers four words.
func cleanPrefixGo(l *lanes, p []byte) int {
	exp, lo, sign := l.exp8, l.lo8, l.sign8
	i := 0
	for ; i+32 <= len(p); i += 32 {
		b := p[i : i+32 : i+32]
		w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if (((w0&exp)+lo)|((w1&exp)+lo)|((w2&exp)+lo)|((w3&exp)+lo))&sign != 0 {
			break
		}
	}
	return i
}

// e4m3Lanes is the F8_E4M3 entry, which has an AVX2 clean-prefix kernel.
var e4m3Lanes = laneTable[F8E4M3]

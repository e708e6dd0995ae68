package diff

import (
	"encoding/binary"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// FP8 codes are compared by the value they decode to, not bit for bit:
// +0 (0x00) and -0 (0x80) are the same number, and two NaN codes are
// equally "not a number". Quantisers disagree on the sign of a zero (torch
// keeps the sign of a tiny negative value that rounds to zero, numpy-style
// ones store +0), so a bitwise comparison would call the same weights
// different. canon maps every code to one representative of its value
// class; two codes decode to the same value iff their representatives
// are equal.
//
// A code is a NaN when its low seven bits exceed the dtype's nanAbove.
const (
	nanAboveE4M3 = 0x7e // E4M3FN: NaN is S.1111.111
	nanAboveE5M2 = 0x7c // E5M2: NaN is S.11111.mm, mm ≠ 0
)

var (
	canonE4M3 = canonTable(nanAboveE4M3)
	canonE5M2 = canonTable(nanAboveE5M2)
)

func canonTable(nanAbove byte) *[256]byte {
	var t [256]byte
	for i := range t {
		c := byte(i)
		switch {
		case c&0x7f == 0:
			t[i] = 0
		case c&0x7f > nanAbove:
			t[i] = 0x7f
		default:
			t[i] = c
		}
	}
	return &t
}

// canonOf returns the representative table of a one-byte float dtype and
// the bound above which the low seven bits of a code make it a NaN.
func canonOf(dt ckpt.DType) (*[256]byte, byte) {
	if dt == ckpt.F8E5M2 {
		return canonE5M2, nanAboveE5M2
	}
	return canonE4M3, nanAboveE4M3
}

// sameValue reports whether two decoded values are equal, counting ±0 as
// equal and NaN as equal to NaN.
func sameValue(x, y float32) bool { return x == y || (x != x && y != y) }

// countFP8Diff counts the elements of two FP8 segments (codes a, b and
// their decoded values bF, fF) that differ: codes that decode to different
// values or, when the block scales of the two sides differ, values that
// differ after scaling. zeroSign counts codes that differ only in the sign
// of zero (not counted as changed).
func countFP8Diff(dt ckpt.DType, a, b []byte, bF, fF []float32, scalesSame bool) (changed, zeroSign int64) {
	if scalesSame {
		return countFP8DiffGo(dt, a, b, bF, fF, true)
	}
	// Two codes have the same representative iff they are equal, both ±0
	// or both NaN; countFP8Values tests that, and the values, without a
	// branch per element, on a prefix (on amd64: all but the last 15).
	_, nanAbove := canonOf(dt)
	i, changed, zeroSign := countFP8Values(nanAbove, a, b[:len(a)], bF, fF)
	ch, zs := countFP8DiffGo(dt, a[i:], b[i:len(a)], bF[i:], fF[i:], false)
	return changed + ch, zeroSign + zs
}

// countFP8DiffGo is countFP8Diff in Go, one element at a time (eight at a
// time while the codes are equal when the scales are the same).
func countFP8DiffGo(dt ckpt.DType, a, b []byte, bF, fF []float32, scalesSame bool) (changed, zeroSign int64) {
	tab, _ := canonOf(dt)
	b = b[:len(a)]
	i := 0
	if scalesSame {
		for ; i+8 <= len(a); i += 8 {
			if binary.LittleEndian.Uint64(a[i:]) == binary.LittleEndian.Uint64(b[i:]) {
				continue
			}
			for k := i; k < i+8; k++ {
				if x, y := a[k], b[k]; x != y {
					if tab[x] != tab[y] {
						changed++
					} else if x&0x7f == 0 {
						zeroSign++
					}
				}
			}
		}
	}
	for ; i < len(a); i++ {
		x, y := a[i], b[i]
		if x != y {
			if tab[x] != tab[y] {
				changed++
				continue
			}
			if x&0x7f == 0 {
				zeroSign++
			}
		}
		if !scalesSame && !sameValue(bF[i], fF[i]) {
			changed++
		}
	}
	return changed, zeroSign
}

// sameCode reports whether two E4M3 codes decode to the same value, and
// whether they differ only in the sign of zero.
func sameCode(x, y byte) (same, zeroSign bool) {
	if x == y {
		return true, false
	}
	if canonE4M3[x] != canonE4M3[y] {
		return false, false
	}
	return true, x&0x7f == 0
}

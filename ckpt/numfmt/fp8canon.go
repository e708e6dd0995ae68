package numfmt

// FP8 codes are compared by the value they decode to, not bit for bit:
// +0 (0x00) and -0 (0x80) are the same number, and two NaN codes are
// equally "not a number". Quantisers disagree on the sign of a zero (torch
// keeps the sign of a tiny negative value that rounds to zero, numpy-style
// ones store +0), so a bitwise comparison would call the same weights
// different. A canonical table maps every code to one representative of
// its value class; two codes decode to the same value iff their
// representatives are equal.
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

// CanonFP8 returns the representative table of F8_E5M2 (for dt F8_E5M2)
// or F8_E4M3 (any other dt) and the bound above which the low seven bits
// of a code make it a NaN. Read only.
func CanonFP8(dt DType) (tab *[256]byte, nanAbove byte) {
	if dt == F8E5M2 {
		return canonE5M2, nanAboveE5M2
	}
	return canonE4M3, nanAboveE4M3
}

// SameE4M3 reports whether two F8_E4M3 codes decode to the same value,
// and whether they differ only in the sign of zero.
func SameE4M3(x, y byte) (same, zeroSign bool) {
	if x == y {
		return true, false
	}
	if canonE4M3[x] != canonE4M3[y] {
		return false, false
	}
	return true, x&0x7f == 0
}

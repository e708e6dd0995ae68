package diff

import (
	"encoding/binary"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// FP8 codes are compared by the value they decode to, not bit for bit
// (numfmt.CanonFP8: ±0 are one value, NaN codes are equally "not a
// number").
func canonOf(dt numfmt.DType) (*[256]byte, byte) { return numfmt.CanonFP8(dt) }

// sameValue reports whether two decoded values are equal, counting ±0 as
// equal and NaN as equal to NaN.
func sameValue(x, y float32) bool { return x == y || (x != x && y != y) }

// countFP8Diff counts the elements of two FP8 segments (codes a, b and
// their decoded values bF, fF) that differ: codes that decode to different
// values or, when the block scales of the two sides differ, values that
// differ after scaling. zeroSign counts codes that differ only in the sign
// of zero (not counted as changed).
func countFP8Diff(dt numfmt.DType, a, b []byte, bF, fF []float32, scalesSame bool) (changed, zeroSign int64) {
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
func countFP8DiffGo(dt numfmt.DType, a, b []byte, bF, fF []float32, scalesSame bool) (changed, zeroSign int64) {
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

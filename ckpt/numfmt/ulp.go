package numfmt

// ULPDistanceF32 is the distance between two float32 values, given by
// their bits, in units in the last place: the number of float32 values
// one must step over to go from a to b, counted on the bits as ordered
// integers (−0 and +0 are both 0, so they are 0 apart; the smallest
// denormals of either sign are 1 from zero and 2 from each other). ok is
// false when the bits differ and either value is a NaN or an infinity: a
// NaN is no distance from anything, and an infinity is equal only to
// itself (not 1 ulp beyond the largest finite value).
func ULPDistanceF32(a, b uint32) (ulp uint64, ok bool) {
	if a == b {
		return 0, true
	}
	if a&0x7f800000 == 0x7f800000 || b&0x7f800000 == 0x7f800000 {
		return 0, false
	}
	return absDiff(ordered(a, 31), ordered(b, 31)), true
}

// ULPDistanceBF16 is ULPDistanceF32 for two bfloat16 values: units in the
// last place of bfloat16.
func ULPDistanceBF16(a, b uint16) (ulp uint64, ok bool) {
	if a == b {
		return 0, true
	}
	if a&0x7f80 == 0x7f80 || b&0x7f80 == 0x7f80 {
		return 0, false
	}
	return absDiff(ordered(uint32(a), 15), ordered(uint32(b), 15)), true
}

// ordered maps the bits of a sign-magnitude float whose sign is bit sign
// to an integer that orders as the values do (both zeros to 0).
func ordered(bits uint32, sign uint) int64 {
	mag := int64(bits &^ (1 << sign))
	if bits>>sign&1 != 0 {
		return -mag
	}
	return mag
}

func absDiff(x, y int64) uint64 {
	if x > y {
		return uint64(x - y)
	}
	return uint64(y - x)
}

package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestULPDistanceF32(t *testing.T) {
	t.Parallel()
	one := math.Float32bits(1)
	negOne := math.Float32bits(-1)
	maxF := math.Float32bits(math.MaxFloat32)
	inf, negInf := math.Float32bits(float32(math.Inf(1))), math.Float32bits(float32(math.Inf(-1)))
	nan := uint32(0x7fc00000)
	for _, tc := range []struct {
		name string
		a, b uint32
		ulp  uint64
		ok   bool
	}{
		{"0 ulp: same bits", one, one, 0, true},
		{"1 ulp above", one, one + 1, 1, true},
		{"1 ulp below", one, one - 1, 1, true},
		{"2 ulp", one, one + 2, 2, true},
		{"1 ulp, negative", negOne, negOne + 1, 1, true},
		{"2 ulp, negative", negOne + 2, negOne, 2, true},
		{"across a binade: 1 ulp", math.Float32bits(2), math.Float32bits(2) - 1, 1, true},
		{"+0 and -0: equal values, 0 apart", 0, 0x80000000, 0, true},
		{"+0 and the smallest negative denormal", 0, 0x80000001, 1, true},
		{"sign change: the smallest denormals", 1, 0x80000001, 2, true},
		{"sign change: 1 and -1", one, negOne, 2 * uint64(one), true},
		{"NaN against a number", nan, one, 0, false},
		{"NaN against NaN, other bits", nan, nan | 1, 0, false},
		{"NaN against itself: same bits", nan, nan, 0, true},
		{"+Inf against the largest finite value", inf, maxF, 0, false},
		{"+Inf against itself", inf, inf, 0, true},
		{"-Inf against +Inf", negInf, inf, 0, false},
	} {
		ulp, ok := ULPDistanceF32(tc.a, tc.b)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.ulp, ulp, tc.name)
		ulp, ok = ULPDistanceF32(tc.b, tc.a)
		assert.Equal(t, tc.ok, ok, tc.name+" (swapped)")
		assert.Equal(t, tc.ulp, ulp, tc.name+" (swapped)")
	}
}

func TestULPDistanceBF16(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		a, b uint16
		ulp  uint64
		ok   bool
	}{
		{"0 ulp", 0x3f80, 0x3f80, 0, true},
		{"1 ulp", 0x3f80, 0x3f81, 1, true},
		{"2 ulp", 0x3f80, 0x3f7e, 2, true},
		{"+0 and -0", 0x0000, 0x8000, 0, true},
		{"sign change: the smallest denormals", 0x0001, 0x8001, 2, true},
		{"NaN", 0x7fc0, 0x3f80, 0, false},
		{"NaN styles", 0x7fc0, 0xffff, 0, false},
		{"Inf against the largest finite value", 0x7f80, 0x7f7f, 0, false},
	} {
		ulp, ok := ULPDistanceBF16(tc.a, tc.b)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.ulp, ulp, tc.name)
		ulp, ok = ULPDistanceBF16(tc.b, tc.a)
		assert.Equal(t, tc.ok, ok, tc.name+" (swapped)")
		assert.Equal(t, tc.ulp, ulp, tc.name+" (swapped)")
	}
}

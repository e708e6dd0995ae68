package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e2m1Ref decodes an E2M1 code from its fields: sign, two exponent bits
// (bias 1; exponent 0 is subnormal, m * 0.5), one mantissa bit.
func e2m1Ref(c byte) float64 {
	s, e, m := c>>3&1, int(c>>1&3), float64(c&1)
	v := math.Ldexp(m, -1)
	if e > 0 {
		v = math.Ldexp(1+m/2, e-1)
	}
	if s == 1 {
		v = -v
	}
	return v
}

func TestE2M1AllCodes(t *testing.T) {
	t.Parallel()
	for c := 0; c < 16; c++ {
		got := E2M1ToFloat32(byte(c))
		want := e2m1Ref(byte(c))
		assert.Equal(t, want, float64(got), "code %#x", c)
		assert.Equal(t, c >= 8, math.Signbit(float64(got)), "sign of code %#x", c)
		assert.Equal(t, got, E2M1ToFloat32(byte(c)|0xF0), "high bits of %#x are ignored", c)
	}
	assert.Equal(t, float32(e2m1MaxFinite), E2M1ToFloat32(7))
	assert.Equal(t, float32(-e2m1MaxFinite), E2M1ToFloat32(15))
}

func TestE2M1PackedOrder(t *testing.T) {
	t.Parallel()
	// every byte: element 2i is the low nibble, element 2i+1 the high one.
	for b := 0; b < 256; b++ {
		lo, hi := e2m1Pair(byte(b))
		assert.Equal(t, e2m1Ref(byte(b)&0xF), float64(lo), "low nibble of %#x", b)
		assert.Equal(t, e2m1Ref(byte(b)>>4), float64(hi), "high nibble of %#x", b)
	}
	tests := []struct {
		name string
		src  []byte
		dst  int
		want []float32
		n    int
	}{
		{"two bytes", []byte{0x71, 0x2F}, 4, []float32{0.5, 6, -6, 1}, 4},
		{"short dst decodes whole bytes only", []byte{0x71, 0x2F}, 3, []float32{0.5, 6, 0}, 2},
		{"empty", nil, 0, []float32{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, tc.dst)
			assert.Equal(t, tc.n, UnpackE2M1(dst, tc.src))
			assert.Equal(t, tc.want, dst)
		})
	}
}

func TestE8M0AllCodes(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		got := E8M0ToFloat32(byte(c))
		e, ok := e8m0Exponent(byte(c))
		if c == 0xFF {
			assert.True(t, math.IsNaN(float64(got)), "0xFF is NaN")
			assert.True(t, E8M0IsNaN(byte(c)))
			assert.False(t, ok)
			continue
		}
		require.True(t, ok, "code %#x", c)
		assert.False(t, E8M0IsNaN(byte(c)))
		assert.Equal(t, c-127, e, "code %#x", c)
		assert.Equal(t, math.Ldexp(1, c-127), float64(got), "code %#x", c)
	}
	assert.Equal(t, float32(1), E8M0ToFloat32(127))
	assert.Equal(t, float32(0.5), E8M0ToFloat32(126))
}

func TestE4M3ForNVFP4AllCodes(t *testing.T) {
	t.Parallel()
	for c := 0; c < 256; c++ {
		got := float64(DecodeE4M3(byte(c)))
		if c&0x7F == 0x7F {
			assert.True(t, math.IsNaN(got), "code %#x is NaN", c)
			assert.Equal(t, c >= 0x80, math.Signbit(got), "sign of NaN code %#x", c)
			continue
		}
		// exponent field e (bias 7), mantissa m: (1+m/8)*2^(e-7), or
		// m/8 * 2^-6 for e == 0.
		e, m := c>>3&0xF, float64(c&7)
		want := (1 + m/8) * math.Pow(2, float64(e-7))
		if e == 0 {
			want = m / 8 * math.Pow(2, -6)
		}
		if c&0x80 != 0 {
			want = -want
		}
		assert.Equal(t, want, got, "code %#x", c)
	}
	assert.Equal(t, float32(448), DecodeE4M3(0x7E))
	assert.Equal(t, float32(math.Ldexp(1, -9)), DecodeE4M3(0x01))
}

package ckpt_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e4m3Ref decodes an E4M3FN code from its bit fields in float64: sign
// s, exponent e (bias 7), mantissa m (3 bits); e = 0 is subnormal
// (m × 2^-9); e = 15, m = 7 is NaN; there is no infinity.
func e4m3Ref(c byte) float64 {
	s, e, m := c>>7, int(c>>3)&15, int(c&7)
	var v float64
	switch {
	case e == 15 && m == 7:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), -9)
	default:
		v = math.Ldexp(float64(8+m), e-10)
	}
	if s == 1 {
		v = -v
	}
	return v
}

func sameFloat(t *testing.T, want float64, got float32, msg string, args ...any) {
	t.Helper()
	m := fmt.Sprintf(msg, args...)
	if math.IsNaN(want) {
		assert.True(t, math.IsNaN(float64(got)), m)
		return
	}
	assert.Equal(t, want, float64(got), m)
	assert.Equal(t, math.Signbit(want), math.Signbit(float64(got)), "sign of "+m)
}

func TestDecodeE4M3AllCodes(t *testing.T) {
	t.Parallel()
	// Hand-checked values.
	spot := map[byte]float64{
		0x00: 0, 0x01: 1.0 / 512, 0x02: 2.0 / 512, 0x07: 7.0 / 512, 0x08: 1.0 / 64, 0x09: 1.125 / 64,
		0x10: 1.0 / 32, 0x20: 0.125, 0x30: 0.5, 0x38: 1, 0x39: 1.125, 0x3c: 1.5, 0x3f: 1.875,
		0x40: 2, 0x44: 3, 0x48: 4, 0x50: 8, 0x60: 32, 0x70: 128, 0x77: 240, 0x78: 256, 0x7d: 416,
		0x7e: 448, 0x7f: math.NaN(), 0x80: math.Copysign(0, -1), 0x81: -1.0 / 512, 0x88: -1.0 / 64,
		0xb8: -1, 0xc0: -2, 0xfe: -448, 0xff: math.NaN(),
	}
	for c, want := range spot {
		sameFloat(t, want, numfmt.DecodeE4M3(c), "spot code 0x%02x", c)
	}
	src := make([]byte, 256)
	for i := range src {
		src[i] = byte(i)
	}
	dst := make([]float32, 256)
	require.NoError(t, numfmt.DecodeFloat32(numfmt.F8E4M3, src, dst))
	nan := 0
	for i := 0; i < 256; i++ {
		want := e4m3Ref(byte(i))
		sameFloat(t, want, numfmt.DecodeE4M3(byte(i)), "code 0x%02x", i)
		sameFloat(t, want, dst[i], "table code 0x%02x", i)
		if math.IsNaN(want) {
			nan++
		} else {
			assert.LessOrEqual(t, math.Abs(want), 448.0)
		}
		assert.False(t, math.IsInf(float64(dst[i]), 0), "E4M3FN has no infinities")
	}
	assert.Equal(t, 2, nan, "only 0x7f and 0xff are NaN")
	// Codes 0x00..0x7e increase strictly.
	for i := 1; i <= 0x7e; i++ {
		assert.Less(t, e4m3Ref(byte(i-1)), e4m3Ref(byte(i)))
	}
}

func TestDecodeE5M2(t *testing.T) {
	t.Parallel()
	spot := map[byte]float64{
		0x00: 0, 0x01: math.Ldexp(1, -16), 0x03: 3 * math.Ldexp(1, -16), 0x04: math.Ldexp(1, -14),
		0x3c: 1, 0x3d: 1.25, 0x40: 2, 0x7b: 57344, 0x7c: math.Inf(1), 0x7d: math.NaN(), 0x7e: math.NaN(),
		0x7f: math.NaN(), 0x80: math.Copysign(0, -1), 0xbc: -1, 0xfb: -57344, 0xfc: math.Inf(-1), 0xff: math.NaN(),
	}
	for c, want := range spot {
		sameFloat(t, want, numfmt.DecodeE5M2(c), "code 0x%02x", c)
	}
	for i := 0; i < 256; i++ {
		c := byte(i)
		s, e, m := c>>7, int(c>>2)&31, int(c&3)
		var want float64
		switch {
		case e == 31 && m == 0:
			want = math.Inf(1)
		case e == 31:
			want = math.NaN()
		case e == 0:
			want = math.Ldexp(float64(m), -16)
		default:
			want = math.Ldexp(float64(4+m), e-17)
		}
		if s == 1 {
			want = -want
		}
		sameFloat(t, want, numfmt.DecodeE5M2(c), "code 0x%02x", c)
	}
}

func TestDecodeE8M0(t *testing.T) {
	t.Parallel()
	sameFloat(t, 1, numfmt.DecodeE8M0(127), "127")
	sameFloat(t, 2, numfmt.DecodeE8M0(128), "128")
	sameFloat(t, 0.5, numfmt.DecodeE8M0(126), "126")
	sameFloat(t, math.Ldexp(1, -127), numfmt.DecodeE8M0(0), "0 (a float32 subnormal)")
	sameFloat(t, math.Ldexp(1, 127), numfmt.DecodeE8M0(254), "254")
	sameFloat(t, math.NaN(), numfmt.DecodeE8M0(255), "255")
	for i := 0; i < 255; i++ {
		sameFloat(t, math.Ldexp(1, i-127), numfmt.DecodeE8M0(byte(i)), "code %d", i)
	}
}

func f16Ref(h uint16) float64 {
	s, e, m := h>>15, int(h>>10)&31, int(h&0x3ff)
	var v float64
	switch {
	case e == 31 && m == 0:
		v = math.Inf(1)
	case e == 31:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), -24)
	default:
		v = math.Ldexp(float64(1024+m), e-25)
	}
	if s == 1 {
		v = -v
	}
	return v
}

func TestF16ToF32(t *testing.T) {
	t.Parallel()
	spot := map[uint16]float64{
		0x0000: 0, 0x0001: math.Ldexp(1, -24), 0x03ff: 1023 * math.Ldexp(1, -24), 0x0400: math.Ldexp(1, -14),
		0x3c00: 1, 0x3c01: 1 + 1.0/1024, 0x3555: 0.333251953125, 0x4000: 2, 0xc000: -2, 0x7bff: 65504,
		0xfbff: -65504, 0x7c00: math.Inf(1), 0xfc00: math.Inf(-1), 0x7e00: math.NaN(), 0x7c01: math.NaN(),
		0x8000: math.Copysign(0, -1), 0x8001: -math.Ldexp(1, -24),
	}
	for h, want := range spot {
		sameFloat(t, want, numfmt.F16ToF32(h), "0x%04x", h)
	}
	for i := 0; i < 1<<16; i++ {
		want, got := f16Ref(uint16(i)), numfmt.F16ToF32(uint16(i))
		if math.IsNaN(want) != math.IsNaN(float64(got)) || (!math.IsNaN(want) && want != float64(got)) {
			t.Fatalf("F16ToF32(0x%04x) = %v, want %v", i, got, want)
		}
	}
}

func TestBF16ToF32(t *testing.T) {
	t.Parallel()
	spot := map[uint16]float64{
		0x0000: 0, 0x3f80: 1, 0x4049: 3.140625, 0xbf80: -1, 0x7f7f: 3.3895313892515355e38,
		0x0001: math.Ldexp(1, -133), 0x0080: math.Ldexp(1, -126), 0x7f80: math.Inf(1), 0xff80: math.Inf(-1),
		0x7fc0: math.NaN(), 0x8000: math.Copysign(0, -1),
	}
	for h, want := range spot {
		sameFloat(t, want, numfmt.BF16ToF32(h), "0x%04x", h)
	}
	src := []byte{0x80, 0x3f, 0x49, 0x40}
	dst := make([]float32, 2)
	require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, src, dst))
	assert.Equal(t, []float32{1, 3.140625}, dst)

	// Every bit pattern, in runs of every length mod 4 (four values per
	// 64-bit load, then a tail), bit for bit as BF16ToF32.
	all := make([]byte, 2<<16)
	for h := range 1 << 16 {
		all[2*h], all[2*h+1] = byte(h), byte(h>>8)
	}
	for _, n := range []int{1 << 16, 1<<16 - 1, 1<<16 - 2, 1<<16 - 3, 5, 0} {
		out := make([]float32, n)
		require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, all, out))
		for h := range n {
			if got, want := math.Float32bits(out[h]), math.Float32bits(numfmt.BF16ToF32(uint16(h))); got != want {
				t.Fatalf("n=%d: 0x%04x decodes to %#08x, want %#08x", n, h, got, want)
			}
		}
	}
}

// nearestEven is an independent rounding oracle: the code of the value in
// vals (ascending, non-negative, codes parallel) nearest to x ≥ 0, ties to
// the even code.
func nearestEven(x float64, vals []float64, codes []uint16) uint16 {
	i := sort.SearchFloat64s(vals, x)
	if i == len(vals) {
		return codes[len(codes)-1]
	}
	if vals[i] == x || i == 0 {
		return codes[i]
	}
	lo, hi := x-vals[i-1], vals[i]-x
	switch {
	case lo < hi:
		return codes[i-1]
	case hi < lo:
		return codes[i]
	case codes[i-1]&1 == 0:
		return codes[i-1]
	}
	return codes[i]
}

// grid lists the non-negative values of a format by code, stopping at the
// first non-finite one, which is appended with value limit (the point at
// which rounding overflows to it).
func grid(decode func(uint16) float64, n int) ([]float64, []uint16) {
	var vals []float64
	var codes []uint16
	for c := 0; c < n; c++ {
		v := decode(uint16(c))
		if math.IsInf(v, 0) || math.IsNaN(v) {
			if math.IsInf(v, 0) {
				last := vals[len(vals)-1]
				vals = append(vals, last+(last-vals[len(vals)-2])) // next step: 2^emax+1
				codes = append(codes, uint16(c))
			}
			break
		}
		vals = append(vals, v)
		codes = append(codes, uint16(c))
	}
	return vals, codes
}

func randFloats(r *rand.Rand, n int, lo, hi int) []float32 {
	out := make([]float32, 0, n)
	for len(out) < n {
		switch r.IntN(4) {
		case 0: // arbitrary bits in an exponent window
			e := lo + r.IntN(hi-lo)
			out = append(out, float32(math.Ldexp(1+r.Float64(), e)))
		case 1: // exact ties and near ties of a coarse grid
			e := lo + r.IntN(hi-lo)
			k := float64(r.IntN(1 << 12))
			d := []float64{0, 0, 1e-7, -1e-7}[r.IntN(4)]
			out = append(out, float32(math.Ldexp(1+(k+0.5+d)/4096, e)))
		default:
			if f := math.Float32frombits(r.Uint32() & 0x7fffffff); !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
				out = append(out, f)
			}
		}
	}
	return out
}

func TestF32ToF16RoundNearestEven(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00}, {1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, {1 + 1.0/2048 + 1.0/65536, 0x3c01},
		{-(1 + 1.0/2048), 0xbc00}, {65504, 0x7bff}, {65519.99, 0x7bff}, {65520, 0x7c00}, {1e6, 0x7c00},
		{float32(math.Inf(-1)), 0xfc00}, {float32(math.Ldexp(1, -24)), 0x0001}, {float32(math.Ldexp(1, -25)), 0x0000},
		{float32(3 * math.Ldexp(1, -25)), 0x0002}, {float32(math.Ldexp(1, -14) - math.Ldexp(1, -25)), 0x0400},
		{float32(math.Ldexp(1, -26)), 0}, {float32(math.Copysign(0, -1)), 0x8000}, {0.1, 0x2e66},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, numfmt.F32ToF16(c.in), "F32ToF16(%v)", c.in)
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xffc00000, 0x7fffffff} {
		h := numfmt.F32ToF16(math.Float32frombits(nan))
		assert.True(t, math.IsNaN(float64(numfmt.F16ToF32(h))), "NaN 0x%08x → 0x%04x", nan, h)
	}
	vals, codes := grid(f16Ref, 0x8000)
	r := rand.New(rand.NewPCG(1, 2))
	for _, x := range randFloats(r, 200000, -30, 17) {
		want := nearestEven(float64(x), vals, codes)
		if got := numfmt.F32ToF16(x); got != want {
			t.Fatalf("F32ToF16(%g) = 0x%04x, want 0x%04x", x, got, want)
		}
		if got := numfmt.F32ToF16(-x); got != want|0x8000 {
			t.Fatalf("F32ToF16(%g) = 0x%04x, want 0x%04x", -x, got, want|0x8000)
		}
	}
	for h := 0; h < 0x7c00; h++ { // exact round trip of every finite half
		require.Equal(t, uint16(h), numfmt.F32ToF16(numfmt.F16ToF32(uint16(h))))
	}
}

func TestF32ToBF16RoundNearestEven(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {1 + 1.0/256, 0x3f80}, {1 + 3.0/256, 0x3f82}, {1 + 1.0/256 + 1.0/(1<<20), 0x3f81},
		{-(1 + 1.0/256), 0xbf80}, {3.14159265, 0x4049}, {math.MaxFloat32, 0x7f80}, {-math.MaxFloat32, 0xff80},
		{float32(math.Ldexp(1, -133)), 0x0001}, {float32(math.Copysign(0, -1)), 0x8000},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, numfmt.F32ToBF16(c.in), "F32ToBF16(%v)", c.in)
	}
	for _, nan := range []uint32{0x7fc00000, 0x7f800001, 0xff800001, 0x7fffffff} {
		h := numfmt.F32ToBF16(math.Float32frombits(nan))
		assert.True(t, math.IsNaN(float64(numfmt.BF16ToF32(h))), "NaN 0x%08x → 0x%04x (must not become inf)", nan, h)
	}
	bf := func(h uint16) float64 {
		s, e, m := h>>15, int(h>>7)&255, int(h&127)
		var v float64
		switch {
		case e == 255 && m == 0:
			v = math.Inf(1)
		case e == 255:
			return math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -133)
		default:
			v = math.Ldexp(float64(128+m), e-134)
		}
		if s == 1 {
			v = -v
		}
		return v
	}
	vals, codes := grid(bf, 0x8000)
	r := rand.New(rand.NewPCG(3, 4))
	for _, x := range randFloats(r, 200000, -140, 127) {
		want := nearestEven(float64(x), vals, codes)
		if got := numfmt.F32ToBF16(x); got != want {
			t.Fatalf("F32ToBF16(%g) = 0x%04x, want 0x%04x", x, got, want)
		}
	}
}

func TestEncodeE4M3(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   float32
		want byte
	}{
		{0, 0x00}, {float32(math.Copysign(0, -1)), 0x80}, {1, 0x38}, {-1, 0xb8}, {448, 0x7e}, {-448, 0xfe},
		{449, 0x7e}, {464, 0x7e}, {480, 0x7e}, {1e9, 0x7e}, {float32(math.Inf(1)), 0x7e}, {float32(math.Inf(-1)), 0xfe},
		{1.0625, 0x38},                                                        // tie between 1 (even) and 1.125 → 1
		{1.1875, 0x3a},                                                        // tie between 1.125 and 1.25 (even) → 1.25
		{1.0626, 0x39},                                                        // above the tie
		{432, 0x7e},                                                           // tie between 416 (0x7d) and 448 (0x7e, even) → 448
		{1.0 / 1024, 0},                                                       // half the smallest subnormal: tie to 0
		{3.0 / 1024, 0x02}, {1.0/1024 + 1.0/65536, 0x01}, {15.0 / 1024, 0x08}, // 7.5 × 2^-9 rounds up to the smallest normal
		{float32(math.Ldexp(1, -20)), 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, numfmt.EncodeE4M3(c.in), "EncodeE4M3(%v)", c.in)
	}
	// NaN keeps its sign both ways (ml_dtypes, torch).
	negNaN := float32(math.Copysign(math.NaN(), -1))
	assert.Equal(t, byte(0x7f), numfmt.EncodeE4M3(float32(math.NaN())))
	assert.Equal(t, byte(0xff), numfmt.EncodeE4M3(negNaN))
	assert.Equal(t, uint32(0x7fc00000), math.Float32bits(numfmt.DecodeE4M3(0x7f)))
	assert.Equal(t, uint32(0xffc00000), math.Float32bits(numfmt.DecodeE4M3(0xff)))
	// Every finite code round-trips.
	for c := 0; c < 256; c++ {
		if c&0x7f == 0x7f {
			continue
		}
		assert.Equal(t, byte(c), numfmt.EncodeE4M3(numfmt.DecodeE4M3(byte(c))), "code 0x%02x", c)
	}
	// Against the oracle, saturating at 448.
	vals, codes := grid(func(c uint16) float64 { return e4m3Ref(byte(c)) }, 0x7f)
	r := rand.New(rand.NewPCG(5, 6))
	for _, x := range randFloats(r, 200000, -12, 10) {
		want := byte(nearestEven(float64(x), vals, codes))
		if x >= 448 {
			want = 0x7e
		}
		if got := numfmt.EncodeE4M3(x); got != want {
			t.Fatalf("EncodeE4M3(%g) = 0x%02x, want 0x%02x", x, got, want)
		}
		if got := numfmt.EncodeE4M3(-x); got != want|0x80 {
			t.Fatalf("EncodeE4M3(%g) = 0x%02x, want 0x%02x", -x, got, want|0x80)
		}
	}
}

func TestDecodeFloat32Errors(t *testing.T) {
	t.Parallel()
	assert.Error(t, numfmt.DecodeFloat32(numfmt.BF16, make([]byte, 3), make([]float32, 2)))
	assert.Error(t, numfmt.DecodeFloat32(numfmt.I32, make([]byte, 8), make([]float32, 2)))
	assert.Error(t, numfmt.DecodeFloat32(numfmt.F4, make([]byte, 8), make([]float32, 2)))
	assert.Error(t, numfmt.EncodeFloat32(numfmt.U8, []float32{1}, make([]byte, 1)))
	dst := make([]float32, 1)
	require.NoError(t, numfmt.DecodeFloat32(numfmt.F64, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, dst))
	assert.Equal(t, float32(1), dst[0])
}

// The NaN patterns of the cache's bf16 conversions: RoundBF16NaN and
// F32ToBF16NaN give every NaN the pattern asked for (torch's vectorised
// 0xFFFF or the scalar 0x7FC0) and round everything else to nearest even;
// BF16Bits keeps the bits of a value that is bfloat16 already, NaN
// included, and converts anything else as tt-metal's host does.
func TestBF16NaNPatterns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     uint32
		round  uint16 // F32ToBF16NaN(in, nan) for a non-NaN
		isNaN  bool
		bf16Of uint16 // BF16Bits(in)
	}{
		{"one", 0x3f800000, 0x3f80, false, 0x3f80},
		{"tie to even", 0x3f808000, 0x3f80, false, 0x3f80},
		{"above tie", 0x3f808001, 0x3f81, false, 0x3f81},
		{"-inf", 0xff800000, 0xff80, false, 0xff80},
		{"quiet NaN", 0x7fc00000, 0, true, 0x7fc0},
		{"negative NaN with payload", 0xffc10000, 0, true, 0xffc1},
		{"signalling bf16 NaN", 0x7f810000, 0, true, 0x7f81},
		{"all-ones NaN", 0xffff0000, 0, true, 0xffff},
		{"float32 NaN below bf16", 0x7f800001, 0, true, numfmt.TTNaNBF16},
	}
	for _, tc := range tests {
		f := math.Float32frombits(tc.in)
		for _, nan := range []uint16{numfmt.NaNBF16Vector, numfmt.TTNaNBF16} {
			want := tc.round
			if tc.isNaN {
				want = nan
			}
			assert.Equalf(t, want, numfmt.F32ToBF16NaN(f, numfmt.NaNPolicy(nan)), "%s F32ToBF16NaN(%#08x, %#04x)", tc.name, tc.in, nan)
			assert.Equalf(t, uint32(want)<<16, math.Float32bits(numfmt.RoundBF16(f, numfmt.NaNPolicy(nan))), "%s RoundBF16NaN", tc.name)
		}
		assert.Equalf(t, tc.bf16Of, numfmt.BF16Bits(f), "%s BF16Bits(%#08x)", tc.name, tc.in)
	}
}

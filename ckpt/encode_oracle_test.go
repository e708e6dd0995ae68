package ckpt_test

import (
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// encodeE4M3Reference is EncodeE4M3 written case by case (the recipe of
// torch's float8_e4m3fn cast: nearest even, saturating, NaN → the NaN code
// of its sign, 0x7f or 0xff), the
// oracle of the integer-arithmetic encoder.
func encodeE4M3Reference(f float32) byte {
	u := math.Float32bits(f)
	sign := byte(u>>24) & 0x80
	a := u & 0x7fffffff
	if a > 0x7f800000 {
		return sign | 0x7f
	}
	af := math.Float32frombits(a)
	if af >= numfmt.E4M3MaxFinite {
		return sign | 0x7e
	}
	if af < 1.0/64 { // subnormal range: quantum 2^-9
		q := math.RoundToEven(float64(af) * 512)
		return sign | byte(q) // q == 8 is the smallest normal, code 0x08
	}
	e := int(a>>23) - 127
	m := a & 0x7fffff
	r := m >> 20
	rem := m & 0xfffff
	if rem > 0x80000 || (rem == 0x80000 && r&1 == 1) {
		r++
		if r == 8 {
			r = 0
			e++
		}
	}
	if e > 8 || (e == 8 && r > 6) {
		return sign | 0x7e
	}
	return sign | byte(e+7)<<3 | byte(r)
}

func TestEncodeE4M3MatchesReference(t *testing.T) {
	t.Parallel()
	check := func(u uint32) {
		f := math.Float32frombits(u)
		if got, want := numfmt.EncodeE4M3(f), encodeE4M3Reference(f); got != want {
			t.Fatalf("EncodeE4M3(%g = %#08x) = %#02x, reference says %#02x", f, u, got, want)
		}
	}
	// Every float32 from 2^-12 to 1024, both signs: every rounding case of
	// the normal and subnormal ranges and the saturation boundary.
	for u := uint32(0x39800000); u < 0x44800000; u++ {
		check(u)
		if u&0xff == 0 {
			check(u | 0x80000000)
		}
	}
	for u := uint64(0); u < 1<<32; u += 65521 { // a sample of everything else
		check(uint32(u))
	}
}

func TestRoundBF16MatchesRoundTo(t *testing.T) {
	t.Parallel()
	for u := uint64(0); u < 1<<32; u += 4093 {
		x := math.Float32frombits(uint32(u))
		got, want := math.Float32bits(numfmt.RoundBF16(x, numfmt.KeepNaN)), math.Float32bits(numfmt.RoundTo(numfmt.BF16, x))
		if got != want {
			t.Fatalf("RoundBF16(%#08x) = %#08x, RoundTo says %#08x", u, got, want)
		}
	}
}

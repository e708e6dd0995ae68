package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e2m1Nearest is the reference of EncodeE2M1 on a magnitude, in float64:
// the code of the nearest E2M1 value, ties to the even code, above 6 the
// largest.
func e2m1Nearest(a float64) byte {
	best, bestD := byte(0), math.Inf(1)
	if a > 6 {
		return 7
	}
	for c := byte(0); c < 8; c++ {
		d := math.Abs(a - float64(e2m1Magnitudes[c]))
		if d < bestD || d == bestD && c&1 == 0 {
			best, bestD = c, d
		}
	}
	return best
}

// TestEncodeE2M1Sweep compares EncodeE2M1 with the float64 reference on
// every 509th float32 bit pattern of both signs (subnormals, ties, values
// around the saturation bound, infinities and NaN included).
func TestEncodeE2M1Sweep(t *testing.T) {
	t.Parallel()
	bad := 0
	for u := uint64(0); u < 1<<32; u += 509 {
		x := math.Float32frombits(uint32(u))
		a := math.Abs(float64(x))
		want := byte(7)
		if !math.IsNaN(a) {
			want = e2m1Nearest(a)
			if math.Signbit(float64(x)) {
				want |= 8
			}
		}
		if got := EncodeE2M1(x); got != want && bad < 10 {
			bad++
			t.Errorf("EncodeE2M1(%g = %#08x) = %#x, want %#x", x, uint32(u), got, want)
		}
	}
}

func TestEncodeE2M1Edges(t *testing.T) {
	t.Parallel()
	above := func(x float32) float32 { return math.Nextafter32(x, 10) }
	below := func(x float32) float32 { return math.Nextafter32(x, -10) }
	for _, tc := range []struct {
		x    float32
		want byte
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 8}, {1e-45, 0}, {-1e-45, 8},
		// ties go to the even code
		{0.25, 0}, {above(0.25), 1}, {0.75, 2}, {below(0.75), 1}, {1.25, 2}, {above(1.25), 3},
		{1.75, 4}, {below(1.75), 3}, {2.5, 4}, {above(2.5), 5}, {3.5, 6}, {below(3.5), 5},
		{5, 6}, {above(5), 7}, {-5, 14}, {-3.5, 14},
		// exact values and saturation
		{0.5, 1}, {1, 2}, {1.5, 3}, {2, 4}, {3, 5}, {4, 6}, {6, 7}, {-6, 15},
		{6.5, 7}, {1e30, 7}, {float32(math.Inf(1)), 7}, {float32(math.Inf(-1)), 15},
		{float32(math.NaN()), 7}, {math.Float32frombits(0xffc00000), 7}, // NaN: 7, whatever its sign
	} {
		assert.Equal(t, tc.want, EncodeE2M1(tc.x), "%g (%#08x)", tc.x, math.Float32bits(tc.x))
	}
}

func TestSameE2M1(t *testing.T) {
	t.Parallel()
	for x := byte(0); x < 16; x++ {
		for y := byte(0); y < 16; y++ {
			same, zs := sameE2M1(x|0x30, y)
			assert.Equal(t, E2M1ToFloat32(x) == E2M1ToFloat32(y), same, "%#x %#x", x, y)
			assert.Equal(t, x != y && x&7 == 0 && y&7 == 0, zs, "%#x %#x", x, y)
		}
	}
}

func TestMXFP4Scale(t *testing.T) {
	t.Parallel()
	nan := float32(math.NaN())
	for _, tc := range []struct {
		amax      float32
		nonFinite bool
		ocp, tri  byte
	}{
		{0, false, 0, 0},                                // all-zero block: 2^-127, as the smallest exponent
		{6, false, 127, 127},                            // 6 = 6 × 2^0 under both
		{4, false, 127, 127},                            // floor(log2 4) - 2 = 0; ceil(log2 4/6) = 0
		{5.99, false, 127, 127},                         // both 2^0
		{7, false, 127, 128},                            // floor saturates 7 to 6; round-up takes 2^1
		{3, false, 126, 126},                            // 2^-1 under both
		{8, false, 128, 128},                            // a power of two above 6
		{float32(math.Ldexp(1, -126)), false, 0, 1},     // floor: -128 clamps to -127; round-up: d is subnormal, up to 2^-126
		{float32(math.Ldexp(1.5, -100)), false, 25, 25}, // floor(log2) - 2 = -102; d = 2^-102 exactly
		{float32(math.Ldexp(1.75, -100)), false, 25, 26},
		{math.MaxFloat32, false, 252, 253},                          // 2^125 floor; MaxFloat32/6 rounds up to 2^126
		{1, true, e8m0NaN, e8m0NaN}, {nan, false, e8m0NaN, e8m0NaN}, // a NaN or an infinity in the block
	} {
		c, _ := MXFP4OCP.mxfp4Scale(tc.amax, tc.nonFinite)
		assert.Equal(t, tc.ocp, c, "ocp-floor scale of %g", tc.amax)
		c, _ = MXFP4Triton.mxfp4Scale(tc.amax, tc.nonFinite)
		assert.Equal(t, tc.tri, c, "triton-round-up scale of %g", tc.amax)
	}
	// The factors: the reciprocal of the scale, exactly.
	for _, r := range MXFP4Recipes {
		for _, amax := range []float32{6, 7, 3, 1e-30, 1e30} {
			c, mul := r.mxfp4Scale(amax, false)
			assert.Equal(t, 1.0, float64(mul)*float64(E8M0ToFloat32(c)), "%s %g", r, amax)
		}
		_, mul := r.mxfp4Scale(0, false)
		if r == MXFP4Triton {
			assert.Zero(t, mul, "triton multiplies a zero-scale block by 0")
		} else {
			assert.Equal(t, float32(math.Ldexp(1, 127)), mul)
		}
	}
}

// block32 returns a block of 32 values: vals, then zeros.
func block32(vals ...float32) []float32 {
	b := make([]float32, MXFP4BlockSize)
	copy(b, vals)
	return b
}

func TestQuantizeMXFP4Edges(t *testing.T) {
	t.Parallel()
	negZero := float32(math.Copysign(0, -1))
	q := func(r MXFP4Recipe, w []float32) ([]byte, byte) {
		blocks, scales := make([]byte, MXFP4BlockBytes), make([]byte, 1)
		require.NoError(t, QuantizeMXFP4(r, w, blocks, scales))
		codes := make([]byte, MXFP4BlockSize)
		for i, b := range blocks {
			codes[2*i], codes[2*i+1] = b&15, b>>4
		}
		return codes, scales[0]
	}
	for _, r := range MXFP4Recipes {
		codes, sc := q(r, block32())
		assert.Equal(t, byte(0), sc, "%s: all-zero block", r)
		assert.Equal(t, make([]byte, 32), codes, "%s: all-zero block", r)

		codes, sc = q(r, block32(6, -3, 0.75, 1.25, negZero, -0.1, 5))
		assert.Equal(t, byte(127), sc, r.String())
		assert.Equal(t, []byte{7, 13, 2, 2, 8, 8, 6}, codes[:7], "%s: exact values, ties to even, -0 and a negative that rounds to zero", r)

		codes, sc = q(r, block32(float32(math.NaN()), 1))
		assert.Equal(t, byte(e8m0NaN), sc, "%s: a NaN makes the scale NaN", r)
		_ = codes
	}
	// At the saturation bound: floor keeps 2^0 and saturates 7 to 6.
	codes, sc := q(MXFP4OCP, block32(7, 1))
	assert.Equal(t, byte(127), sc)
	assert.Equal(t, []byte{7, 2}, codes[:2])
	codes, sc = q(MXFP4Triton, block32(7, 1))
	assert.Equal(t, byte(128), sc)
	assert.Equal(t, []byte{6, 1}, codes[:2], "7/2 = 3.5 ties to 4, 1/2 = 0.5")
	// triton's kernel drops the two lowest mantissa bits of values in
	// [0.25, 0.5) before rounding: just above 0.25 it gives 0.
	x := math.Float32frombits(math.Float32bits(0.25) + 3)
	codes, _ = q(MXFP4OCP, block32(6, x))
	assert.Equal(t, byte(1), codes[1], "nearest even: 0.5")
	codes, _ = q(MXFP4Triton, block32(6, x))
	assert.Equal(t, byte(0), codes[1], "triton: 0")
	codes, _ = q(MXFP4Triton, block32(6, math.Float32frombits(math.Float32bits(0.25)+4)))
	assert.Equal(t, byte(1), codes[1], "triton: the third bit counts")
}

// xorshift is a small deterministic generator for the round trips.
type xorshift uint64

func (s *xorshift) next() uint64 { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return uint64(*s) }

// sym returns a value in [-1, 1).
func (s *xorshift) sym() float32 { return float32(s.next()>>40)/float32(1<<23) - 1 }

// TestMXFP4RoundTrip: values quantised by ocp-floor, dequantised, and
// re-quantised by either recipe give back the same codes and scales. A
// block quantised by triton-round-up whose largest code is 3 (its amax
// was in (3, 3.5) × 2^e) does not: its values' amax 3 × 2^e re-quantises
// to the scale 2^(e-1) under both recipes (the same values, other codes);
// every other block does.
func TestMXFP4RoundTrip(t *testing.T) {
	t.Parallel()
	const g = 64
	for _, r := range MXFP4Recipes {
		rng := xorshift(12345)
		w := make([]float32, g*MXFP4BlockSize)
		for i := range w {
			w[i] = rng.sym() * float32(math.Ldexp(1, int(i/MXFP4BlockSize)%40-20))
		}
		for i := range 32 { // an all-zero block
			w[5*32+i] = 0
		}
		blocks, scales := make([]byte, g*MXFP4BlockBytes), make([]byte, g)
		require.NoError(t, QuantizeMXFP4(r, w, blocks, scales))
		vals := make([]float32, len(w))
		require.NoError(t, DequantMXFP4(vals, blocks, scales))
		notIdempotent := 0
		for _, r2 := range MXFP4Recipes {
			for b := range g {
				cnt, zs, bad := r2.MXFP4Requant(vals[b*32:], blocks[b*16:], scales[b])
				largest := byte(0)
				for _, x := range blocks[b*16 : b*16+16] {
					largest = max(largest, x&7, x>>4&7)
				}
				if r == MXFP4Triton && largest == 5 {
					assert.True(t, bad, "%s → %s block %d: largest code 3", r, r2, b)
					notIdempotent++
					continue
				}
				assert.Zero(t, cnt, "%s → %s block %d", r, r2, b)
				assert.Zero(t, zs, "%s → %s block %d", r, r2, b)
				assert.False(t, bad, "%s → %s block %d", r, r2, b)
			}
		}
		if r == MXFP4Triton {
			assert.Positive(t, notIdempotent, "the seed has blocks whose largest code is 3")
		}
		// one changed element below the block's largest: one mismatch, same
		// scale. The element with the smallest code magnitude, one code up,
		// stays below the block's largest code by construction.
		rs := e8m0Reciprocal(scales[0])
		low, largest := 0, byte(0)
		for i := range 32 {
			m := EncodeE2M1(vals[i]*rs) & 7
			largest = max(largest, m)
			if m < EncodeE2M1(vals[low]*rs)&7 {
				low = i
			}
		}
		require.Less(t, EncodeE2M1(vals[low]*rs)&7+1, largest, "%s: block 0 has room below its largest code", r)
		vals[low] = E2M1ToFloat32(EncodeE2M1(vals[low]*rs)+1) * E8M0ToFloat32(scales[0])
		cnt, _, bad := r.MXFP4Requant(vals, blocks, scales[0])
		assert.Equal(t, int64(1), cnt, r.String())
		assert.False(t, bad, r.String())
	}
}

func TestMXFP4RequantNaN(t *testing.T) {
	t.Parallel()
	w := block32(float32(math.NaN()), 1)
	codes := make([]byte, 16)
	for _, r := range MXFP4Recipes {
		cnt, zs, bad := r.MXFP4Requant(w, codes, e8m0NaN)
		assert.Equal(t, [3]any{int64(0), int64(0), false}, [3]any{cnt, zs, bad}, "NaN scale both sides: codes carry no value")
		_, _, bad = r.MXFP4Requant(w, codes, 127)
		assert.True(t, bad, "a NaN in the values, a finite stored scale")
		_, _, bad = r.MXFP4Requant(block32(1), codes, e8m0NaN)
		assert.True(t, bad, "finite values, a NaN stored scale")
	}
	assert.Error(t, QuantizeMXFP4(MXFP4OCP, make([]float32, 31), make([]byte, 16), make([]byte, 1)))
}

func TestNVFP4Scales(t *testing.T) {
	t.Parallel()
	assert.Equal(t, float32(1), NVFP4GlobalScale(2688))
	assert.Equal(t, float32(math.Ldexp(1, -10)), NVFP4GlobalScale(float32(2688*math.Ldexp(1, -10))))
	for _, tc := range []struct {
		s    float64 // amax / (6 × global), global 1
		want byte
	}{
		{0, 0x38},              // a zero block: 1.0 (ModelOpt sets zero scales to 1)
		{1, 0x38}, {448, 0x7e}, // exact
		{464, 0x7e},                // half-way to 480 rounds to even, 448
		{465, 0x7f},                // rounds to 480: torch's cast gives NaN
		{1e9, 0x7f},                // no saturation
		{math.Ldexp(1, -8), 0x02},  // subnormal E4M3 scales: m × 2^-9
		{math.Ldexp(3, -10), 0x02}, // 1.5 × 2^-9 ties to even, 2 × 2^-9
		{math.Ldexp(1, -10), 0x00}, // half the smallest subnormal ties to 0 (after the zero check)
		{math.Ldexp(1.01, -10), 0x01},
		{math.Inf(1), 0x7f}, {math.NaN(), 0x7f},
	} {
		assert.Equal(t, tc.want, nvfp4BlockScale(float32(6*tc.s), 1), "block scale %g", tc.s)
	}
}

func TestNVFP4RoundTrip(t *testing.T) {
	t.Parallel()
	const rows, cols = 8, 64
	rng := xorshift(777)
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = rng.sym() * float32(math.Ldexp(1, int(i/16)%12-14))
	}
	for i := range 16 {
		w[3*16+i] = 0 // an all-zero block: scale 1.0
	}
	w[100] = float32(2688 * math.Ldexp(1, -10)) // the tensor's amax: weight_scale_2 = 2^-10
	packed, scales := make([]byte, rows*cols/2), make([]byte, rows*cols/16)
	global, err := QuantizeNVFP4(w, packed, scales)
	require.NoError(t, err)
	assert.Equal(t, float32(math.Ldexp(1, -10)), global)
	assert.Equal(t, byte(0x38), scales[3], "the zero block's scale is 1.0")
	assert.Equal(t, byte(0x7e), scales[100/16], "the block of the tensor's amax has scale 448")
	subnormal := 0
	for _, s := range scales {
		if s&0x78 == 0 {
			subnormal++
		}
	}
	assert.Positive(t, subnormal, "some block scales are subnormal E4M3")
	vals := make([]float32, len(w))
	require.NoError(t, DequantNVFP4(vals, packed, scales, global, rows, cols))
	amax, _ := BlockAmax(vals)
	assert.Equal(t, global, NVFP4GlobalScale(amax), "weight_scale_2 reproduces")
	for b := range scales {
		cnt, zs, bad := NVFP4Requant(vals[b*16:], packed[b*8:], scales[b], global)
		assert.Zero(t, cnt, "block %d", b)
		assert.Zero(t, zs, "block %d", b)
		assert.False(t, bad, "block %d", b)
	}
	// A changed element (not the block's largest): one code, same scale.
	b := 7
	v := vals[b*16 : b*16+16]
	i := 0
	for amax, _ := BlockAmax(v); math.Abs(float64(v[i])) >= float64(amax)/2; i++ {
	}
	v[i] *= 1.5
	cnt, _, bad := NVFP4Requant(v, packed[b*8:], scales[b], global)
	assert.Equal(t, int64(1), cnt)
	assert.False(t, bad)
	// Another global scale: other block scales.
	_, _, bad = NVFP4Requant(vals[:16], packed, scales[0], 2*global)
	assert.True(t, bad)
	// A block whose scale underflows to 0 quantises its values to ±6
	// (w / 0 is ±Inf, 0 / 0 NaN): ModelOpt's arithmetic, kept.
	tw := make([]float32, 32)
	tw[0], tw[1], tw[16] = 1e-9, -1e-9, 2688
	tp, ts := make([]byte, 16), make([]byte, 2)
	global, err = QuantizeNVFP4(tw, tp, ts)
	require.NoError(t, err)
	assert.Equal(t, float32(1), global)
	assert.Equal(t, byte(0), ts[0], "1e-9 / 6 rounds to the E4M3 zero")
	assert.Equal(t, []byte{0xf7, 0x77}, tp[:2], "6, -6, then 6 for the zeros (NaN)")
	_, err = QuantizeNVFP4(make([]float32, 15), make([]byte, 8), make([]byte, 1))
	assert.Error(t, err)
}

func TestNVFP4RequantNaN(t *testing.T) {
	t.Parallel()
	w := make([]float32, 16)
	w[2] = float32(math.NaN())
	cnt, zs, bad := NVFP4Requant(w, make([]byte, 8), 0x7f, 1)
	assert.Equal(t, [3]any{int64(0), int64(0), false}, [3]any{cnt, zs, bad}, "NaN scales: codes not compared")
	_, _, bad = NVFP4Requant(w, make([]byte, 8), 0x38, 1)
	assert.True(t, bad)
	// -0 against +0 codes: a zero-sign difference, not a mismatch.
	w = make([]float32, 16)
	w[0], w[5] = 6, float32(math.Copysign(0, -1))
	packed := []byte{0x07, 0, 0, 0, 0, 0, 0, 0}
	cnt, zs, bad = NVFP4Requant(w, packed, 0x38, 1)
	assert.Equal(t, [3]any{int64(0), int64(1), false}, [3]any{cnt, zs, bad})
}

// countPackedRef is countPacked spelt out: EncodeE2M1 (and the triton
// recipe's dropped bits) and sameE2M1.
func countPackedRef(w []float32, codes []byte, f float32, div, triton bool) (cnt, zeroSign int64) {
	for i := range 2 * len(codes) {
		x := w[i] * f
		if div {
			x = w[i] / f
		}
		var c byte
		if triton {
			c = MXFP4Triton.encode(x)
		} else {
			c = EncodeE2M1(x)
		}
		if same, zs := sameE2M1(c, codes[i/2]>>(4*(i&1))); !same {
			cnt++
		} else if zs {
			zeroSign++
		}
	}
	return cnt, zeroSign
}

// TestCountPacked compares the interval test of countPacked with
// encoding and comparing, on values near every rounding bound, ±0, ±Inf,
// NaN and just above 0.25 (triton's dropped bits), against every code.
func TestCountPacked(t *testing.T) {
	t.Parallel()
	var vals []float32
	for _, b := range []float32{0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 7, float32(math.Inf(1))} {
		for _, x := range []float32{b, math.Nextafter32(b, 0), math.Nextafter32(b, 100), math.Float32frombits(math.Float32bits(b) + 3)} {
			vals = append(vals, x, -x)
		}
	}
	vals = append(vals, float32(math.NaN()), math.Float32frombits(0xffc00000))
	for _, f := range []float32{1, 0.5, 3, 1.0 / 3} {
		for _, div := range []bool{false, true} {
			for _, triton := range []bool{false, true} {
				for _, v := range vals {
					x := v * f // so that x / f or x × f lands near the bound
					if !div {
						x = v / f
					}
					for c := byte(0); c < 16; c++ {
						w := []float32{x, x}
						codes := []byte{c | c<<4}
						gc, gz := countPacked(w, codes, f, div, triton)
						rc, rz := countPackedRef(w, codes, f, div, triton)
						if gc != rc || gz != rz {
							t.Fatalf("x %g (%#08x) f %g div %v triton %v code %#x: got %d/%d, want %d/%d", x, math.Float32bits(x), f, div, triton, c, gc, gz, rc, rz)
						}
					}
				}
			}
		}
	}
}

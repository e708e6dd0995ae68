package tile

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// randMatrix returns h*w normal-ish values with a per-row scale spread over
// many binades, plus a few exact zeros.
func randMatrix(rng *rand.Rand, h, w int) []float32 {
	v := make([]float32, h*w)
	for i := range v {
		scale := math.Ldexp(1, rng.IntN(40)-20)
		v[i] = float32(rng.NormFloat64() * scale)
		if rng.IntN(50) == 0 {
			v[i] = 0
		}
	}
	return v
}

func TestBFPRoundTripErrorBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dt    DType
		width int // magnitude bits
	}{{BFLOAT8_B, 7}, {BFLOAT4_B, 3}}
	dims := [][2]int{{32, 32}, {1, 1}, {33, 70}, {64, 96}, {5, 300}}
	for _, tc := range tests {
		t.Run(tc.dt.String(), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(1, uint64(tc.dt)))
			for _, d := range dims {
				h, w := d[0], d[1]
				in := randMatrix(rng, h, w)
				packed := make([]byte, TilesBytes(tc.dt, h, w))
				_, err := PackTiles(tc.dt, packed, in, h, w)
				require.NoError(t, err)
				out := make([]float32, h*w)
				require.NoError(t, UnpackTiles(tc.dt, out, packed, h, w))
				for y := range h {
					for x := range w {
						// Shared exponent of the face row holding (y, x).
						c0 := x / FaceDim * FaceDim
						var e int
						for _, v := range in[y*w+c0 : y*w+min(w, c0+FaceDim)] {
							e = max(e, int(math.Float32bits(v)>>23&0xff))
						}
						quantum := math.Ldexp(1, e-127-(tc.width-1))
						got, want := float64(out[y*w+x]), float64(in[y*w+x])
						require.LessOrEqual(t, math.Abs(got-want), quantum,
							"%dx%d at (%d,%d): in %g out %g E=%d", h, w, y, x, want, got, e)
						if got != 0 {
							require.Equal(t, math.Signbit(want), math.Signbit(got))
						}
					}
				}
			}
		})
	}
}

func TestTileRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(2, 3))
	for _, d := range [][2]int{{1, 1}, {31, 33}, {32, 32}, {64, 17}, {100, 65}} {
		h, w := d[0], d[1]
		in := randMatrix(rng, h, w)
		for _, dt := range []DType{FLOAT32, BFLOAT16} {
			packed := make([]byte, TilesBytes(dt, h, w))
			_, err := PackTiles(dt, packed, in, h, w)
			require.NoError(t, err)
			out := make([]float32, h*w)
			require.NoError(t, UnpackTiles(dt, out, packed, h, w))
			for i := range in {
				want := in[i]
				if dt == BFLOAT16 {
					want = numfmt.BF16ToF32(numfmt.F32ToBF16(want))
				}
				require.Equal(t, want, out[i])
			}
		}
	}
}

func TestPackStripStride(t *testing.T) {
	t.Parallel()
	// Packing a sub-matrix through a stride equals packing a compact copy.
	rng := rand.New(rand.NewPCG(4, 5))
	const H, W, w = 32, 100, 45
	in := randMatrix(rng, H, W)
	sub := make([]float32, 0, 20*w)
	for y := range 20 {
		sub = append(sub, in[y*W+7:y*W+7+w]...)
	}
	for _, dt := range []DType{BFLOAT16, FLOAT32, BFLOAT8_B, BFLOAT4_B} {
		a := make([]byte, StripBytes(dt, w))
		b := make([]byte, StripBytes(dt, w))
		_, err := PackStrip(dt, a, in[7:], 20, w, W)
		require.NoError(t, err)
		_, err = PackTiles(dt, b, sub, 20, w)
		require.NoError(t, err)
		require.Equal(t, b, a, dt.String())
	}
}

func TestPackErrors(t *testing.T) {
	t.Parallel()
	buf := make([]byte, BFP8TileBytes)
	src := make([]float32, 32*32)
	tests := []struct {
		name               string
		dt                 DType
		dst                []byte
		src                []float32
		rows, cols, stride int
	}{
		{"dtype", UINT32, buf, src, 32, 32, 32},
		{"rows", BFLOAT8_B, buf, src, 33, 32, 32},
		{"zero rows", BFLOAT8_B, buf, src, 0, 32, 32},
		{"stride", BFLOAT8_B, buf, src, 32, 32, 31},
		{"short src", BFLOAT8_B, buf, src[:100], 32, 32, 32},
		{"short dst", BFLOAT8_B, buf[:100], src, 32, 32, 32},
	}
	for _, tc := range tests {
		_, err := PackStrip(tc.dt, tc.dst, tc.src, tc.rows, tc.cols, tc.stride)
		assert.Error(t, err, tc.name)
	}
}

func TestBF16Rounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80},
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81},
		{0x3f807fff, 0x3f80},
		{0xbf808001, 0xbf81},
		{0x7f7fffff, 0x7f80}, // overflow to +Inf
		{0x7f800000, 0x7f80},
		{0xff800000, 0xff80},
		{0x7fc00000, 0x7fc0},
		{0x7f800001, 0x7fc0}, // every NaN becomes 0x7FC0 (bfloat16.cpp)
		{0xffffffff, 0x7fc0}, // sign and payload dropped
		{0xff812345, 0x7fc0},
		{0x7fa00000, 0x7fc0},
		{0x00000001, 0x0000},
		{0x80000000, 0x8000},
	}
	for _, tc := range tests {
		got := numfmt.F32ToBF16TT(math.Float32frombits(tc.in))
		assert.Equalf(t, tc.want, got, "numfmt.F32ToBF16TT(%#08x)", tc.in)
	}
	// Random finite values: the result is the nearest bf16.
	rng := rand.New(rand.NewPCG(6, 7))
	for range 100000 {
		b := rng.Uint32()
		if b&0x7f800000 == 0x7f800000 {
			continue
		}
		f := math.Float32frombits(b)
		h := numfmt.F32ToBF16(f)
		got := float64(numfmt.BF16ToF32(h))
		if math.IsInf(got, 0) {
			// Only values past the largest bf16 plus half an ulp overflow.
			require.GreaterOrEqual(t, b&0x7fffffff, uint32(0x7f7f8000))
			continue
		}
		lo := float64(numfmt.BF16ToF32(uint16(b >> 16)))
		hi := float64(numfmt.BF16ToF32(uint16(b>>16) + 1))
		d := math.Abs(got - float64(f))
		require.LessOrEqual(t, d, math.Abs(lo-float64(f)))
		if !math.IsInf(hi, 0) && !math.IsNaN(hi) {
			require.LessOrEqual(t, d, math.Abs(hi-float64(f)))
		}
	}
}

func TestShardBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		shape  []int
		dt     DType
		layout Layout
		want   int64
	}{
		{[]int{8704, 5120}, BFLOAT8_B, TILE, 47349760},
		{[]int{32, 32}, BFLOAT4_B, TILE, 576},
		{[]int{64, 32}, BFLOAT16, TILE, 4096},
		{[]int{1, 1, 24}, BFLOAT16, TILE, 2048},
		{[]int{2, 33, 1}, FLOAT32, TILE, 2 * 2 * 4096},
		{[]int{248320, 5120}, BFLOAT16, ROW_MAJOR, 2542796800},
		{[]int{1, 1, 160, 32}, BFLOAT16, ROW_MAJOR, 10240},
	}
	for _, tc := range tests {
		got, err := ShardBytes(tc.shape, tc.dt, tc.layout)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v %v %v", tc.shape, tc.dt, tc.layout)
	}
	_, err := ShardBytes([]int{32, 32}, BFLOAT8_B, ROW_MAJOR)
	assert.Error(t, err)
}

// TestBF16CodesMatchFloat32 checks the bfloat16 code tables against the
// float32 encoder for every bfloat16 value under every shared exponent the
// tables serve.
func TestBF16CodesMatchFloat32(t *testing.T) {
	t.Parallel()
	for h := 0; h < 1<<16; h++ {
		b := uint32(h) << 16
		for e := max(uint32(h>>7)&0xff, minTableExp); e < 256; e++ {
			i := bf16CodeIndex(uint16(h), e)
			if got, want := uint32(codeTables.bfp8[i]), bfpCode(b, e, 17, 127, 7); got != want {
				t.Fatalf("BFLOAT8_B code of %#04x under e=%d: %#x, want %#x", h, e, got, want)
			}
			if got, want := uint32(codeTables.bfp4[i]), bfpCode(b, e, 21, 7, 3); got != want {
				t.Fatalf("BFLOAT4_B code of %#04x under e=%d: %#x, want %#x", h, e, got, want)
			}
		}
	}
}

// TestEncodeFaceRowBF16 compares whole face rows (random bfloat16 bits,
// NaN, Inf, zeros and denormals included) with the float32 encoder.
func TestEncodeFaceRowBF16(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	special := []uint16{0, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0xffff, 0x7f7f, 0x0080}
	for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B, BFLOAT16, FLOAT32} {
		for n := 0; n < 20000; n++ {
			var h [FaceDim]uint16
			var f [FaceDim]float32
			base := uint16(rng.IntN(256)) << 7 // tiny exponents too: the exact route
			for i := range h {
				switch rng.IntN(8) {
				case 0:
					h[i] = special[rng.IntN(len(special))]
				case 1:
					h[i] = uint16(rng.Uint32())
				default: // near a common exponent, like a weight row
					h[i] = (base - uint16(rng.IntN(12))<<7) | uint16(rng.IntN(128)) | uint16(rng.IntN(2))<<15
				}
				if dt == BFLOAT16 && h[i]&0x7fff > 0x7f80 {
					h[i] = 0x7fc0 // copied as is, while F32ToBF16 quiets NaNs
				}
				f[i] = numfmt.BF16ToF32(h[i])
			}
			got := make([]byte, dt.TileBytes())
			want := make([]byte, dt.TileBytes())
			r := rng.IntN(FaceRows)
			EncodeFaceRowBF16(dt, got, r, &h)
			EncodeFaceRow(dt, want, r, &f)
			require.Equal(t, want, got, "%v face row %d of %#04x", dt, r, h)
		}
	}
}

// TestFaceRowBF16Kernels checks bfp8FaceRowBF16 and bfp4FaceRowBF16 (SSE2
// on amd64) against the table versions: every bfloat16 value under every
// shared exponent it can have (the row's other values set the exponent),
// in every lane, plus random rows.
func TestFaceRowBF16Kernels(t *testing.T) {
	t.Parallel()
	check := func(row *[FaceDim]uint16) {
		var g8, w8 [FaceDim]byte
		var g4, w4 [FaceDim / 2]byte
		ge, we := bfp8FaceRowBF16(&g8, row), bfp8FaceRowBF16Go(&w8, row)
		if g8 != w8 || ge != we {
			t.Fatalf("BFLOAT8_B of %#04x: %#x e=%d, want %#x e=%d", *row, g8, ge, w8, we)
		}
		ge, we = bfp4FaceRowBF16(&g4, row), bfp4FaceRowBF16Go(&w4, row)
		if g4 != w4 || ge != we {
			t.Fatalf("BFLOAT4_B of %#04x: %#x e=%d, want %#x e=%d", *row, g4, ge, w4, we)
		}
	}
	kernelRows(11, check)
}

// kernelRows hands check every bfloat16 value under every shared exponent
// it can have, in every lane (another value of the row sets the
// exponent), then 100,000 random rows near a common exponent.
func kernelRows(seed uint64, check func(row *[FaceDim]uint16)) {
	for h := 0; h < 1<<16; h++ {
		x := uint16(h) >> 7 & 0xff
		for e := x; e < 256; e += 1 + e/64 {
			var row [FaceDim]uint16
			lane := (h + int(e)) % FaceDim
			row[lane] = uint16(h)
			row[(lane+5)%FaceDim] = e<<7 | uint16(h)&0x807f // the exponent setter
			check(&row)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for n := 0; n < 100000; n++ {
		var row [FaceDim]uint16
		base := uint16(rng.IntN(256)) << 7
		for i := range row {
			row[i] = (base - uint16(rng.IntN(10))<<7) | uint16(rng.IntN(128)) | uint16(rng.IntN(2))<<15
			if rng.IntN(16) == 0 {
				row[i] = uint16(rng.Uint32())
			}
		}
		check(&row)
	}
}

// TestEncodeTileBF16 compares EncodeTileBF16 (a face per SSE2 call on
// amd64) with the pure-Go face-row encoders, row by row: random tiles in
// rows wider than the tile, with face rows of tiny exponents (the exact
// route), specials and zeros mixed in.
func TestEncodeTileBF16(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	special := []uint16{0, 0x8000, 0x0001, 0x807f, 0x7f80, 0xff80, 0x7fc0, 0xffff, 0x7f7f, 0x0080}
	const stride = 48
	src := make([]uint16, TileDim*stride)
	for n := 0; n < 3000; n++ {
		var base uint16
		small := 0
		for i := range src {
			if i%FaceDim == 0 { // face rows start at multiples of 16
				base = uint16(8+rng.IntN(248)) << 7
				if rng.IntN(8) == 0 {
					base = uint16(rng.IntN(8)) << 7 // a face row below minTableExp
					small++
				}
			}
			if base < minTableExp<<7 { // the whole face row stays tiny
				src[i] = base | uint16(rng.IntN(128)) | uint16(rng.IntN(2))<<15
				continue
			}
			switch rng.IntN(10) {
			case 0:
				src[i] = special[rng.IntN(len(special))]
			case 1:
				src[i] = uint16(rng.Uint32())
			default:
				src[i] = (base - uint16(rng.IntN(12))<<7) | uint16(rng.IntN(128)) | uint16(rng.IntN(2))<<15
			}
		}
		for _, dt := range []DType{BFLOAT8_B, BFLOAT4_B, BFLOAT16} {
			got := make([]byte, dt.TileBytes())
			want := make([]byte, dt.TileBytes())
			EncodeTileBF16(dt, got, src, stride)
			for r := range FaceRows {
				fr, fc := FaceRowOrigin(r)
				p := (*[FaceDim]uint16)(src[fr*stride+fc:])
				switch dt {
				case BFLOAT8_B:
					want[r] = bfp8FaceRowBF16Go((*[FaceDim]byte)(want[FaceRows+r*FaceDim:]), p)
				case BFLOAT4_B:
					want[r] = bfp4FaceRowBF16Go((*[FaceDim / 2]byte)(want[FaceRows+r*FaceDim/2:]), p)
				default:
					EncodeFaceRowBF16(dt, want, r, p)
				}
			}
			require.Equal(t, want, got, "%v tile %d", dt, n)
		}
		require.Positive(t, small)
	}
}

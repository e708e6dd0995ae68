package numfmt

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDecodeE4M3Scaled checks that decodeE4M3Scaled (AVX2 on amd64 when
// the CPU has it) gives bit for bit the float32 products of the Go loop:
// every code at every position of a 32-code group, NaN codes among them,
// under scales of every magnitude (subnormal products, scales around the
// kernel's 2^24 bound), ±0, infinities and NaN, on segments of every
// length.
func TestDecodeE4M3Scaled(t *testing.T) {
	t.Parallel()
	var tab [256]float32
	codes := make([]byte, 256)
	for i := range codes {
		codes[i] = byte(i)
	}
	require.NoError(t, DecodeFloat32(F8E4M3, codes, tab[:]))
	scales := []float32{1, -1, 0.5, 3.1e-3, -7.7e-5, 1e-30, 1e-36, -3e-38, 1e-40, math.SmallestNonzeroFloat32,
		0, float32(math.Copysign(0, -1)), 0x1p24, -0x1p24, math.Nextafter32(0x1p24, 0), 0x1p23, 1e30, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001)}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		scales = append(scales, float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(80)-60)))
	}
	for k, s := range scales {
		for rot := range 32 {
			size := 256 + rng.IntN(80)
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i + rot)
			}
			if k%2 == 1 {
				rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
			}
			if rot%4 == 0 { // groups without a NaN code
				for i, c := range src {
					if c&0x7f == 0x7f {
						src[i] = 0x80
					}
				}
			}
			n := size - rng.IntN(40)
			got, want := make([]float32, n), make([]float32, n)
			decodeE4M3Scaled(&tab, src, got, s)
			decodeE4M3Go(&tab, src, want, s)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					require.Failf(t, "products differ", "scale %g (%#08x), code %#02x at %d of %d: got %#08x, want %#08x",
						s, math.Float32bits(s), src[i], i, n, math.Float32bits(got[i]), math.Float32bits(want[i]))
				}
			}
		}
	}
}

// TestBlockScalesDequantize checks Dequantize against decoding and then
// multiplying every element by At(i, j): runs that start anywhere and
// cross blocks and rows, F8_E4M3 (the fused kernel) and F8_E5M2, blocks
// with zero, subnormal, NaN and Inf scales.
func TestBlockScalesDequantize(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	const rows, cols, bm, bn = 5, 300, 2, 64
	b := &BlockScales{Cols: cols, BM: bm, BN: bn, SCols: (cols + bn - 1) / bn}
	b.Scale = make([]float32, 3*b.SCols)
	for i := range b.Scale {
		b.Scale[i] = float32(rng.NormFloat64() * 1e-3)
	}
	b.Scale[1], b.Scale[2], b.Scale[3], b.Scale[4] = 0, 1e-41, float32(math.NaN()), float32(math.Inf(-1))
	raw := make([]byte, rows*cols)
	for i := range raw {
		raw[i] = byte(rng.IntN(256))
	}
	for _, fused := range []bool{false, true} {
		b.FusedE4M3 = fused
		for _, dt := range []DType{F8E4M3, F8E5M2} {
			for range 200 {
				g := int64(rng.IntN(rows * cols))
				n := rng.IntN(rows*cols - int(g) + 1)
				got := make([]float32, n)
				require.NoError(t, b.Dequantize(dt, raw[g:], g, got))
				for k := range got {
					e := g + int64(k)
					want := codeTable(dt)[raw[e]] * b.At(e/cols, e%cols)
					if want != want { // which NaN a product of NaNs is depends on operand order
						require.True(t, got[k] != got[k], "%s g=%d k=%d", dt, g, k)
						continue
					}
					require.Equal(t, math.Float32bits(want), math.Float32bits(got[k]), "%s g=%d k=%d", dt, g, k)
				}
			}
		}
	}
	require.Error(t, b.Dequantize(F8E4M3, raw[:3], 0, make([]float32, 4)))
}

// TestLookupE4M3NaNFlag: LookupE4M3 flags a chunk exactly when
// ScanNonFinite finds an F8_E4M3 NaN code in it, at every position (word
// body and tail), and decodes every code through the table.
func TestLookupE4M3NaNFlag(t *testing.T) {
	t.Parallel()
	var tab [256]uint16
	for c := range tab {
		tab[c] = uint16(c)*3 + 1
	}
	for _, n := range []int{0, 1, 7, 8, 9, 31} {
		for pos := -1; pos < n; pos++ {
			for _, code := range []byte{0x7f, 0xff, 0x7e, 0xfe, 0x80} {
				in := make([]byte, n)
				for i := range in {
					in[i] = byte(i*37) & 0x7e // finite codes
				}
				if pos >= 0 {
					in[pos] = code
				}
				out := make([]uint16, n)
				flag := LookupE4M3(out, in, &tab)
				require.Equal(t, ScanNonFinite(F8E4M3, in).NaN > 0, flag, "n=%d pos=%d code=%#x", n, pos, code)
				for i, c := range in {
					require.Equal(t, tab[c], out[i])
				}
			}
		}
	}
}

// TestDequantE4M3 checks DequantE4M3 (the AVX2 kernels on amd64 when the
// CPU has them) byte for byte against the two routes it replaces: the
// float32 products of the Go loop encoded by EncodeFloat32, and a
// ScaleTable16/ScaleTable32 lookup. Every code at every position of a
// 32-code group, NaN codes among them, under scales of every magnitude
// (subnormal products, halves that underflow, overflow to Inf in F16,
// ties of both roundings, scales around the kernel's 2^24 bound), ±0,
// infinities and NaN, into BF16, F16 and F32, on runs of every length;
// the NaN flag is set exactly when a NaN code is in the run.
func TestDequantE4M3(t *testing.T) {
	t.Parallel()
	scales := []float32{1, -1, 0.5, 3.1e-3, -7.7e-5, 1e-30, 1e-36, -3e-38, 1e-40, math.SmallestNonzeroFloat32,
		0, float32(math.Copysign(0, -1)), 0x1p24, -0x1p24, math.Nextafter32(0x1p24, 0), 0x1p23, 1e30, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0x7f800001),
		146.3, 147, 1 + 0x1p-8, 1 + 0x1p-11, 3 * 0x1p-25, 0x1p-14, 0x1p-24, 0x1p-25, 1.5 * 0x1p-24}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 100 {
		scales = append(scales, float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(80)-60)))
	}
	for _, out := range []DType{BF16, F16, F32} {
		db := out.Bits() / 8
		t.Logf("%s: vector kernel %v", out, DequantE4M3Fast(out))
		for k, s := range scales {
			var t16 [256]uint16
			var t32 [256]uint32
			if db == 2 {
				require.NoError(t, ScaleTable16(&t16, F8E4M3, s, out, KeepNaN))
			} else {
				require.NoError(t, ScaleTable32(&t32, F8E4M3, s))
			}
			for rot := range 32 {
				size := 256 + rng.IntN(80)
				src := make([]byte, size)
				for i := range src {
					src[i] = byte(i + rot)
				}
				if k%2 == 1 {
					rng.Shuffle(len(src), func(i, j int) { src[i], src[j] = src[j], src[i] })
				}
				if rot%4 == 0 { // runs without a NaN code
					for i, c := range src {
						if c&0x7f == 0x7f {
							src[i] = 0x80
						}
					}
				}
				src = src[rng.IntN(8) : size-rng.IntN(40)]
				vals := make([]float32, len(src))
				decodeE4M3Go(e4m3Table, src, vals, s)
				want := make([]byte, len(src)*db)
				require.NoError(t, EncodeFloat32(out, vals, want))
				got := make([]byte, len(want))
				nan, err := DequantE4M3(got, src, s, out)
				require.NoError(t, err)
				require.Equal(t, ScanNonFinite(F8E4M3, src).NaN > 0, nan, "%s scale %g", out, s)
				for i, c := range src {
					var tab []byte
					if db == 2 {
						tab = binary.LittleEndian.AppendUint16(nil, t16[c])
					} else {
						tab = binary.LittleEndian.AppendUint32(nil, t32[c])
					}
					if !bytes.Equal(got[i*db:(i+1)*db], want[i*db:(i+1)*db]) || !bytes.Equal(tab, want[i*db:(i+1)*db]) {
						require.Failf(t, "encodings differ", "%s scale %g (%#08x), code %#02x at %d of %d: got %x, want %x, table %x",
							out, s, math.Float32bits(s), c, i, len(src), got[i*db:(i+1)*db], want[i*db:(i+1)*db], tab)
					}
				}
			}
		}
	}
	_, err := DequantE4M3(make([]byte, 3), []byte{1, 2}, 1, BF16)
	require.Error(t, err)
	_, err = DequantE4M3(make([]byte, 4), []byte{1, 2}, 1, F8E4M3)
	require.Error(t, err)
}

// TestBlockScalesDequantizeE4M3 checks DequantizeE4M3 against a
// ScaleTable16/ScaleTable32 lookup of each element's block scale, byte for
// byte, into BF16, F16 and F32: runs that start anywhere and cross blocks
// and rows, ragged last blocks, zero, subnormal, NaN and Inf scales; the
// NaN flag is set exactly when the run holds a NaN code.
func TestBlockScalesDequantizeE4M3(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	const rows, cols, bm, bn = 7, 300, 2, 64
	b := &BlockScales{Cols: cols, BM: bm, BN: bn, SCols: (cols + bn - 1) / bn}
	b.Scale = make([]float32, 4*b.SCols)
	for i := range b.Scale {
		b.Scale[i] = float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(40)-30))
	}
	b.Scale[1], b.Scale[2], b.Scale[3], b.Scale[4], b.Scale[6] = 0, 1e-41, float32(math.NaN()), float32(math.Inf(-1)), 3e30
	raw := make([]byte, rows*cols)
	for i := range raw {
		raw[i] = byte(rng.IntN(256))
		if i%3 == 0 {
			raw[i] &^= 1 // fewer NaN codes
		}
	}
	for _, out := range []DType{BF16, F16, F32} {
		db := int64(out.Bits() / 8)
		tabs := make([][]byte, len(b.Scale)) // the encoding of every code, per block
		for i, s := range b.Scale {
			if db == 2 {
				var tab [256]uint16
				require.NoError(t, ScaleTable16(&tab, F8E4M3, s, out, KeepNaN))
				for _, x := range tab {
					tabs[i] = binary.LittleEndian.AppendUint16(tabs[i], x)
				}
			} else {
				var tab [256]uint32
				require.NoError(t, ScaleTable32(&tab, F8E4M3, s))
				for _, x := range tab {
					tabs[i] = binary.LittleEndian.AppendUint32(tabs[i], x)
				}
			}
		}
		for range 300 {
			g := int64(rng.IntN(rows * cols))
			n := int64(rng.IntN(rows*cols - int(g) + 1))
			if rng.IntN(4) == 0 {
				n = min(n, int64(rng.IntN(100)))
			}
			got := make([]byte, n*db)
			nan, err := b.DequantizeE4M3(out, raw[g:g+n], g, got)
			require.NoError(t, err)
			require.Equal(t, ScanNonFinite(F8E4M3, raw[g:g+n]).NaN > 0, nan)
			for k := range n {
				e := g + k
				i, j := e/cols, e%cols
				c := int64(raw[e])
				want := tabs[(i/bm)*b.SCols+j/bn][c*db : (c+1)*db]
				require.Equal(t, want, got[k*db:(k+1)*db], "%s g=%d k=%d code %#x scale %g", out, g, k, c, b.At(i, j))
			}
		}
	}
	_, err := b.DequantizeE4M3(F8E4M3, raw[:4], 0, make([]byte, 4))
	require.Error(t, err)
	_, err = b.DequantizeE4M3(BF16, raw[:4], 0, make([]byte, 7))
	require.Error(t, err)
}

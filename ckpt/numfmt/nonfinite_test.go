package numfmt

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanReference is ScanNonFinite element by element through the decoders.
func scanReference(dt DType, raw []byte) Scan {
	s := Scan{First: -1}
	w := dt.Bits() / 8
	for j := 0; j+w <= len(raw); j += w {
		var nan, inf bool
		switch dt {
		case F64:
			f := math.Float64frombits(binary.LittleEndian.Uint64(raw[j:]))
			nan, inf = math.IsNaN(f), math.IsInf(f, 0)
		case F8E4M3FNUZ, F8E5M2FNUZ:
			nan = raw[j] == 0x80
		default:
			var f float32
			switch dt {
			case F32:
				f = math.Float32frombits(binary.LittleEndian.Uint32(raw[j:]))
			case BF16:
				f = BF16ToF32(binary.LittleEndian.Uint16(raw[j:]))
			case F16:
				f = F16ToF32(binary.LittleEndian.Uint16(raw[j:]))
			default:
				f = codeTable(dt)[raw[j]]
			}
			nan, inf = f != f, math.IsInf(float64(f), 0)
		}
		if !nan && !inf {
			continue
		}
		if s.First < 0 {
			s.First, s.FirstInf = int64(j/w), inf
		}
		if inf {
			s.Inf++
		} else {
			s.NaN++
		}
	}
	return s
}

// TestScanNonFinite compares ScanNonFinite and HasNonFinite (with the AVX2
// clean prefix on amd64 for F8_E4M3) with a decode of every element:
// every dtype, random data with hits at group edges (32 and 128 bytes),
// several per group and in later groups after a hit, every length up to
// 700 bytes, partial trailing elements.
func TestScanNonFinite(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	bad := map[DType][]uint64{
		F8E4M3: {0x7f, 0xff}, F8E5M2: {0x7c, 0xfd, 0x7f}, BF16: {0x7f80, 0xffc1, 0x7f81}, F16: {0x7c00, 0xfe00},
		F32: {0x7f800000, 0xffc00001}, F64: {0x7ff0000000000000, 0xfff8000000000001},
		F8E8M0: {0xff}, F8E4M3FNUZ: {0x80}, F8E5M2FNUZ: {0x80},
	}
	for dt, codes := range bad {
		w := dt.Bits() / 8
		for n := 0; n <= 700; n += 1 + r.IntN(3) {
			for k := 0; k < 4; k++ {
				p := make([]byte, n)
				for i := range p {
					p[i] = byte(r.IntN(256))
				}
				// finite filler: clear the exponent's top bit of every lane
				for j := 0; j+w <= n; j += w {
					p[j+w-1] &^= 0x40
					if dt == F8E8M0 || dt == F8E4M3FNUZ || dt == F8E5M2FNUZ {
						p[j] &= 0x7f
					}
				}
				for range k * (1 + r.IntN(3)) {
					if n < w {
						break
					}
					at := r.IntN(n / w)
					if r.IntN(2) == 0 {
						at = min(n/w-1, ((r.IntN(6)+1)*128-r.IntN(2)*w)/w)
					}
					c := codes[r.IntN(len(codes))]
					for b := 0; b < w; b++ {
						p[at*w+b] = byte(c >> (8 * b))
					}
				}
				want := scanReference(dt, p)
				require.Equal(t, want, ScanNonFinite(dt, p), "%s n=%d", dt, n)
				require.Equal(t, want.First >= 0, HasNonFinite(dt, p), "%s n=%d", dt, n)
			}
		}
	}
	require.Equal(t, Scan{First: -1}, ScanNonFinite(I32, []byte{0xff, 0xff, 0xff, 0xff}))
	require.False(t, CanBeNonFinite(U8))
}

// TestCleanPrefix checks cleanPrefix (the AVX2 kernel on amd64) against
// cleanPrefixGo: a NaN code at every position of the first 384 bytes.
func TestCleanPrefix(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 384; n += 32 {
		for at := -1; at < n; at++ {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i*37) & 0x7e
			}
			if at >= 0 {
				p[at] = 0xff
			}
			got := cleanPrefix(e4m3Lanes, p)
			want := cleanPrefixGo(e4m3Lanes, p)
			require.LessOrEqual(t, got, want, "n=%d at=%d", n, at)
			if at < 0 {
				require.Equal(t, n, got)
			} else {
				require.LessOrEqual(t, got, at, "n=%d at=%d", n, at)
				require.Greater(t, got+cleanGroup, at, "n=%d at=%d", n, at)
			}
		}
	}
}

// TestCountNonFiniteF32 checks the float32 entry point against IsNaN and
// IsInf.
func TestCountNonFiniteF32(t *testing.T) {
	t.Parallel()
	vals := []float32{1, float32(math.NaN()), -0, float32(math.Inf(-1)), math.MaxFloat32, math.Float32frombits(0xff800001), float32(math.Inf(1)), 1e-45}
	for n := range len(vals) + 1 {
		var nan, inf int64
		for _, v := range vals[:n] {
			if v != v {
				nan++
			} else if math.IsInf(float64(v), 0) {
				inf++
			}
		}
		gn, gi := CountNonFiniteF32(vals[:n])
		require.Equal(t, [2]int64{nan, inf}, [2]int64{gn, gi}, "n=%d", n)
	}
}

// TestHasNonFiniteBF16 agrees with ScanNonFinite on every position of
// NaN/Inf bits (word body and tail), odd byte counts included.
func TestHasNonFiniteBF16(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 2, 31, 32, 34, 70, 300} {
		for pos := -1; pos < n/2; pos++ {
			for _, h := range []uint16{0x7f80, 0xff80, 0x7fc1, 0xffff, 0x7f7f, 0x3f80} {
				raw := make([]byte, n)
				for i := range raw {
					raw[i] = byte(i * 13 & 0x3f)
				}
				if pos >= 0 {
					raw[2*pos], raw[2*pos+1] = byte(h), byte(h>>8)
				}
				s := ScanNonFinite(BF16, raw)
				require.Equal(t, s.NaN+s.Inf > 0, HasNonFinite(BF16, raw), "n=%d pos=%d h=%#x", n, pos, h)
				require.Equal(t, h&0x7f80 == 0x7f80 && pos >= 0, HasNonFinite(BF16, raw), "n=%d pos=%d h=%#x", n, pos, h)
			}
		}
	}
}

// TestHasNonFiniteE4M3: a NaN code (0x7f or 0xff) anywhere, in the words,
// the AVX2 groups or the tail, is found; every other code is not one.
func TestHasNonFiniteE4M3(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 300; n++ {
		raw := make([]byte, n)
		for i := range raw {
			raw[i] = byte(i*37) &^ 0x01 // never 0x7f or 0xff
		}
		require.False(t, HasNonFinite(F8E4M3, raw), "n=%d", n)
		for pos := 0; pos < n; pos++ {
			for _, c := range []byte{0x7f, 0xff} {
				old := raw[pos]
				raw[pos] = c
				require.True(t, HasNonFinite(F8E4M3, raw), "n=%d pos=%d code=%#x", n, pos, c)
				raw[pos] = old
			}
		}
	}
	all := make([]byte, 0, 256)
	for c := range 256 {
		if c&0x7f != 0x7f {
			all = append(all, byte(c))
		}
	}
	require.False(t, HasNonFinite(F8E4M3, all))
}

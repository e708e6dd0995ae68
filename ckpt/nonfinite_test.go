package ckpt_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// TestCountNonFinite compares the eight-bytes-at-a-time count with a
// decode of every element, on random bytes (rich in NaN/Inf for the
// narrow formats), at every length and offset.
func TestCountNonFinite(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 4096)
	for i := range raw {
		raw[i] = byte(r.Uint32())
		if r.IntN(4) == 0 {
			raw[i] |= 0x7f // plenty of all-ones exponents
		}
	}
	for _, dt := range []numfmt.DType{numfmt.F8E4M3, numfmt.F8E5M2, numfmt.BF16, numfmt.F16, numfmt.F32, numfmt.F64} {
		w := dt.Bits() / 8
		for _, n := range []int{0, 1, 7, 8, 9, 15, 64, 1000, 4096} {
			b := raw[:n/w*w]
			var wantNaN, wantInf int64
			if dt == numfmt.F64 {
				for i := 0; i+8 <= len(b); i += 8 {
					v := math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))
					if math.IsNaN(v) {
						wantNaN++
					} else if math.IsInf(v, 0) {
						wantInf++
					}
				}
			} else {
				vals := make([]float32, len(b)/w)
				require.NoError(t, numfmt.DecodeFloat32(dt, b, vals))
				for _, v := range vals {
					if v != v {
						wantNaN++
					} else if math.IsInf(float64(v), 0) {
						wantInf++
					}
				}
			}
			nan, inf := ckpt.CountNonFinite(dt, b)
			require.Equal(t, [2]int64{wantNaN, wantInf}, [2]int64{nan, inf}, "%s n=%d", dt, n)
		}
	}
	// Single-code formats.
	nan, inf := ckpt.CountNonFinite(numfmt.F8E8M0, []byte{0xff, 0x7f, 0xff, 0})
	require.Equal(t, [2]int64{2, 0}, [2]int64{nan, inf})
	nan, _ = ckpt.CountNonFinite(numfmt.F8E4M3FNUZ, []byte{0x80, 0x7f, 0xff})
	require.EqualValues(t, 1, nan)
	nan, inf = ckpt.CountNonFinite(numfmt.I32, []byte{0xff, 0xff, 0xff, 0x7f})
	require.Zero(t, nan+inf)
	// F8_E4M3: 0x7f and 0xff are NaN, 0x7e/0xfe are the largest finite.
	nan, inf = ckpt.CountNonFinite(numfmt.F8E4M3, []byte{0x7f, 0xff, 0x7e, 0xfe, 0, 0, 0, 0, 0x7f})
	require.Equal(t, [2]int64{3, 0}, [2]int64{nan, inf})
}

func BenchmarkCountNonFiniteFP8(b *testing.B) {
	raw := make([]byte, 8<<20)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		ckpt.CountNonFinite(numfmt.F8E4M3, raw)
	}
}

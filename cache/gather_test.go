package cache

import (
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/require"
)

// TestRoundBF16 checks the branch-free rounding against the host
// conversion ckpt.F32ToBF16TT on edge cases (NaNs of every sign and payload
// become 0x7FC0) and a sweep of bit patterns.
func TestRoundBF16(t *testing.T) {
	t.Parallel()
	cases := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0xffbfffff, 0x7f7fffff, 0x3f808000, 0x3f818000, 0x3f80ffff, 0x00008000, 0x00018000}
	for u := uint32(0); u < 1<<20; u++ {
		cases = append(cases, u*4093+u>>3)
	}
	for _, u := range cases {
		x := math.Float32frombits(u)
		want := math.Float32bits(ckpt.BF16ToF32(ckpt.F32ToBF16TT(x)))
		require.Equal(t, want, math.Float32bits(ckpt.RoundBF16TT(x)), "bits %#08x", u)
	}
	for _, nan := range []uint32{0x7f800001, 0xffbfffff, 0xffc00000, 0x7fffffff} {
		require.Equal(t, uint32(0x7fc00000), math.Float32bits(ckpt.RoundBF16TT(math.Float32frombits(nan))), "NaN %#08x", nan)
	}
}

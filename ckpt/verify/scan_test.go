package verify

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
)

func TestScanners(t *testing.T) {
	t.Parallel()
	// E4M3: NaN codes at 3 and 17 (unaligned tail too)
	p := make([]byte, 19)
	for i := range p {
		p[i] = byte(i)
	}
	p[3], p[17] = 0x7f, 0xff
	var c counts
	c.first = -1
	scanE4M3(p, 100, &c)
	assert.Equal(t, int64(2), c.nan)
	assert.Equal(t, int64(103), c.first)

	// BF16 and F16: one Inf, one NaN, finite maxima are not flagged
	for _, tc := range []struct {
		mask          uint16
		inf, nan, big uint16
	}{{0x7f80, 0x7f80, 0x7fc1, 0x7f7f}, {0x7c00, 0xfc00, 0x7e00, 0x7bff}} {
		vals := []uint16{0, tc.big, tc.inf, 1, tc.big | 0x8000, 5, tc.nan}
		b := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(b[2*i:], v)
		}
		var c counts
		c.first = -1
		scanHalf(b, 0, tc.mask, &c)
		assert.Equal(t, int64(1), c.inf, "mask %x", tc.mask)
		assert.Equal(t, int64(1), c.nan, "mask %x", tc.mask)
		assert.Equal(t, int64(2), c.first)
		assert.Equal(t, int64(7), c.n)
	}

	f := []float32{1, math.MaxFloat32, float32(math.Inf(-1)), float32(math.NaN()), 2}
	b := make([]byte, 4*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	c = counts{first: -1}
	scanF32(b, 0, &c)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{c.nan, c.inf})
	assert.Equal(t, "Inf", c.firstValue)

	// scales: zero, negative, NaN
	s := []float32{1, 0, -2, float32(math.NaN()), 0.5}
	sb := make([]byte, 2*len(s))
	assert.NoError(t, ckpt.EncodeFloat32(ckpt.BF16, s, sb))
	c = counts{first: -1}
	scanScales(ckpt.BF16, sb, 0, &c, nil)
	assert.Equal(t, [3]int64{1, 1, 1}, [3]int64{c.zero, c.neg, c.nan})
	assert.Equal(t, int64(1), c.first)
}

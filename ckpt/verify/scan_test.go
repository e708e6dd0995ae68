package verify

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	scanValues(numfmt.F8E4M3, p, 100, &c)
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
		scanValues(map[uint16]numfmt.DType{0x7f80: numfmt.BF16, 0x7c00: numfmt.F16}[tc.mask], b, 0, &c)
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
	scanValues(numfmt.F32, b, 0, &c)
	assert.Equal(t, [2]int64{1, 1}, [2]int64{c.nan, c.inf})
	assert.Equal(t, "Inf", c.firstValue)

	// scales: zero, negative, NaN
	s := []float32{1, 0, -2, float32(math.NaN()), 0.5}
	sb := make([]byte, 2*len(s))
	assert.NoError(t, numfmt.EncodeFloat32(numfmt.BF16, s, sb))
	c = counts{first: -1}
	scanScales(numfmt.BF16, sb, 0, &c, nil)
	assert.Equal(t, [3]int64{1, 1, 1}, [3]int64{c.zero, c.neg, c.nan})
	assert.Equal(t, int64(1), c.first)
}

// TestScannersWide checks the 32-byte steps of scanValues (F8_E4M3, BF16) against
// a value-by-value count, with hits at every position of a step and in the
// tail.
func TestScannersWide(t *testing.T) {
	t.Parallel()
	for n := 0; n < 100; n += 7 {
		for _, at := range []int{0, 1, 7, 8, 31, 32, 33, 63, 64, 99} {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(i * 37 % 126)
			}
			if at < n {
				p[at] = 0xff
			}
			want := counts{first: -1}
			for i, b := range p {
				if b&0x7f == 0x7f {
					want.nan++
					want.note(int64(i), "NaN")
				}
			}
			got := counts{first: -1}
			scanValues(numfmt.F8E4M3, p, 0, &got)
			assert.Equal(t, want.nan, got.nan, "E4M3 n=%d at=%d", n, at)
			assert.Equal(t, want.first, got.first, "E4M3 n=%d at=%d", n, at)

			h := make([]byte, 2*n)
			for i := 0; i < n; i++ {
				binary.LittleEndian.PutUint16(h[2*i:], uint16(i*997%0x7f00))
			}
			if at < n {
				binary.LittleEndian.PutUint16(h[2*at:], 0xff80)
			}
			got = counts{first: -1}
			scanValues(numfmt.BF16, h, 0, &got)
			wantInf := int64(0)
			if at < n {
				wantInf = 1
			}
			assert.Equal(t, wantInf, got.inf, "BF16 n=%d at=%d", n, at)
			assert.Equal(t, int64(0), got.nan, "BF16 n=%d at=%d", n, at)
		}
	}
}

// TestScanE4M3Long checks scanValues(F8_E4M3) over the 128-byte groups of the AVX2
// scan (and the 32-byte ones of the Go scan) against a byte-by-byte count:
// NaN codes at group edges, several per group and in later groups after a
// hit, every length up to 700.
func TestScanE4M3Long(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 700; n++ {
		for k := 0; k < 4; k++ {
			p := make([]byte, n)
			for i := range p {
				p[i] = byte(r.IntN(0x7f)) | byte(r.IntN(2))<<7
			}
			for range k * (1 + r.IntN(3)) {
				if n == 0 {
					break
				}
				at := r.IntN(n)
				if r.IntN(2) == 0 {
					at = min(n-1, (r.IntN(6)+1)*128-r.IntN(2)) // a group's last or the next one's first byte
				}
				p[at] = 0x7f | byte(r.IntN(2))<<7
			}
			want := counts{n: int64(n), first: -1}
			for i, b := range p {
				if b&0x7f == 0x7f {
					want.nan++
					want.note(int64(i)+5, "NaN")
				}
			}
			got := counts{first: -1}
			scanValues(numfmt.F8E4M3, p, 5, &got)
			require.Equal(t, want, got, "n=%d", n)
		}
	}
}

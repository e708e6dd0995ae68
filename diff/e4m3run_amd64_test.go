//go:build amd64 && !purego

package diff

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE4M3Tab checks the decode table of e4m3BlocksAVX512: for every
// magnitude the two bytes are the top of the float64 value, whose other
// 48 bits are zero, and the NaN magnitude decodes to a NaN.
func TestE4M3Tab(t *testing.T) {
	t.Parallel()
	for m := range 128 {
		u := uint64(e4m3Tab[128+m])<<56 | uint64(e4m3Tab[m])<<48
		v := math.Float64frombits(u)
		if m == 0x7f {
			assert.True(t, math.IsNaN(v), "magnitude %#x", m)
			continue
		}
		require.Zero(t, math.Float64bits(e4m3Values[m])&(1<<48-1), "magnitude %#x: low bits", m)
		assert.Equal(t, math.Float64bits(e4m3Values[m]), u, "magnitude %#x", m)
	}
}

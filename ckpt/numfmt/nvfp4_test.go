package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDequantNVFP4Exhaustive runs every E4M3 block scale against every
// E2M1 code under global scales chosen to round: each value must be the
// exact product e2m1*e4m3*global rounded once to float32.
func TestDequantNVFP4Exhaustive(t *testing.T) {
	t.Parallel()
	// one row per block scale code, 16 columns = one block holding
	// every E2M1 code once (bytes 0x10, 0x32, ..., 0xFE).
	rows, cols := 256, 16
	packed := make([]byte, rows*cols/2)
	scales := make([]byte, rows)
	for r := 0; r < rows; r++ {
		scales[r] = byte(r)
		for j := 0; j < 8; j++ {
			packed[r*8+j] = byte(2*j) | byte(2*j+1)<<4
		}
	}
	for _, global := range []float32{1, 1.0 / 3, 0.1, 3.0e-5, float32(math.Ldexp(1.2345, 100))} {
		dst := make([]float32, rows*cols)
		require.NoError(t, DequantNVFP4(dst, packed, scales, global, rows, cols))
		for r := 0; r < rows; r++ {
			for k := 0; k < cols; k++ {
				got := dst[r*cols+k]
				if r&0x7F == 0x7F {
					assert.True(t, math.IsNaN(float64(got)), "NaN scale %#x", r)
					continue
				}
				s := float64(DecodeE4M3(byte(r)))
				want := float32(e2m1Ref(byte(k)) * s * float64(global)) // exact in float64, rounded once
				if !assert.Equal(t, want, got, "global %v scale %#x code %#x", global, r, k) {
					return
				}
			}
		}
	}
}

func TestDequantNVFP4Layout(t *testing.T) {
	t.Parallel()
	// 2×32: row 0 block 0 scale 1, block 1 scale 2; row 1 scale 0.5, 448.
	packed := make([]byte, 32)
	for i := range packed {
		packed[i] = 0x42 // element 2i: code 2 (1.0), element 2i+1: code 4 (2.0)
	}
	scales := []byte{0x38, 0x40, 0x30, 0x7E}
	dst := make([]float32, 64)
	require.NoError(t, DequantNVFP4(dst, packed, scales, 2, 2, 32))
	for i, v := range dst {
		r, k := i/32, i%32
		s := []float32{1, 2, 0.5, 448}[r*2+k/16]
		code := float32(1)
		if k%2 == 1 {
			code = 2
		}
		assert.Equal(t, code*s*2, v, "element (%d, %d)", r, k)
	}
}

func TestDequantNVFP4Sizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                      string
		dst, packed, scales, r, c int
		err                       string
	}{
		{"cols not whole blocks", 8, 4, 0, 1, 8, "1×8 is not a weight of whole 16-element blocks"},
		{"packed short", 32, 15, 2, 1, 32, "15 packed bytes for 1×32 values, want 16"},
		{"scales short", 32, 16, 1, 1, 32, "1 block scales for 1×32 values, want 2"},
		{"dst short", 31, 16, 2, 1, 32, "room for 31 values, want 32"},
		{"negative", 0, 0, 0, -1, 16, "is not a weight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := DequantNVFP4(make([]float32, tc.dst), make([]byte, tc.packed), make([]byte, tc.scales), 1, tc.r, tc.c)
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

func TestNVFP4ScaleShape(t *testing.T) {
	t.Parallel()
	s, ok := NVFP4ScaleShape([]int64{64, 128})
	assert.True(t, ok)
	assert.Equal(t, []int64{64, 16}, s)
	for _, bad := range [][]int64{{64, 4}, {64}, {2, 64, 8}, {-1, 8}} {
		_, ok := NVFP4ScaleShape(bad)
		assert.False(t, ok, "%v", bad)
	}
}

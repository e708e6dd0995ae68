package numfmt

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDequantMXFP4(t *testing.T) {
	t.Parallel()
	// block 0: bytes 0..15 hold codes (2j, 2j+1) mod 16 → every code once
	// per pair of bytes; block 1 the same bytes reversed.
	blocks := make([]byte, 32)
	for j := 0; j < 16; j++ {
		blocks[j] = byte(2*j%16) | byte((2*j+1)%16)<<4
		blocks[31-j] = blocks[j]
	}
	tests := []struct {
		name   string
		scales []byte
	}{
		{"unit and half", []byte{127, 126}},
		{"smallest exponents", []byte{0, 1}},
		{"largest finite exponents", []byte{254, 253}},
		{"NaN scale", []byte{0xFF, 130}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, 64)
			require.NoError(t, DequantMXFP4(dst, blocks, tc.scales))
			for g := 0; g < 2; g++ {
				for j := 0; j < 32; j++ {
					b := blocks[g*16+j/2]
					code := b & 0xF
					if j%2 == 1 {
						code = b >> 4
					}
					got := dst[g*32+j]
					if tc.scales[g] == 0xFF {
						assert.True(t, math.IsNaN(float64(got)), "block %d element %d", g, j)
						continue
					}
					// the exact product, rounded to float32 (overflow → Inf).
					want := float32(e2m1Ref(code) * math.Ldexp(1, int(tc.scales[g])-127))
					assert.Equal(t, want, got, "block %d element %d", g, j)
				}
			}
		})
	}
}

func TestDequantMXFP4Sizes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		dst, blocks, scale int
		err                string
	}{
		{"blocks short", 64, 31, 2, "31 block bytes for 2 scales, want 32"},
		{"dst short", 63, 32, 2, "room for 63 values for 2 scales, want 64"},
		{"empty", 0, 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := make([]float32, tc.dst)
			for i := range dst {
				dst[i] = 7
			}
			err := DequantMXFP4(dst, make([]byte, tc.blocks), make([]byte, tc.scale))
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.err)
			for _, v := range dst {
				assert.Equal(t, float32(7), v, "nothing written on error")
			}
		})
	}
}

func TestMXFP4Shapes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		blocks, values, scales []int64
		ok                     bool
	}{
		{[]int64{4, 6, 90, 16}, []int64{4, 6, 2880}, []int64{4, 6, 90}, true},
		{[]int64{3, 16}, []int64{96}, []int64{3}, true},
		{[]int64{3, 15}, nil, nil, false},
		{[]int64{16}, nil, nil, false},
		{nil, nil, nil, false},
	}
	for _, tc := range tests {
		v, ok := MXFP4Shape(tc.blocks)
		assert.Equal(t, tc.ok, ok, "%v", tc.blocks)
		assert.Equal(t, tc.values, v, "%v", tc.blocks)
		s, ok := MXFP4ScaleShape(tc.blocks)
		assert.Equal(t, tc.ok, ok, "%v", tc.blocks)
		assert.Equal(t, tc.scales, s, "%v", tc.blocks)
	}
}

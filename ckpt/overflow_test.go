package ckpt_test

import (
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
)

// TestFiniteIn: the thresholds agree with the encoders (a value is finite
// in dt exactly when EncodeFloat32 gives a finite encoding).
func TestFiniteIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dt   ckpt.DType
		x    float32
		want bool
	}{
		{ckpt.F16, 65504, true},
		{ckpt.F16, 65519.99, true},
		{ckpt.F16, 65520, false},
		{ckpt.F16, -7e4, false},
		{ckpt.BF16, 3.3895e38, true},
		{ckpt.BF16, math.Float32frombits(0x7f7f7fff), true},
		{ckpt.BF16, math.Float32frombits(0x7f7f8000), false},
		{ckpt.BF16, math.MaxFloat32, false},
		{ckpt.F32, math.MaxFloat32, true},
		{ckpt.F32, float32(math.Inf(-1)), false},
		{ckpt.F32, float32(math.NaN()), false},
	} {
		assert.Equal(t, tc.want, ckpt.FiniteIn(tc.dt, tc.x), "%s %g", tc.dt, tc.x)
		enc := make([]byte, tc.dt.Bits()/8)
		assert.NoError(t, ckpt.EncodeFloat32(tc.dt, []float32{tc.x}, enc))
		nan, inf := ckpt.CountNonFinite(tc.dt, enc)
		assert.Equal(t, tc.want, nan+inf == 0, "%s %g encoded", tc.dt, tc.x)
	}
	assert.True(t, ckpt.MayOverflow(ckpt.F32, ckpt.BF16))
	assert.True(t, ckpt.MayOverflow(ckpt.BF16, ckpt.F16))
	assert.False(t, ckpt.MayOverflow(ckpt.F8E5M2, ckpt.F16))
	assert.False(t, ckpt.MayOverflow(ckpt.F16, ckpt.BF16))
	assert.False(t, ckpt.MayOverflow(ckpt.BF16, ckpt.F32))
}

package ckpt_test

import (
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
)

// TestFiniteIn: the thresholds agree with the encoders (a value is finite
// in dt exactly when EncodeFloat32 gives a finite encoding).
func TestFiniteIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dt   numfmt.DType
		x    float32
		want bool
	}{
		{numfmt.F16, 65504, true},
		{numfmt.F16, 65519.99, true},
		{numfmt.F16, 65520, false},
		{numfmt.F16, -7e4, false},
		{numfmt.BF16, 3.3895e38, true},
		{numfmt.BF16, math.Float32frombits(0x7f7f7fff), true},
		{numfmt.BF16, math.Float32frombits(0x7f7f8000), false},
		{numfmt.BF16, math.MaxFloat32, false},
		{numfmt.F32, math.MaxFloat32, true},
		{numfmt.F32, float32(math.Inf(-1)), false},
		{numfmt.F32, float32(math.NaN()), false},
	} {
		assert.Equal(t, tc.want, numfmt.FiniteIn(tc.dt, tc.x), "%s %g", tc.dt, tc.x)
		enc := make([]byte, tc.dt.Bits()/8)
		assert.NoError(t, numfmt.EncodeFloat32(tc.dt, []float32{tc.x}, enc))
		nan, inf := ckpt.CountNonFinite(tc.dt, enc)
		assert.Equal(t, tc.want, nan+inf == 0, "%s %g encoded", tc.dt, tc.x)
	}
	assert.True(t, numfmt.MayOverflow(numfmt.F32, numfmt.BF16))
	assert.True(t, numfmt.MayOverflow(numfmt.BF16, numfmt.F16))
	assert.False(t, numfmt.MayOverflow(numfmt.F8E5M2, numfmt.F16))
	assert.False(t, numfmt.MayOverflow(numfmt.F16, numfmt.BF16))
	assert.False(t, numfmt.MayOverflow(numfmt.BF16, numfmt.F32))
}

package tile

import "github.com/ckpt-dev/ckpt/ckpt/numfmt"

// EncodeFP8Transposed is EncodeFP8TransposedNaN with ttnn's NaN pattern
// (numfmt.TTNaNBF16), as the tests call it.
func EncodeFP8Transposed(dt DType, dst []byte, src []byte, stride int, scales []float32, n int) {
	EncodeFP8TransposedNaN(dt, dst, src, stride, scales, n, numfmt.TTNaNBF16)
}

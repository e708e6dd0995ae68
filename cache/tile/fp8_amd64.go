//go:build amd64 && !purego

package tile

// fp8TilesKernel encodes tiles [0, k) of EncodeFP8Transposed's run (every
// scale valid) and returns k: the run's length, or the first tile the
// kernel cannot encode exactly.
func fp8TilesKernel(dt DType, dst []byte, src []byte, stride int, scales []float32, n int) int {
	return 0 // TODO(kernel): AVX2
}

//go:build amd64 && !purego

package tile

//go:generate go run -C _asm . -out ../fp8_amd64.s

import "golang.org/x/sys/cpu"

// fp8TilesAVX2 encodes tiles 0, 1, ... of a run as EncodeFP8TransposedNaN
// does — tile q from the 32 rows of 32 codes at src + 32q (rows stride
// bytes apart) under scales[q] (+0 or 0 < s < 256), n tiles at most,
// BFLOAT4_B when bfp4 and BFLOAT8_B otherwise — and returns the index of
// the first tile it cannot encode exactly (a NaN code, or a face row whose
// shared exponent is 255 or below minTableExp but not 0), n when there is
// none. That tile's
// bytes may be partly written. buf is scratch.
//
//go:noescape
func fp8TilesAVX2(dst *byte, src *byte, stride uintptr, scales *float32, n uintptr, buf *[512]byte, bfp4 bool) uintptr

// fp8AVX2 reports whether fp8TilesAVX2 runs on this CPU (AVX2 and FMA).
var fp8AVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// fp8TilesKernel encodes tiles [0, k) of EncodeFP8TransposedNaN's run (every
// scale valid) and returns k: the run's length, or the first tile the
// kernel cannot encode exactly.
func fp8TilesKernel(dt DType, dst []byte, src []byte, stride int, scales []float32, n int) int {
	if !fp8AVX2 || n <= 0 {
		return 0
	}
	var bfp4 bool
	switch dt {
	case BFLOAT8_B:
	case BFLOAT4_B:
		bfp4 = true
	default:
		return 0
	}
	_ = dst[n*dt.TileBytes()-1]
	_ = src[(TileDim-1)*stride+n*TileDim-1]
	_ = scales[n-1]
	var buf [512]byte
	return int(fp8TilesAVX2(&dst[0], &src[0], uintptr(stride), &scales[0], uintptr(n), &buf, bfp4))
}

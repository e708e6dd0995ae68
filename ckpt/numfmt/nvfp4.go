package numfmt

import "fmt"

// NVFP4 as NVIDIA ModelOpt exports it (and vLLM's ModelOpt loader reads
// it): a linear weight [N, K] is stored as
//   - weight: U8 [N, K/2], two E2M1 codes per byte along K, low nibble
//     first (see UnpackE2M1);
//   - weight_scale: F8_E4M3 [N, K/16], one scale per 16 consecutive
//     elements of a row;
//   - weight_scale_2: F32, the per-tensor ("global") scale (a scalar, or
//     one per fused shard, of which loaders take the max);
//   - input_scale: F32, the activations' global scale (not part of the
//     weight's values).
// (vllm-project/vllm:vllm/model_executor/layers/quantization/modelopt.py
// @c9a5990 ModelOptNvFp4LinearMethod.create_weights; group size 16 from
// the ModelOpt NVFP4 config.) The value of element (n, k) is
// e2m1(code) * e4m3(weight_scale[n, k/16]) * weight_scale_2. The product of
// an E2M1 and an E4M3 value is exact in float32 (at most 6 significant
// bits, magnitudes 2^-10..2688), so computing it first and then
// multiplying by the F32 global scale rounds once, to nearest even: the
// float32 result equals the exact product rounded to float32.

// NVFP4BlockSize is the number of elements one NVFP4 weight_scale covers.
const NVFP4BlockSize = 16

// NVFP4ScaleShape returns the shape of the weight_scale of an NVFP4 weight
// stored as packed [N, K/2] ([N, K/16]), or false when packed is not a
// matrix whose K (twice its columns) is a multiple of 16.
func NVFP4ScaleShape(packed []int64) ([]int64, bool) {
	if len(packed) != 2 || packed[0] < 0 || packed[1] < 0 || (2*packed[1])%NVFP4BlockSize != 0 {
		return nil, false
	}
	return []int64{packed[0], 2 * packed[1] / NVFP4BlockSize}, true
}

// DequantNVFP4 dequantises an NVFP4 weight of rows×cols values (cols a
// multiple of 16): packed holds rows*cols/2 bytes (row-major [rows,
// cols/2]), scales rows*cols/16 F8_E4M3 codes ([rows, cols/16]), global is
// weight_scale_2. dst receives rows*cols float32 values, each
// e2m1 * e4m3 * global rounded once (see the package notes above). A NaN
// block scale makes its 16 values NaN. It fails without writing when the
// sizes disagree.
func DequantNVFP4(dst []float32, packed, scales []byte, global float32, rows, cols int) error {
	switch {
	case rows < 0 || cols < 0 || cols%NVFP4BlockSize != 0:
		return fmt.Errorf("nvfp4: %d×%d is not a weight of whole 16-element blocks", rows, cols)
	case len(packed) != rows*cols/2:
		return fmt.Errorf("nvfp4: %d packed bytes for %d×%d values, want %d", len(packed), rows, cols, rows*cols/2)
	case len(scales) != rows*cols/NVFP4BlockSize:
		return fmt.Errorf("nvfp4: %d block scales for %d×%d values, want %d", len(scales), rows, cols, rows*cols/NVFP4BlockSize)
	case len(dst) != rows*cols:
		return fmt.Errorf("nvfp4: room for %d values, want %d", len(dst), rows*cols)
	}
	for i, sc := range scales {
		s := DecodeE4M3(sc)
		out := dst[i*NVFP4BlockSize : (i+1)*NVFP4BlockSize]
		for j, b := range packed[i*NVFP4BlockSize/2 : (i+1)*NVFP4BlockSize/2] {
			lo, hi := e2m1Pair(b)
			out[2*j], out[2*j+1] = (lo*s)*global, (hi*s)*global
		}
	}
	return nil
}

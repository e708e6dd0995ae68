package numfmt

import "fmt"

// MXFP4 as gpt-oss and transformers store it: a weight X is two U8
// tensors, X_blocks [..., G, 16] (32 packed E2M1 codes per block, low
// nibble first, see UnpackE2M1) and X_scales [..., G] (one E8M0 exponent
// per block of 32); the weight's values are [..., G*32], element 32g+j of
// a row being e2m1(code j of block g) * 2^(scale[g]-127)
// (huggingface/transformers:src/transformers/integrations/mxfp4.py@93a1c40
// convert_moe_packed_tensors, which asserts blocks.shape[:-1] ==
// scales.shape; openai/gpt-oss:gpt_oss/torch/weights.py@7a9ea75, whose
// own checkpoints name the pair X.blocks / X.scales).

// MXFP4BlockSize is the number of elements one MXFP4 scale covers.
const MXFP4BlockSize = 32

// MXFP4BlockBytes is the size of one packed MXFP4 block in bytes.
const MXFP4BlockBytes = MXFP4BlockSize / 2

// MXFP4Shape returns the shape of the values of an MXFP4 weight whose
// blocks tensor has the shape blocks ([..., G, 16] → [..., G*32]), or false
// when blocks is not of that form.
func MXFP4Shape(blocks []int64) ([]int64, bool) {
	n := len(blocks)
	if n < 2 || blocks[n-1] != MXFP4BlockBytes || blocks[n-2] < 0 {
		return nil, false
	}
	out := append([]int64(nil), blocks[:n-1]...)
	out[n-2] *= MXFP4BlockSize
	return out, true
}

// MXFP4ScaleShape returns the shape of the scales tensor that goes with an
// MXFP4 blocks tensor of the shape blocks ([..., G, 16] → [..., G]), or
// false when blocks is not of that form.
func MXFP4ScaleShape(blocks []int64) ([]int64, bool) {
	n := len(blocks)
	if n < 2 || blocks[n-1] != MXFP4BlockBytes {
		return nil, false
	}
	return append([]int64(nil), blocks[:n-1]...), true
}

// DequantMXFP4 dequantises MXFP4 blocks: blocks holds len(scales) packed
// blocks of 16 bytes, scales their E8M0 exponents, dst receives 32 values
// per block. Each value is an E2M1 value times a power of two, exact in
// float32 unless it overflows (to ±Inf, as ldexp in float32 does: scales
// above 2^125 with large codes) or the scale is NaN (0xFF: every value of
// the block is NaN). It fails without writing when the lengths disagree.
func DequantMXFP4(dst []float32, blocks, scales []byte) error {
	g := len(scales)
	if len(blocks) != g*MXFP4BlockBytes {
		return fmt.Errorf("mxfp4: %d block bytes for %d scales, want %d (16 per scale)", len(blocks), g, g*MXFP4BlockBytes)
	}
	if len(dst) != g*MXFP4BlockSize {
		return fmt.Errorf("mxfp4: room for %d values for %d scales, want %d (32 per scale)", len(dst), g, g*MXFP4BlockSize)
	}
	for i, sc := range scales {
		s := E8M0ToFloat32(sc)
		out := dst[i*MXFP4BlockSize : (i+1)*MXFP4BlockSize]
		for j, b := range blocks[i*MXFP4BlockBytes : (i+1)*MXFP4BlockBytes] {
			lo, hi := e2m1Pair(b)
			out[2*j], out[2*j+1] = lo*s, hi*s
		}
	}
	return nil
}

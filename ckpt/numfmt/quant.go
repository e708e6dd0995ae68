package numfmt

// scaleFor is the block scale of the recipe for a block whose largest |w|
// is amax: float32(amax) / 448 in float32, stored in (rounded to nearest
// even in) scaleDType. diff's re-quantisation check and QuantizeBlockFP8
// both take it from here.
func scaleFor(amax float32, scaleDType DType) float32 {
	return RoundTo(scaleDType, amax/E4M3MaxFinite)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// QuantizeBlockFP8 quantises a row-major [rows, cols] float32 matrix to
// F8_E4M3 codes with one scale per [bm, bn] block, using the recipe of the
// command contract (FP8Ckpt): per block s = float32(amax) / 448 in
// float32, stored in scaleDType (rounded to nearest even); then
// q = e4m3(w / s_stored) in float32, nearest even, saturating to ±448. A
// block whose stored scale is zero quantises to zero codes. codes has
// rows*cols bytes, scales has ceil(rows/bm)*ceil(cols/bn) entries (already
// rounded to scaleDType). The other recipes: QuantizeBlockFP8Recipe.
func QuantizeBlockFP8(w []float32, rows, cols, bm, bn int64, scaleDType DType, codes []byte, scales []float32) {
	QuantizeBlockFP8Recipe(FP8Ckpt, w, rows, cols, bm, bn, scaleDType, codes, scales)
}

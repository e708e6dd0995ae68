package numfmt

// ScaleFor is the block scale of the recipe for a block whose largest |w|
// is amax: float32(amax) / 448 in float32, stored in (rounded to nearest
// even in) scaleDType. diff's re-quantisation check and QuantizeBlockFP8
// both take it from here.
func ScaleFor(amax float32, scaleDType DType) float32 {
	return RoundTo(scaleDType, amax/E4M3MaxFinite)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// QuantizeBlockFP8 quantises a row-major [rows, cols] float32 matrix to
// F8_E4M3 codes with one scale per [bm, bn] block, using the recipe of the
// command contract: per block s = float32(amax) / 448 in float32, stored in
// scaleDType (rounded to nearest even); then q = e4m3(w / s_stored) in
// float32, nearest even, saturating to ±448. A block whose stored scale is
// zero quantises to zero codes. codes has rows*cols bytes, scales has
// ceil(rows/bm)*ceil(cols/bn) entries (already rounded to scaleDType).
func QuantizeBlockFP8(w []float32, rows, cols, bm, bn int64, scaleDType DType, codes []byte, scales []float32) {
	sRows, sCols := ceilDiv(rows, bm), ceilDiv(cols, bn)
	for bi := int64(0); bi < sRows; bi++ {
		r0, r1 := bi*bm, min((bi+1)*bm, rows)
		for bj := int64(0); bj < sCols; bj++ {
			c0, c1 := bj*bn, min((bj+1)*bn, cols)
			var amax float32
			for r := r0; r < r1; r++ {
				for _, x := range w[r*cols+c0 : r*cols+c1] {
					if x < 0 {
						x = -x
					}
					if x > amax {
						amax = x
					}
				}
			}
			s := ScaleFor(amax, scaleDType)
			scales[bi*sCols+bj] = s
			for r := r0; r < r1; r++ {
				for c := c0; c < c1; c++ {
					if s == 0 {
						codes[r*cols+c] = 0
						continue
					}
					codes[r*cols+c] = EncodeE4M3(w[r*cols+c] / s)
				}
			}
		}
	}
}

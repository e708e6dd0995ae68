package diff

import (
	"bytes"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// requantBlock applies the quantisation recipe of the command contract to
// one block of wide-side values w and compares the result with the FP8
// side's codes and its stored scale for block (bi, bj): it returns how many
// codes differ and whether the scale differs. s = float32(amax) / 448
// rounded to the scale dtype; each code = e4m3(w / s) in float32 (zero
// when s is zero) — the recipe of ckpt.QuantizeBlockFP8.
func requantBlock(q *side, w []float32, codes []byte, bi, bj int64, sRaw []byte) (cnt int64, scaleDiffers bool) {
	var amax float32
	for _, x := range w {
		x = float32(math.Abs(float64(x)))
		if x > amax {
			amax = x
		}
	}
	s := ckpt.RoundTo(q.scaleDType, amax/ckpt.E4M3MaxFinite)
	ses := int64(q.scaleDType.Bits() / 8)
	sRaw = sRaw[:ses]
	_ = ckpt.EncodeFloat32(q.scaleDType, []float32{s}, sRaw)
	gi := bi*q.sCols + bj
	scaleDiffers = !bytes.Equal(sRaw, q.scaleRaw[gi*ses:(gi+1)*ses])
	codes = codes[:len(w)]
	if s == 0 {
		for _, c := range codes {
			if c != 0 {
				cnt++
			}
		}
		return cnt, scaleDiffers
	}
	for i, x := range w {
		if ckpt.EncodeE4M3(x/s) != codes[i] {
			cnt++
		}
	}
	return cnt, scaleDiffers
}

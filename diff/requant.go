package diff

import (
	"bytes"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// encodeE4M3 rounds f to an F8_E4M3 code exactly as ckpt.EncodeE4M3 does
// (nearest even, saturating to ±448, NaN → 0x7f), with integer arithmetic
// on the normal range instead of branches per rounding case. A test checks
// the two agree on every float32 of the ranges that matter.
func encodeE4M3(f float32) byte {
	u := math.Float32bits(f)
	sign := byte(u>>24) & 0x80
	a := u & 0x7fffffff
	switch {
	case a > 0x7f800000: // NaN
		return 0x7f
	case a >= 0x43e00000: // ≥ 448
		return sign | 0x7e
	case a < 0x3c800000: // < 2^-6: subnormal codes, quantum 2^-9
		return sign | byte(math.RoundToEven(float64(math.Float32frombits(a))*512))
	}
	// Round the 23-bit mantissa to 3 bits, nearest even; a carry moves
	// into the exponent. Then rebias the exponent from 127 to 7.
	r := (a + 0x7ffff + (a>>20)&1) >> 20
	return sign | byte(r-120<<3)
}

// requantBlocks applies the quantisation recipe of the command contract to
// the wide-side values w (whole rows [r0, r0+rows) of a [*, cols] matrix,
// r0 a multiple of q.bm) and compares the result with the FP8 side's codes
// qRaw and its stored scales: it returns how many codes differ and how
// many blocks have a differing scale or code. Per block: s = float32(amax)
// / 448 rounded to the scale dtype; each code = e4m3(w / s) in float32
// (zero when s is zero) — the recipe of ckpt.QuantizeBlockFP8.
func requantBlocks(q *side, w []float32, qRaw []byte, r0, rows int64, sRaw []byte) (elems, blocks int64) {
	cols, bm, bn := q.cols, q.bm, q.bn
	ses := int64(q.scaleDType.Bits() / 8)
	sRaw = sRaw[:ses]
	sr0 := r0 / bm
	for bi := int64(0); bi*bm < rows; bi++ {
		ra, rb := bi*bm, min((bi+1)*bm, rows)
		for bj := int64(0); bj < q.sCols; bj++ {
			c0, c1 := bj*bn, min((bj+1)*bn, cols)
			var amax float32
			for r := ra; r < rb; r++ {
				for _, x := range w[r*cols+c0 : r*cols+c1] {
					x = float32(math.Abs(float64(x)))
					if x > amax {
						amax = x
					}
				}
			}
			s := ckpt.RoundTo(q.scaleDType, amax/ckpt.E4M3MaxFinite)
			_ = ckpt.EncodeFloat32(q.scaleDType, []float32{s}, sRaw)
			gi := (sr0+bi)*q.sCols + bj
			bad := !bytes.Equal(sRaw, q.scaleRaw[gi*ses:(gi+1)*ses])
			var cnt int64
			for r := ra; r < rb; r++ {
				ws := w[r*cols+c0 : r*cols+c1]
				cs := qRaw[r*cols+c0 : r*cols+c1]
				cs = cs[:len(ws)]
				if s == 0 {
					for i := range ws {
						if cs[i] != 0 {
							cnt++
						}
					}
					continue
				}
				for i, x := range ws {
					if encodeE4M3(x/s) != cs[i] {
						cnt++
					}
				}
			}
			elems += cnt
			if bad || cnt > 0 {
				blocks++
			}
		}
	}
	return elems, blocks
}

package cache

import (
	"github.com/ckpt-dev/ckpt/ckpt"
)

// e4m3Values returns the float32 value of every F8_E4M3 code.
func e4m3Values() [256]float32 {
	var codes [256]byte
	for i := range codes {
		codes[i] = byte(i)
	}
	var v [256]float32
	_ = ckpt.DecodeFloat32(ckpt.F8E4M3, codes[:], v[:]) // cannot fail: sizes match
	return v
}

// readBand reads source rows [r0, r0+n) into w.raw (raw bytes, for the
// hash) and w.f32 (values). It reports whether the values are already
// bf16-exact, so that a leading bf16 rounding can be skipped:
//
//   - a block-FP8 weight whose every target starts by rounding to bf16
//     (st.roundFirst) is decoded through one 256-entry table per scale
//     block, holding round_bf16(e4m3(code) × scale) — computed exactly as
//     ckpt.Values dequantises (float32 product) followed by the bf16
//     rounding every profile rule starts with — one lookup per value;
//   - BF16 values, and F8 values without a scale, are bf16-exact as read;
//   - anything else goes through ckpt.Values.ReadRows unrounded.
func (b *builder) readBand(st *srcState, r0, n int64, w *worker) (bool, error) {
	v := st.v
	if !(st.roundFirst && v.Dequantized() && v.T.DType == ckpt.F8E4M3) {
		raw, err := v.ReadRows(r0, n, w.raw, w.f32)
		if err != nil {
			return false, err
		}
		w.raw = raw
		return v.BF16Exact(), nil
	}
	cols := v.Cols
	need := n * cols
	if int64(cap(w.raw)) < need {
		w.raw = make([]byte, need)
	}
	w.raw = w.raw[:need]
	if _, err := v.T.ReadAt(w.raw, r0*cols); err != nil {
		return false, err
	}
	sCols := (cols + v.BN - 1) / v.BN
	w.tab = growF(w.tab, int(sCols*256))
	cur := int64(-1)
	for r := int64(0); r < n; r++ {
		if br := (r0 + r) / v.BM; br != cur {
			cur = br
			for blk := int64(0); blk < sCols; blk++ {
				s := v.ScaleAt(r0+r, blk*v.BN)
				t := w.tab[blk*256 : blk*256+256]
				for c := range t {
					t[c] = ckpt.RoundBF16TT(b.e4m3[c] * s)
				}
			}
		}
		row := w.raw[r*cols : (r+1)*cols]
		out := w.f32[r*cols : (r+1)*cols]
		for blk := int64(0); blk < sCols; blk++ {
			lo, hi := blk*v.BN, min((blk+1)*v.BN, cols)
			t := (*[256]float32)(w.tab[blk*256:])
			seg := out[lo:hi]
			for i, c := range row[lo:hi] {
				seg[i] = t[c]
			}
		}
	}
	return true, nil
}

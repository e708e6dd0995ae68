package build

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// band says what readBand produced.
type band struct {
	// bf16: the values are bfloat16 bits in b16, already rounded;
	// otherwise float32 values in worker.f32.
	bf16 bool
	// b16: the bits (worker.b16, or the raw bytes themselves when they are
	// BF16 bits that need no change).
	b16 []uint16
	// rounded: the float32 values are bf16-exact (a leading bf16 rounding
	// is a no-op on them).
	rounded bool
	// codes: the raw F8_E4M3 codes of the band (block-FP8 sources on the
	// bits path), for the targets encoded straight from codes (use.direct).
	codes []byte
	// checked: the decode saw every raw byte and found no NaN or Inf
	// (guard.Check is then skipped; when it found some, runJob counts them
	// exactly with guard.Check).
	checked bool
}

// readBand reads source rows [r0, r0+n) into w.raw (raw bytes, for the
// hash) and into values:
//
//   - a block-FP8 weight whose every target starts by rounding to bf16
//     (st.roundFirst) is decoded to bfloat16 bits (w.b16) through one
//     256-entry table per scale block, holding round_bf16(e4m3(code) ×
//     scale) — computed exactly as ckpt.Values dequantises (float32
//     product) followed by the bf16 rounding every profile rule starts
//     with — one lookup per value;
//   - a BF16 weight whose targets start by rounding is taken as it is,
//     NaN bits included, as torch's .to(bfloat16) leaves a bf16 tensor
//     (the raw bytes themselves on a little-endian host);
//   - anything else goes through ckpt.Values.ReadRows into w.f32, marked
//     rounded when the values are bf16-exact as read.
func (b *builder) readBand(st *srcState, r0, n int64, w *worker) (band, error) {
	v := st.v
	switch st.bitsPath() {
	case numfmt.F8E4M3:
		return b.readFP8Band(v, r0, n, w, st.codesOnly)
	case numfmt.BF16:
		return readBF16Band(v, r0, n, w)
	}
	w.f32 = growF(w.f32, int(n*v.Cols))
	raw, err := v.ReadRows(r0, n, w.own, w.f32)
	if err != nil {
		return band{}, err
	}
	w.raw, w.own = raw, raw
	return band{rounded: v.BF16Exact()}, nil
}

// bitsPath returns the source dtype whose bands readBand decodes straight
// to bfloat16 bits (F8E4M3 or BF16), or "" when they go through float32.
func (st *srcState) bitsPath() numfmt.DType {
	v := st.v
	switch {
	case st.roundFirst && v.Dequantized() && v.T.DType == numfmt.F8E4M3:
		return numfmt.F8E4M3
	case st.roundFirst && !v.Dequantized() && v.T.DType == numfmt.BF16:
		return numfmt.BF16
	}
	return ""
}

// readRaw points w.raw at the raw bytes of rows [r0, r0+n) of v: the
// band read ahead (w.pre), or read now into the worker's own buffer.
func readRaw(v *ckpt.Values, r0, n int64, w *worker) error {
	if p := w.pre; p != nil {
		<-p.done
		if p.err != nil {
			return p.err
		}
		w.raw = p.raw
		return nil
	}
	need := n * v.RowBytes()
	w.own = growB(w.own, int(need))
	w.raw = w.own
	_, err := v.T.ReadAt(w.raw, r0*v.RowBytes())
	return err
}

func (b *builder) readFP8Band(v *ckpt.Values, r0, n int64, w *worker, codesOnly bool) (band, error) {
	if err := readRaw(v, r0, n, w); err != nil {
		return band{}, err
	}
	if codesOnly {
		// Every target takes the codes themselves (use.direct).
		return band{codes: w.raw, checked: !numfmt.HasNonFinite(numfmt.F8E4M3, w.raw)}, nil
	}
	cols := v.Cols
	w.b16 = grow16(w.b16, int(n*cols))
	sCols := (cols + v.BN - 1) / v.BN
	w.tab = grow16(w.tab, int(sCols*256))
	cur := int64(-1)
	nan := false
	for r := int64(0); r < n; r++ {
		if br := (r0 + r) / v.BM; br != cur {
			cur = br
			for blk := int64(0); blk < sCols; blk++ {
				tile.E4M3BF16TableNaN((*[256]uint16)(w.tab[blk*256:]), v.ScaleAt(r0+r, blk*v.BN), b.nan)
			}
		}
		row := w.raw[r*cols : (r+1)*cols]
		out := w.b16[r*cols : (r+1)*cols]
		for blk := int64(0); blk < sCols; blk++ {
			lo, hi := blk*v.BN, min((blk+1)*v.BN, cols)
			nan = numfmt.LookupE4M3(out[lo:hi], row[lo:hi], (*[256]uint16)(w.tab[blk*256:])) || nan
		}
	}
	return band{bf16: true, b16: w.b16, codes: w.raw, checked: !nan}, nil
}

// readBF16Band reads bfloat16 rows as bits, NaN bits kept (NaN and Inf are
// noticed here and counted by the build's guard, nonfinite.go).
func readBF16Band(v *ckpt.Values, r0, n int64, w *worker) (band, error) {
	if err := readRaw(v, r0, n, w); err != nil {
		return band{}, err
	}
	cnt := int(n * v.Cols)
	raw := w.raw[:2*cnt]
	finite := !numfmt.HasNonFinite(numfmt.BF16, raw)
	if littleEndian && finite {
		// The bits as they are: no copy (raw is only read from here on).
		return band{bf16: true, b16: unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(raw))), cnt), checked: true}, nil
	}
	w.b16 = grow16(w.b16, cnt)
	out := w.b16[:cnt]
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return band{bf16: true, b16: out, checked: finite}, nil
}

// littleEndian: the bytes of a uint16 in memory are its little-endian
// encoding (BF16 data can then be used in place).
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// widen writes the float32 values of bfloat16 bits (exact).
func widen(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

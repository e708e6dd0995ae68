package diff

import (
	"bytes"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// side is one tensor of a pair, ready to decode: its dtype, its matrix
// view and, for a block-FP8 weight, its decoded and raw block scales.
type side struct {
	t          *ckpt.Tensor
	dt         ckpt.DType
	esize      int64 // bytes per element
	rows, cols int64
	scale      []float32 // decoded block scales, row-major [sRows, sCols]
	scaleRaw   []byte
	scaleDType ckpt.DType
	bm, bn     int64
	sCols      int64
	// e4m3: the value of every F8_E4M3 code, for the fused decode of a
	// scaled F8_E4M3 side (nil otherwise).
	e4m3 *[256]float32
}

func newSide(c *ckpt.Checkpoint, t *ckpt.Tensor) (*side, error) {
	v, err := c.Values(t)
	if err != nil {
		return nil, err
	}
	s := &side{t: t, dt: t.DType, esize: int64(t.DType.Bits() / 8), rows: v.Rows, cols: v.Cols}
	if !v.Dequantized() {
		return s, nil
	}
	st := v.Scale
	s.scaleRaw = make([]byte, st.NBytes())
	if _, err := st.ReadAt(s.scaleRaw, 0); err != nil {
		return nil, err
	}
	s.scale = make([]float32, st.Numel())
	if err := ckpt.DecodeFloat32(st.DType, s.scaleRaw, s.scale); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", ckpt.Quote(st.Name), err)
	}
	s.scaleDType, s.bm, s.bn, s.sCols = st.DType, v.BM, v.BN, st.Shape[1]
	if s.dt == ckpt.F8E4M3 {
		var codes [256]byte
		for i := range codes {
			codes[i] = byte(i)
		}
		s.e4m3 = new([256]float32)
		if err := ckpt.DecodeFloat32(ckpt.F8E4M3, codes[:], s.e4m3[:]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *side) scaled() bool { return s.scale != nil }

// sameScale reports whether two scaled sides apply the same scales to
// every element: same block size, scale dtype and scale bytes.
func (s *side) sameScale(o *side) bool {
	return s.bm == o.bm && s.bn == o.bn && s.scaleDType == o.scaleDType && bytes.Equal(s.scaleRaw, o.scaleRaw)
}

// decode turns the raw bytes of n = len(dst) elements starting at flat
// element index g into float32 values, applying block scales. A segment of
// a scaled side must not cross a row.
func (s *side) decode(raw []byte, g int64, dst []float32) error {
	if s.e4m3 != nil {
		// A scaled F8_E4M3 side decodes in one pass below: each value is
		// table[code] × scale, the same float32 product as decoding and
		// then scaling.
		if len(raw) < len(dst) {
			return fmt.Errorf("tensor %s: decoding %d F8_E4M3 values: have %d bytes", ckpt.Quote(s.t.Name), len(dst), len(raw))
		}
	} else if err := ckpt.DecodeFloat32(s.dt, raw, dst); err != nil {
		return fmt.Errorf("tensor %s: %w", ckpt.Quote(s.t.Name), err)
	}
	if s.scale == nil {
		return nil
	}
	r, c0 := g/s.cols, g%s.cols
	srow := s.scale[(r/s.bm)*s.sCols:]
	c1 := c0 + int64(len(dst))
	for c := c0; c < c1; {
		blk := c / s.bn
		end := min((blk+1)*s.bn, c1)
		sc := srow[blk]
		seg := dst[c-c0 : end-c0]
		if t := s.e4m3; t != nil {
			for i, code := range raw[c-c0 : end-c0] {
				seg[i] = t[code] * sc
			}
		} else {
			for i := range seg {
				seg[i] *= sc
			}
		}
		c = end
	}
	return nil
}

// decodeRows decodes whole rows (a chunk of a scaled side may span many
// rows), splitting at row boundaries.
func (s *side) decodeRows(raw []byte, g0 int64, dst []float32) error {
	if s.scale == nil {
		return s.decode(raw, g0, dst)
	}
	n := int64(len(dst))
	for off := int64(0); off < n; {
		g := g0 + off
		k := min(n-off, s.cols-g%s.cols)
		if err := s.decode(raw[off*s.esize:(off+k)*s.esize], g, dst[off:off+k]); err != nil {
			return err
		}
		off += k
	}
	return nil
}

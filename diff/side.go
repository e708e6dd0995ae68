package diff

import (
	"bytes"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// side is one tensor of a pair, ready to decode: its dtype, its matrix
// view and, for a block-FP8 weight, its decoded and raw block scales.
type side struct {
	t          *ckpt.Tensor
	dt         numfmt.DType
	esize      int64 // bytes per element
	rows, cols int64
	scaleT     *ckpt.Tensor // the block scale of a block-FP8 weight, else nil
	scale      []float32    // decoded block scales, row-major [sRows, sCols]
	scaleRaw   []byte
	scaleDType numfmt.DType
	bm, bn     int64
	sCols      int64
	// rowBlocks: the scale blocks are whole rows (compressed-tensors
	// per-channel and per-tensor FP8), so that a sample needs no column
	// groups to decode any element with its scale.
	rowBlocks bool
	// e4m3: the value of every F8_E4M3 code, for the fused decode of a
	// scaled F8_E4M3 side (nil otherwise).
	e4m3 *[256]float32
	// recipes are the block-FP8 recipes that store this side's scales,
	// the counting recipe first (requant.go); set for the FP8 side of a
	// requant plan.
	recipes []numfmt.FP8Recipe
	// ct: the scale is a compressed-tensors weight_scale.
	ct bool
}

// sideLayout describes t without reading data: its matrix view and, for a
// block-FP8 weight, its scale tensor and block size (the scale is loaded
// by setScale).
func sideLayout(c *ckpt.Checkpoint, t *ckpt.Tensor) (*side, error) {
	if !t.DType.IsFloat() {
		return nil, fmt.Errorf("tensor %s of %s: dtype %s cannot be read as float values", ckpt.Quote(t.Name), t.File.Location, t.DType)
	}
	q, err := c.QuantScheme(t)
	if err != nil {
		return nil, err
	}
	s := &side{t: t, dt: t.DType, esize: int64(t.DType.Bits() / 8)}
	s.rows, s.cols = ckpt.Matrix(t.Shape)
	st := q.Scale
	if st != nil {
		// A 3-D stack of block-scaled matrices (fused experts [E, R, C],
		// R whole blocks) is one block weight of E·R rows of C, as its
		// scale's grid is (ckpt.NewQuantValues).
		s.rows, s.cols = ckpt.StackedMatrix(t.Shape)
	}
	switch q.Scheme {
	case quant.Plain:
	case quant.BlockFP8, quant.FP8PerBlock, quant.FP8Channel:
		// a channel's [N, 1] scale is the block scale of [1, K] blocks
		s.scaleT, s.scaleDType, s.bm, s.bn, s.sCols = st, st.DType, q.BM, q.BN, (s.cols+q.BN-1)/q.BN
		s.rowBlocks = q.Scheme == quant.FP8Channel
		s.ct = q.Scheme != quant.BlockFP8
	case quant.FP8Tensor:
		// one scale for the whole [N, K] block (so that the recipe's
		// requantisation takes the tensor's amax)
		s.scaleT, s.scaleDType, s.bm, s.bn, s.sCols = st, st.DType, max(s.rows, 1), max(s.cols, 1), 1
		s.rowBlocks, s.ct = true, true
	default:
		return nil, fmt.Errorf("tensor %s of %s: internal error: scheme %s is read through its values", ckpt.Quote(t.Name), t.File.Location, q.Scheme)
	}
	if st != nil && s.dt == numfmt.F8E4M3 {
		s.e4m3 = e4m3F32
	}
	return s, nil
}

// setScale decodes the raw bytes of the side's block scale.
func (s *side) setScale(raw []byte) error {
	st := s.scaleT
	if int64(len(raw)) != int64(st.NBytes()) {
		return fmt.Errorf("tensor %s: internal error: %d scale bytes for %d", ckpt.Quote(st.Name), len(raw), st.NBytes())
	}
	s.scaleRaw = raw
	s.scale = make([]float32, st.Numel())
	if err := numfmt.DecodeFloat32(st.DType, raw, s.scale); err != nil {
		return fmt.Errorf("tensor %s: %w", ckpt.Quote(st.Name), err)
	}
	return nil
}

func (s *side) scaled() bool { return s.scaleT != nil }

// sameScale reports whether two scaled sides apply the same scales to
// every element: same block size, scale dtype and scale bytes.
func (s *side) sameScale(o *side) bool {
	return s.bm == o.bm && s.bn == o.bn && s.scaleDType == o.scaleDType && bytes.Equal(s.scaleRaw, o.scaleRaw)
}

// decode turns the raw bytes of n = len(dst) elements starting at flat
// element index g into float32 values, applying block scales
// (numfmt.BlockScales.Dequantize; a scaled F8_E4M3 side decodes in one
// pass, table[code] × scale, the same float32 product as decoding and then
// scaling).
func (s *side) decode(raw []byte, g int64, dst []float32) error {
	var err error
	if s.scale == nil {
		err = numfmt.DecodeFloat32(s.dt, raw, dst)
	} else {
		b := numfmt.BlockScales{Cols: s.cols, BM: s.bm, BN: s.bn, SCols: s.sCols, Scale: s.scale, FusedE4M3: s.e4m3 != nil}
		err = b.Dequantize(s.dt, raw, g, dst)
	}
	if err != nil {
		return fmt.Errorf("tensor %s: %w", ckpt.Quote(s.t.Name), err)
	}
	return nil
}

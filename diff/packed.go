package diff

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Weights of packed E2M1 codes (MXFP4, NVFP4) are compared by their
// dequantised values: diff sees such a weight as a virtual F32 tensor of
// its values' name and shape (an MXFP4 X_blocks [..., G, 16] as X
// [..., G*32], an NVFP4 [N, K/2] as [N, K]) whose bytes are decoded on
// read by ckpt.Values (numfmt.DequantMXFP4 / DequantNVFP4), so that the
// engine compares them with a bf16 fine-tune, or with another packed
// checkpoint, value by value. Their scale companions stay rows of their
// own, as block FP8's weight_scale_inv do.

// packedWeight returns the virtual tensor of t's values and its reader
// when t is a packed weight of c; ok is false for every other tensor. A
// packed weight whose companions QuantScheme refuses is an error. It
// reads no data.
func packedWeight(c *ckpt.Checkpoint, t *ckpt.Tensor) (vt *ckpt.Tensor, r *packedSrc, ok bool, err error) {
	if t.DType != ckpt.U8 || !c.IsQuantized(t) {
		return nil, nil, false, nil
	}
	q, err := c.QuantScheme(t)
	if err != nil {
		return nil, nil, false, err
	}
	if q.Scheme != ckpt.MXFP4 && q.Scheme != ckpt.NVFP4 {
		return nil, nil, false, nil
	}
	vt = &ckpt.Tensor{TensorInfo: ckpt.TensorInfo{Name: q.Name, DType: ckpt.F32, Shape: q.Shape}, File: t.File}
	vt.End = 4 * vt.Numel()
	return vt, &packedSrc{t: t, q: q}, true, nil
}

// valueName is the name diff lists t under: an MXFP4 X_blocks is X.
func valueName(c *ckpt.Checkpoint, t *ckpt.Tensor) string {
	if t.DType != ckpt.U8 || !strings.HasSuffix(t.Name, "_blocks") || !c.IsQuantized(t) {
		return t.Name
	}
	if q, err := c.QuantScheme(t); err == nil && q.Scheme == ckpt.MXFP4 {
		return q.Name
	}
	return t.Name
}

// lookupValues finds the tensor listed as name (valueName): a tensor of
// that name, else an MXFP4 name_blocks.
func lookupValues(c *ckpt.Checkpoint, name string) (*ckpt.Tensor, bool) {
	if t, ok := c.Lookup(name); ok {
		return t, true
	}
	if t, ok := c.Lookup(name + "_blocks"); ok && valueName(c, t) == name {
		return t, true
	}
	return nil, false
}

// packedSrc serves the little-endian F32 bytes of a packed weight's
// values, decoding the rows that hold them (safe for concurrent use).
// Its scales are read on the first read (ckpt.NewQuantValues).
type packedSrc struct {
	t    *ckpt.Tensor
	q    ckpt.Quant
	once sync.Once
	v    *ckpt.Values
	err  error
}

func (s *packedSrc) ReadAt(p []byte, off int64) (int, error) {
	s.once.Do(func() { s.v, s.err = ckpt.NewQuantValues(s.t, s.q) })
	if s.err != nil {
		return 0, s.err
	}
	v := s.v
	if off%4 != 0 || len(p)%4 != 0 || off < 0 || off/4+int64(len(p)/4) > v.Rows*v.Cols {
		return 0, fmt.Errorf("tensor %s: internal error: values [%d, %d) bytes outside its %d values", ckpt.Quote(v.T.Name), off, off+int64(len(p)), v.Rows*v.Cols)
	}
	e0, n := off/4, int64(len(p)/4)
	if n == 0 {
		return 0, nil
	}
	r0, r1 := e0/v.Cols, (e0+n+v.Cols-1)/v.Cols
	vals := make([]float32, (r1-r0)*v.Cols)
	if _, err := v.ReadRows(r0, r1-r0, nil, vals); err != nil {
		return 0, err
	}
	for i, x := range vals[e0-r0*v.Cols : e0-r0*v.Cols+n] {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(x))
	}
	return len(p), nil
}

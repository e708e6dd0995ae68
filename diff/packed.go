package diff

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
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
	if t.DType != numfmt.U8 || !c.IsQuantized(t) {
		return nil, nil, false, nil
	}
	q, err := c.QuantScheme(t)
	if err != nil {
		return nil, nil, false, err
	}
	if q.Scheme != quant.MXFP4 && q.Scheme != quant.NVFP4 {
		return nil, nil, false, nil
	}
	vt = &ckpt.Tensor{TensorInfo: ckpt.TensorInfo{Name: q.Name, DType: numfmt.F32, Shape: q.Shape}, File: t.File}
	vt.End = 4 * vt.Numel()
	return vt, &packedSrc{t: t, q: q}, true, nil
}

// valueName is the name diff lists t under: an MXFP4 X_blocks is X.
func valueName(c *ckpt.Checkpoint, t *ckpt.Tensor) string {
	if t.DType != numfmt.U8 || !strings.HasSuffix(t.Name, "_blocks") || !c.IsQuantized(t) {
		return t.Name
	}
	if q, err := c.QuantScheme(t); err == nil && q.Scheme == quant.MXFP4 {
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
// values (safe for concurrent use): a read of values [e0, e1) reads the
// codes and the scale codes of the groups that hold them only and
// dequantises them (ckpt.DequantPacked, as ckpt.Values.ReadRows does), so
// that its memory is that of the read, whatever the size of the weight or
// of its scale. NVFP4's weight_scale_2 is read on the first read.
type packedSrc struct {
	t      *ckpt.Tensor
	q      ckpt.Quant
	once   sync.Once
	global float32
	err    error
}

// load checks the size of the scale (as ckpt.NewQuantValues does) and
// reads NVFP4's global scale.
func (s *packedSrc) load() error {
	q := s.q
	rows, cols := ckpt.Matrix(q.Shape)
	g := s.group()
	if g <= 0 || cols%g != 0 || int64(q.Scale.NBytes()) != rows*cols/g {
		return fmt.Errorf("tensor %s of %s: %d scale bytes for %d×%d values in groups of %d",
			ckpt.Quote(q.Scale.Name), q.Scale.File.Location, q.Scale.NBytes(), rows, cols, g)
	}
	if q.Global == nil {
		return nil
	}
	raw := make([]byte, q.Global.NBytes())
	if _, err := q.Global.ReadAt(raw, 0); err != nil {
		return err
	}
	var err error
	s.global, err = q.GlobalScale(raw)
	return err
}

func (s *packedSrc) ReadAt(p []byte, off int64) (int, error) {
	s.once.Do(func() { s.err = s.load() })
	if s.err != nil {
		return 0, s.err
	}
	q := s.q
	numel := int64(q.Scale.NBytes()) * s.group()
	if off%4 != 0 || len(p)%4 != 0 || off < 0 || off/4+int64(len(p)/4) > numel {
		return 0, fmt.Errorf("tensor %s: internal error: values [%d, %d) bytes outside its %d values", ckpt.Quote(q.Name), off, off+int64(len(p)), numel)
	}
	if len(p) == 0 {
		return 0, nil
	}
	g := s.group()
	e0, e1 := off/4, off/4+int64(len(p)/4)
	g0, g1 := e0/g, (e1+g-1)/g
	codes := make([]byte, (g1-g0)*g/2)
	if _, err := s.t.ReadAt(codes, g0*g/2); err != nil {
		return 0, err
	}
	scales := make([]byte, g1-g0)
	if _, err := q.Scale.ReadAt(scales, g0); err != nil {
		return 0, err
	}
	vals := make([]float32, (g1-g0)*g)
	if err := ckpt.DequantPacked(q.Scheme, vals, codes, scales, s.global); err != nil {
		return 0, fmt.Errorf("tensor %s: %w", ckpt.Quote(q.Name), err)
	}
	for i, x := range vals[e0-g0*g : e1-g0*g] {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(x))
	}
	return len(p), nil
}

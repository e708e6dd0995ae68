package ckpt

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// ScaleSuffix is appended to an FP8 weight's name to name its block scale.
const ScaleSuffix = "_scale_inv"

// ScaleName returns the name of the block-scale companion of a weight
// ("x.weight" → "x.weight_scale_inv").
func ScaleName(weight string) string { return weight + ScaleSuffix }

// Values streams a tensor's values as float32, row block by row block. An
// F8_E4M3 weight with a block scale is dequantised (code × scale). The
// tensor is seen as a matrix: Rows = shape[0] (1 for rank 0), Cols = the
// product of the other dimensions. Values is safe for concurrent use.
type Values struct {
	T      *Tensor
	Rows   int64
	Cols   int64
	Scale  *Tensor            // nil unless dequantising
	BM, BN int64              // block size when Scale is set (0 for MXFP4, NVFP4)
	blocks numfmt.BlockScales // the decoded scale, row-major [ceil(R/BM), ceil(C/BN)]
	// Scheme is how the values are made (Plain unless dequantising).
	Scheme quant.Scheme
	// packed E2M1 (MXFP4, NVFP4): the raw scale codes, one per group of
	// elements in row-major order, and NVFP4's global scale.
	codes  []byte
	group  int64
	global float32
	// Global is an NVFP4 weight's weight_scale_2 (nil otherwise).
	Global *Tensor
}

// Matrix returns the rows×cols view of a tensor's shape.
func Matrix(shape []int64) (rows, cols int64) {
	if len(shape) == 0 {
		return 1, 1
	}
	rows, cols = shape[0], 1
	for _, d := range shape[1:] {
		cols *= d
	}
	if rows == 0 {
		cols = 0
	}
	return rows, cols
}

// StackedMatrix returns the rows×cols view of a shape that keeps the last
// dimension as the columns: the product of the others rows (a stack of
// matrices, e.g. fused experts [E, out, in], is E·out rows of in). Ranks 0
// to 2 are Matrix's.
func StackedMatrix(shape []int64) (rows, cols int64) {
	if len(shape) < 3 {
		return Matrix(shape)
	}
	rows, cols = 1, shape[len(shape)-1]
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	return rows, cols
}

// Stacked returns v viewed as StackedMatrix: the same values, in the same
// order, as rows of the last dimension (a block scale keeps applying to
// the same elements).
func (v *Values) Stacked() *Values {
	w := *v
	w.Rows, w.Cols = StackedMatrix(v.T.Shape)
	if v.Packed() || w.Rows*w.Cols != v.Rows*v.Cols {
		return v
	}
	return &w
}

// newValues prepares to read t as float32. If scale is non-nil, t must be a
// 2-D F8_E4M3 tensor (or a 3-D stack of them, BlockScaleShape) and scale
// its [ceil(R/bm), ceil(C/bn)] block scale
// (F32, BF16, F16, or F8_E8M0 as transformers writes it for scale_fmt
// "ue8m0": 2^(e-127), 0xFF NaN); the scale is read whole (it is small).
func newValues(t *Tensor, scale *Tensor, bm, bn int64) (*Values, error) {
	if !t.DType.IsFloat() {
		return nil, fmt.Errorf("tensor %s of %s: dtype %s cannot be read as float values", Quote(t.Name), t.File.Location, t.DType)
	}
	v := &Values{T: t}
	v.Rows, v.Cols = Matrix(t.Shape)
	if scale == nil {
		return v, nil
	}
	if err := checkBlockScale(t, scale, bm, bn); err != nil {
		return nil, err
	}
	// The scale's grid over the weight as a 2-D block weight: a 3-D stack
	// [E, R, C] (R a multiple of bm) is one of E·R rows.
	rows, cols := StackedMatrix(t.Shape)
	want := []int64{ceilDiv(rows, bm), ceilDiv(cols, bn)}
	raw := make([]byte, scale.NBytes())
	if _, err := scale.ReadAt(raw, 0); err != nil {
		return nil, err
	}
	dec := make([]float32, want[0]*want[1])
	if err := numfmt.DecodeFloat32(scale.DType, raw, dec); err != nil {
		return nil, err
	}
	v.Scale, v.BM, v.BN = scale, bm, bn
	v.blocks = numfmt.BlockScales{Cols: cols, BM: bm, BN: bn, SCols: want[1], Scale: dec}
	return v, nil
}

// BlockScaleShape is the shape of the [bm, bn] block scale of a block-FP8
// weight of shape w: [ceil(R/bm), ceil(C/bn)] for a 2-D [R, C], and for a
// 3-D stack of them (fused MoE experts [E, R, C], each expert with its own
// block grid, as transformers' FP8 experts and tt-metal's
// weight_mapping.load_qwen36_state_dict_fp8 dequantise them) [E,
// ceil(R/bm), ceil(C/bn)]. ok is false for other ranks.
func BlockScaleShape(w []int64, bm, bn int64) (shape []int64, ok bool) {
	switch len(w) {
	case 2:
		return []int64{ceilDiv(w[0], bm), ceilDiv(w[1], bn)}, true
	case 3:
		return []int64{w[0], ceilDiv(w[1], bm), ceilDiv(w[2], bn)}, true
	}
	return nil, false
}

// checkBlockScale checks that scale can be the [bm, bn] block scale of the
// block-FP8 weight t: t is 2-D, the scale has shape [ceil(R/bm), ceil(C/bn)]
// and a float dtype a scale may have.
func checkBlockScale(t, scale *Tensor, bm, bn int64) error {
	if bm <= 0 || bn <= 0 {
		return fmt.Errorf("tensor %s: invalid block size [%d, %d]", Quote(t.Name), bm, bn)
	}
	want, ok := BlockScaleShape(t.Shape, bm, bn)
	if !ok {
		return fmt.Errorf("tensor %s of %s: block-FP8 weight must be 2-D (or a 3-D stack of experts), has shape %v", Quote(t.Name), t.File.Location, t.Shape)
	}
	if len(t.Shape) == 3 && t.Shape[1]%bm != 0 {
		// Each expert's block grid starts at its first row only when its
		// rows are whole blocks (tt-metal's FP8 loader needs both dims
		// multiples of 128).
		return fmt.Errorf("tensor %s of %s: a 3-D block-FP8 stack needs rows per expert (%d) that are whole %d-row blocks",
			Quote(t.Name), t.File.Location, t.Shape[1], bm)
	}
	if !slices.Equal(scale.Shape, want) {
		return fmt.Errorf("tensor %s of %s: scale shape is %v, expected %v for shape %v and block [%d, %d]",
			Quote(scale.Name), scale.File.Location, scale.Shape, want, t.Shape, bm, bn)
	}
	if !IsBlockScaleDType(scale.DType) {
		return fmt.Errorf("tensor %s of %s: scale dtype is %s, expected F32, BF16, F16 or F8_E8M0", Quote(scale.Name), scale.File.Location, scale.DType)
	}
	return nil
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// IsBlockScaleDType reports whether dt is a dtype a block-FP8
// weight_scale_inv may have: F32, BF16, F16, or F8_E8M0 (transformers'
// scale_fmt "ue8m0", huggingface/transformers:src/transformers/
// integrations/finegrained_fp8.py@v5.23.0 FP8Linear and Fp8Quantize: a
// power of two 2^(e-127), dequantised as code·2^(e-127) in float32).
func IsBlockScaleDType(dt numfmt.DType) bool {
	return dt == numfmt.F32 || dt == numfmt.BF16 || dt == numfmt.F16 || dt == numfmt.F8E8M0
}

// BlockScale returns the weight_scale_inv companion of t and the block
// size [bm, bn] when t is a block-FP8 weight, or a nil scale when its
// values are the stored values, checked as Values checks them but without
// reading any data (for callers that fetch the scale bytes themselves). It
// is QuantScheme for Plain and BlockFP8: it fails as QuantScheme does for
// a quantised weight whose scale is missing or not understood, and with
// *UnknownScaleError for a weight of another scheme, whose reason names
// the option that reads it by w ("DType", of extract's PlanOptions).
func (c *Checkpoint) BlockScale(t *Tensor, w Words) (scale *Tensor, bm, bn int64, err error) {
	q, err := c.QuantScheme(t)
	if err != nil {
		return nil, 0, 0, err
	}
	switch q.Scheme {
	case quant.Plain:
		return nil, 0, 0, nil
	case quant.BlockFP8:
		return q.Scale, q.BM, q.BN, nil
	}
	// The other schemes are read by Values (extract, diff); the callers
	// of BlockScale (map, cache build) lay out block FP8 only.
	return nil, 0, 0, &UnknownScaleError{Tensor: t.Name, File: t.File.Location, DType: t.DType, Companions: q.Companions,
		Reason: fmt.Sprintf("%s is read by extract %s and diff, not laid out by map and cache build", quant.SpecOf(q.Scheme).Title, w.Of("DType"))}
}

// Values prepares to read t as float32 by QuantScheme: a block-FP8 weight
// is dequantised with its weight_scale_inv; a quantised weight whose scale
// is missing or of another scheme is refused (*MissingScaleError,
// *UnknownScaleError) rather than read from its codes alone.
func (c *Checkpoint) Values(t *Tensor) (*Values, error) {
	q, err := c.QuantScheme(t)
	if err != nil {
		return nil, err
	}
	return NewQuantValues(t, q)
}

// NewQuantValues prepares to read t as float32 under q (QuantScheme of t),
// the one reader of every scheme: Plain and BlockFP8 as newValues; the
// compressed-tensors FP8 schemes through the same block dequantiser
// (numfmt.BlockScales: a tensor's scale repeated per row, a channel's
// [N, 1] as [1, K] blocks, block_structure blocks); MXFP4 and NVFP4
// through numfmt.DequantMXFP4 and numfmt.DequantNVFP4. The scales are read
// whole (they are small).
func NewQuantValues(t *Tensor, q Quant) (*Values, error) {
	switch q.Scheme {
	case quant.Plain, "":
		return newValues(t, nil, 0, 0)
	case quant.BlockFP8:
		return newValues(t, q.Scale, q.BM, q.BN)
	}
	v := &Values{T: t, Scale: q.Scale, Scheme: q.Scheme}
	v.Rows, v.Cols = Matrix(q.Shape)
	raw := make([]byte, q.Scale.NBytes())
	if _, err := q.Scale.ReadAt(raw, 0); err != nil {
		return nil, err
	}
	switch q.Scheme {
	case quant.MXFP4, quant.NVFP4:
		v.codes, v.group = raw, PackedGroup(q.Scheme)
		if q.Scheme == quant.NVFP4 {
			v.Global = q.Global
			g := make([]byte, q.Global.NBytes())
			if _, err := q.Global.ReadAt(g, 0); err != nil {
				return nil, err
			}
			var err error
			if v.global, err = q.GlobalScale(g); err != nil {
				return nil, err
			}
		}
		if v.Cols%v.group != 0 || int64(len(raw)) != v.Rows*v.Cols/v.group {
			return nil, fmt.Errorf("tensor %s of %s: %d scale bytes for %d×%d values in groups of %d",
				Quote(q.Scale.Name), q.Scale.File.Location, len(raw), v.Rows, v.Cols, v.group)
		}
		return v, nil
	case quant.FP8Tensor, quant.FP8Channel, quant.FP8PerBlock:
	default:
		return nil, fmt.Errorf("tensor %s: internal error: no reader for scheme %s", Quote(t.Name), q.Scheme)
	}
	dec := make([]float32, q.Scale.Numel())
	if err := numfmt.DecodeFloat32(q.Scale.DType, raw, dec); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", Quote(q.Scale.Name), err)
	}
	if q.Scheme == quant.FP8Tensor {
		if len(dec) != 1 {
			return nil, fmt.Errorf("tensor %s of %s: a per-tensor scale has %d values", Quote(q.Scale.Name), q.Scale.File.Location, len(dec))
		}
		rep := make([]float32, max(v.Rows, 1))
		for i := range rep {
			rep[i] = dec[0]
		}
		dec = rep
	}
	v.BM, v.BN = q.BM, q.BN
	sRows, sCols := ceilDiv(v.Rows, v.BM), ceilDiv(v.Cols, v.BN)
	if int64(len(dec)) < sRows*sCols {
		return nil, fmt.Errorf("tensor %s of %s: %d scales for %d×%d blocks", Quote(q.Scale.Name), q.Scale.File.Location, len(dec), sRows, sCols)
	}
	v.blocks = numfmt.BlockScales{Cols: v.Cols, BM: v.BM, BN: v.BN, SCols: sCols, Scale: dec}
	return v, nil
}

// PackedGroup is the number of values one scale code of a packed E2M1
// scheme covers (MXFP4 32, NVFP4 16; 0 for every other scheme). The
// groups are consecutive in the row-major order of the values.
func PackedGroup(s quant.Scheme) int64 {
	switch s {
	case quant.MXFP4:
		return numfmt.MXFP4BlockSize
	case quant.NVFP4:
		return numfmt.NVFP4BlockSize
	}
	return 0
}

// DequantPacked dequantises whole groups (PackedGroup) of the values of a
// packed E2M1 weight of scheme s (MXFP4, NVFP4) from any group boundary:
// packed holds len(dst)/2 bytes of codes, scales their groups' scale
// codes, global an NVFP4 weight's weight_scale_2 (GlobalScale; unused by
// MXFP4). It is the one dequantiser of both: Values.ReadRows and a sampled
// diff, which reads only the groups it compares, call it
// (numfmt.DequantMXFP4, numfmt.DequantNVFP4).
func DequantPacked(s quant.Scheme, dst []float32, packed, scales []byte, global float32) error {
	switch s {
	case quant.MXFP4:
		return numfmt.DequantMXFP4(dst, packed, scales)
	case quant.NVFP4:
		// the groups of 16 are consecutive: any run of them is one row
		return numfmt.DequantNVFP4(dst, packed, scales, global, 1, len(dst))
	}
	return fmt.Errorf("internal error: scheme %s has no packed codes", s)
}

// GlobalScale decodes the raw bytes of q.Global, an NVFP4 weight's
// weight_scale_2 (one F32 value).
func (q Quant) GlobalScale(raw []byte) (float32, error) {
	dec := make([]float32, 1)
	if err := numfmt.DecodeFloat32(q.Global.DType, raw, dec); err != nil {
		return 0, fmt.Errorf("tensor %s: %w", Quote(q.Global.Name), err)
	}
	return dec[0], nil
}

// Packed reports whether the values are made from packed E2M1 codes
// (MXFP4, NVFP4): the stored bytes are not one element each.
func (v *Values) Packed() bool { return v.group > 0 }

// Dequantized reports whether values are multiplied by a block scale.
func (v *Values) Dequantized() bool { return v.Scale != nil }

// BF16Exact reports whether the values read are the stored values of a
// tensor whose dtype bf16 holds exactly (BF16, or an F8 format without a
// block scale), so that rounding them to bf16 changes nothing.
func (v *Values) BF16Exact() bool {
	dt := v.T.DType
	return !v.Dequantized() && (dt == numfmt.BF16 || dt == numfmt.F8E4M3 || dt == numfmt.F8E5M2)
}

// RowBytes is the byte size of one row of the raw tensor.
func (v *Values) RowBytes() int64 {
	if v.Packed() {
		return v.Cols / 2
	}
	return v.Cols * int64(v.T.DType.Bits()) / 8
}

// ReadRows decodes rows [r0, r0+n) into dst (len ≥ n*Cols), using raw as the
// read buffer (len ≥ n*RowBytes; allocated when too small). It returns the
// raw bytes read, so that callers can also compare or hash them.
func (v *Values) ReadRows(r0, n int64, raw []byte, dst []float32) ([]byte, error) {
	if r0 < 0 || n < 0 || r0+n > v.Rows {
		return nil, fmt.Errorf("tensor %s: rows [%d, %d) out of range (%d rows)", Quote(v.T.Name), r0, r0+n, v.Rows)
	}
	need := n * v.RowBytes()
	if int64(cap(raw)) < need {
		raw = make([]byte, need)
	}
	raw = raw[:need]
	if _, err := v.T.ReadAt(raw, r0*v.RowBytes()); err != nil {
		return nil, err
	}
	cnt := n * v.Cols
	if int64(cap(dst)) < cnt {
		return nil, fmt.Errorf("tensor %s: destination holds %d values, rows [%d, %d) need %d", Quote(v.T.Name), len(dst), r0, r0+n, cnt)
	}
	dst = dst[:cnt]
	var err error
	switch {
	case v.Packed():
		g0 := r0 * v.Cols / v.group
		err = DequantPacked(v.Scheme, dst, raw, v.codes[g0:g0+cnt/v.group], v.global)
	case v.Scale != nil:
		err = v.blocks.Dequantize(v.T.DType, raw, r0*v.Cols, dst)
	default:
		err = numfmt.DecodeFloat32(v.T.DType, raw, dst)
	}
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", Quote(v.T.Name), err)
	}
	return raw, nil
}

// scaleNaN reports whether a packed weight's scale code is NaN: E8M0's
// 0xff (MXFP4), F8_E4M3's 0x7f/0xff (NVFP4).
func (v *Values) scaleNaN(c byte) bool {
	if v.Scheme == quant.MXFP4 {
		return c == 0xff
	}
	return c&0x7f == 0x7f
}

// NonFiniteScaled counts the values of rows [r0, r0+n) of a packed E2M1
// weight (MXFP4, NVFP4) whose scale is not finite (a NaN scale code, a NaN
// or infinite NVFP4 global scale): those values are not finite because
// their scale is not, not because the product overflows. It is 0 for
// every other weight and out-of-range rows.
func (v *Values) NonFiniteScaled(r0, n int64) int64 {
	if !v.Packed() || r0 < 0 || n <= 0 || r0+n > v.Rows {
		return 0
	}
	g0, g1 := r0*v.Cols/v.group, (r0+n)*v.Cols/v.group
	if v.Scheme == quant.NVFP4 && (math.IsNaN(float64(v.global)) || math.IsInf(float64(v.global), 0)) {
		return (g1 - g0) * v.group
	}
	var bad int64
	for _, c := range v.codes[g0:g1] {
		if v.scaleNaN(c) {
			bad++
		}
	}
	return bad * v.group
}

// NumValues is the number of values (Rows × Cols): for a packed E2M1
// weight, twice its stored elements.
func (v *Values) NumValues() int64 { return v.Rows * v.Cols }

// Blocks returns the decoded block scales (nil unless dequantising).
func (v *Values) Blocks() *numfmt.BlockScales {
	if v.Scale == nil || v.blocks.Scale == nil {
		return nil
	}
	return &v.blocks
}

// ScaleAt returns the block scale for element (i, j).
func (v *Values) ScaleAt(i, j int64) float32 { return v.blocks.At(i, j) }

// ChunkRows is how many rows to read at a time so that one chunk holds
// about maxBytes of float32 values, rounded down to whole scale blocks when
// dequantising (at least one row, or one block).
func (v *Values) ChunkRows(maxBytes int64) int64 {
	if v.Cols == 0 {
		return max(v.Rows, 1)
	}
	rows := max(maxBytes/(v.Cols*4), 1)
	if v.BM > 0 {
		rows = max(rows/v.BM, 1) * v.BM
	}
	return min(rows, max(v.Rows, 1))
}

// IsBookkeeping reports whether a tensor name is quantisation bookkeeping
// (scales, zero points and the like) rather than a model parameter, by its
// last dotted segment, as the Hugging Face Hub's parameter count does.
func IsBookkeeping(name string) bool {
	last := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		last = name[i+1:]
	}
	switch last {
	case "weight_scale", "weight_scale_inv", "weight_scale_2", "weight_global_scale", "weight_zero_point",
		"input_scale", "input_global_scale", "input_zero_point", "zero_point", "weight_shape", "weight_g_idx":
		return true
	}
	return false
}

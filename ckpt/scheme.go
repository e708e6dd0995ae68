package ckpt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// Quant is how one tensor's values are read: its scheme and, for a scaled
// scheme, its scale tensor and block size.
type Quant struct {
	Scheme quant.Scheme
	Scale  *Tensor // the scale companion (weight_scale_inv, weight_scale, X_scales), else nil
	BM, BN int64   // the block size (BlockFP8, FP8PerBlock; FP8Channel [1, K])
	// Global is an NVFP4 weight's weight_scale_2, else nil.
	Global *Tensor
	// Name and Shape are those of the weight's values: X [..., G*32] for
	// an MXFP4 X_blocks, [N, K] for an NVFP4 [N, K/2]; else the tensor's.
	Name  string
	Shape []int64
	// Companions are the tensors the weight's values consume (its scales)
	// and those that go with it (an input_scale): not weights themselves.
	Companions []*Tensor
}

// ErrScale is matched (with errors.Is) by *MissingScaleError and
// *UnknownScaleError: a quantised weight whose values cannot be made
// because its scale is absent or of a scheme this package does not read.
var ErrScale = errors.New("quantised weight without a usable scale")

// MissingScaleError says a quantised weight has no scale companion at
// all: its stored codes alone are not its values.
type MissingScaleError struct {
	Tensor string
	File   string // location of the file that holds it
	DType  numfmt.DType
	Want   string // the companion the weight needs (<name>_scale_inv)
	// Unlisted is the shard that stores Want although the index's
	// weight_map does not list it ("" when no shard stores it).
	Unlisted string
}

// Error is the message of the MissingScaleError.
func (e *MissingScaleError) Error() string {
	s := fmt.Sprintf("tensor %s (%s) of %s has no scale (no %s): its codes alone are not its values; refusing to read it",
		Quote(e.Tensor), e.DType, e.File, Quote(e.Want))
	if e.Unlisted != "" {
		s += fmt.Sprintf(" (%s is stored in %s but not listed in the index's weight_map)", Quote(e.Want), e.Unlisted)
	}
	return s
}

// Is makes errors.Is(err, ErrScale) true.
func (e *MissingScaleError) Is(target error) bool { return target == ErrScale }

// UnknownScaleError says a quantised weight has scale companions, but not
// as a scheme QuantScheme supports (quant.Spec; or a companion of the
// wrong dtype or shape): dequantising it would need a scheme this package
// does not know.
type UnknownScaleError struct {
	Tensor     string
	File       string
	DType      numfmt.DType
	Companions []*Tensor // the companions found (weight_scale, input_scale, ...)
	Reason     string    // why they are not understood
}

// Error is the message of the UnknownScaleError.
func (e *UnknownScaleError) Error() string {
	parts := make([]string, len(e.Companions))
	for i, c := range e.Companions {
		parts[i] = fmt.Sprintf("%s (%s %v)", Quote(c.Name), c.DType, c.Shape)
	}
	what := "scale companion"
	if len(parts) > 1 {
		what += "s"
	}
	return fmt.Sprintf("tensor %s (%s) of %s has %s %s: %s; refusing to read it (ckpt dequantises block FP8 with weight_scale_inv, and MXFP4, NVFP4 and "+
		"compressed-tensors FP8 with the companions their config declares)",
		Quote(e.Tensor), e.DType, e.File, what, strings.Join(parts, ", "), e.Reason)
}

// Is makes errors.Is(err, ErrScale) true.
func (e *UnknownScaleError) Is(target error) bool { return target == ErrScale }

// companionSuffixes follow a weight's own name (x.weight → x.weight_scale).
var companionSuffixes = []string{ScaleSuffix, "_scale", "_scale_2", "_global_scale", "_zero_point", "_scales", "_shape", "_g_idx"}

// moduleCompanions follow the weight's module (x.weight → x.input_scale).
var moduleCompanions = []string{"weight_scale_inv", "weight_scale", "weight_scale_2", "weight_global_scale", "weight_zero_point",
	"weight_shape", "weight_g_idx", "input_scale", "input_global_scale", "input_zero_point"}

// activationOnly are companions that concern a layer's input, not the
// weight's values: they do not stop a weight from being read.
func activationOnly(name string) bool {
	last := name[strings.LastIndexByte(name, '.')+1:]
	return strings.HasPrefix(last, "input_")
}

// ScaleCompanions returns the quantisation bookkeeping tensors that belong
// to the tensor t, by name: <name>_scale_inv, <name>_scale, ... and, for
// <module>.weight or <module>.weight_packed, <module>.weight_scale,
// <module>.input_scale and the like; for an MXFP4 <x>_blocks, <x>_scales.
// They are returned in that order, each once.
func (c *Checkpoint) ScaleCompanions(t *Tensor) []*Tensor {
	var out []*Tensor
	seen := map[string]bool{t.Name: true}
	add := func(name string) {
		if seen[name] {
			return
		}
		seen[name] = true
		if s, ok := c.Lookup(name); ok {
			out = append(out, s)
		}
	}
	for _, suf := range companionSuffixes {
		add(t.Name + suf)
	}
	if i := strings.LastIndexByte(t.Name, '.'); i >= 0 {
		if last := t.Name[i+1:]; last == "weight" || last == "weight_packed" {
			for _, m := range moduleCompanions {
				add(t.Name[:i+1] + m)
			}
		}
	}
	if x, ok := strings.CutSuffix(t.Name, "_blocks"); ok {
		add(x + "_scales")
	}
	return out
}

// IsQuantized reports whether t holds quantised codes rather than values:
// a tensor of a quantised code dtype (quant.IsCode), or a U8/I8 tensor of a
// checkpoint whose quantization_config has another method than "fp8", or
// that has only ModelOpt's hf_quant_config.json (packed or integer codes:
// compressed-tensors, MXFP4, NVFP4, ...). Quantisation
// bookkeeping (IsBookkeeping: scales, zero points; an MXFP4 <x>_scales)
// never is.
func (c *Checkpoint) IsQuantized(t *Tensor) bool {
	if IsBookkeeping(t.Name) {
		return false
	}
	if quant.IsCode(t.DType) {
		return true
	}
	q := c.Config.Quantization()
	quantised := q != nil && q.Method != "fp8" || q == nil && c.HFQuantConfig != nil
	if quantised && strings.HasSuffix(t.Name, ".weight_packed") {
		// compressed-tensors' packed codes, whatever their dtype (I32 for
		// pack-quantized, U8 for nvfp4/mxfp4-pack-quantized):
		// compressors/pack_quantized/base.py@0.20.1 and nvfp4/base.py@0.20.1.
		return true
	}
	if t.DType != numfmt.U8 && t.DType != numfmt.I8 {
		return false
	}
	// Block FP8 keeps its codes in F8_E4M3: a U8/I8 tensor there is data.
	// An MXFP4 <x>_scales (U8 exponents) is the scale of <x>_blocks. A
	// ModelOpt checkpoint may declare its scheme in hf_quant_config.json
	// only (NVFP4: U8 codes).
	return quantised && !strings.HasSuffix(t.Name, "_scales")
}

// QuantScheme says how the values of t are made from what is stored: the
// one rule, a quantised weight is its codes plus its scale, that every
// command reading values applies (extract --dtype, diff, the mapping plan
// of map and cache build/verify). A tensor that is not quantised
// (IsQuantized) is Plain. A quantised weight is BlockFP8 when it is
// F8_E4M3 with a <name>_scale_inv of the block grid's shape and a float
// dtype, no other scale of its own, and a config whose quantization_config
// (if any) has quant_method "fp8"; the block size comes from its
// weight_block_size (DefaultBlockSize when absent).
// Otherwise QuantScheme fails with *MissingScaleError (no companion at
// all) or *UnknownScaleError (companions of a scheme not supported), both
// matched by errors.Is(err, ErrScale). It reads no data.
func (c *Checkpoint) QuantScheme(t *Tensor) (Quant, error) {
	if !c.IsQuantized(t) {
		return Quant{Scheme: quant.Plain, Name: t.Name, Shape: t.Shape}, nil
	}
	r, recipeErr := c.QuantRecipe()
	if r != nil && r.Scheme != quant.BlockFP8 {
		// with its scale beside it; without, the rule below names what it
		// finds (no scale, a weight_scale_inv under another quant_method)
		if w, ok := c.QuantWeight(r, t); ok && w.hasScale() {
			return w.quant(t)
		}
	}
	comps := c.ScaleCompanions(t)
	var scale *Tensor
	var others []*Tensor // companions that would change the weight's values
	for _, s := range comps {
		switch {
		case s.Name == ScaleName(t.Name):
			scale = s
		case !activationOnly(s.Name):
			others = append(others, s)
		}
	}
	unknown := func(reason string) (Quant, error) {
		return Quant{}, &UnknownScaleError{Tensor: t.Name, File: t.File.Location, DType: t.DType, Companions: comps, Reason: reason}
	}
	switch {
	case len(comps) == 0:
		e := &MissingScaleError{Tensor: t.Name, File: t.File.Location, DType: t.DType, Want: ScaleName(t.Name)}
		for _, f := range c.Files {
			if _, ok := f.Header.Lookup(e.Want); ok {
				e.Unlisted = f.Name
				break
			}
		}
		return Quant{}, e
	case scale == nil && recipeErr != nil:
		return unknown(fmt.Sprintf("its config declares a quantisation ckpt does not read (%v)", recipeErr))
	case scale == nil:
		return unknown("no weight_scale_inv beside it, and that naming is not a scheme ckpt supports")
	case len(others) > 0:
		return unknown("a weight_scale_inv together with other scales of the weight is not a scheme ckpt supports")
	case t.DType != numfmt.F8E4M3:
		return unknown(fmt.Sprintf("block FP8 is F8_E4M3 codes, not %s", t.DType))
	}
	bm, bn := quant.DefaultBlockSize[0], quant.DefaultBlockSize[1]
	q := c.Config.Quantization()
	if q != nil && q.Method != "fp8" {
		return unknown(fmt.Sprintf("a weight_scale_inv is block FP8, but %s.quant_method is %q, not \"fp8\"", q.Path, q.Method))
	}
	if q != nil && q.BlockSize != nil {
		if !q.IsBlockFP8() {
			return unknown(fmt.Sprintf("%s.weight_block_size %v is not a block size [bm, bn] (quant_method %q)", q.Path, q.BlockSize, q.Method))
		}
		bm, bn = q.BlockSize[0], q.BlockSize[1]
	}
	if err := checkBlockScale(t, scale, bm, bn); err != nil {
		return unknown(err.Error())
	}
	return Quant{Scheme: quant.BlockFP8, Scale: scale, BM: bm, BN: bn, Name: t.Name, Shape: t.Shape, Companions: []*Tensor{scale}}, nil
}

// hasScale reports whether the weight's scale companion was found.
func (w *QuantWeight) hasScale() bool {
	for _, p := range w.Companions {
		if p.Role == "scale" && p.Tensor != nil {
			return true
		}
	}
	return false
}

// quant is QuantScheme for a weight of a recipe's scheme other than block
// FP8 (quant.Spec): every required companion present, of a dtype and a
// shape the scheme allows.
func (w *QuantWeight) quant(t *Tensor) (Quant, error) {
	var found []*Tensor
	for _, p := range w.Companions {
		if p.Tensor != nil {
			found = append(found, p.Tensor)
		}
	}
	unknown := func(reason string) (Quant, error) {
		return Quant{}, &UnknownScaleError{Tensor: t.Name, File: t.File.Location, DType: t.DType, Companions: found, Reason: reason}
	}
	if w.Shape == nil {
		return unknown(fmt.Sprintf("%s weight of shape %v: %s", quant.SpecOf(w.Scheme).Title, t.Shape, w.ShapeProblem))
	}
	q := Quant{Scheme: w.Scheme, Name: w.Name, Shape: w.Shape, Companions: found}
	for i := range w.Companions {
		p := &w.Companions[i]
		switch {
		case p.Tensor == nil && p.Optional:
			continue
		case p.Tensor == nil:
			return unknown(fmt.Sprintf("%s needs %s, which is absent", quant.SpecOf(w.Scheme).Title, Quote(p.Name)))
		case !p.DTypeOK():
			return unknown(fmt.Sprintf("%s is %s, expected %v", Quote(p.Name), p.Tensor.DType, p.DTypes))
		case !p.ShapeOK():
			return unknown(fmt.Sprintf("%s has shape %v, expected %s", Quote(p.Name), p.Tensor.Shape, p.Shape))
		}
		switch p.Role {
		case "scale":
			q.Scale = p.Tensor
		case "global_scale":
			q.Global = p.Tensor
		}
	}
	_, cols := Matrix(w.Shape)
	switch w.Scheme {
	case quant.FP8Tensor, quant.FP8Channel: // one scale per row (a tensor's repeated)
		q.BM, q.BN = 1, max(cols, 1)
	case quant.FP8PerBlock:
		q.BM, q.BN = w.Block[0], w.Block[1]
	}
	return q, nil
}

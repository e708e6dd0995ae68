package ckpt

import (
	"context"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// hfQuantConfigFile is ModelOpt's quantisation config beside config.json.
const hfQuantConfigFile = "hf_quant_config.json"

// readHFQuantConfig reads ModelOpt's hf_quant_config.json when config.json
// declares no quantisation but the tensors look quantised (a U8 tensor, or
// a weight_scale / weight_scale_2 / input_scale companion): other
// checkpoints cost no extra request to a remote store.
func (c *Checkpoint) readHFQuantConfig(ctx context.Context) error {
	if c.Config.Quantization() != nil || !looksQuantised(c.Tensors) {
		return nil
	}
	data, err := readSmallFile(ctx, c.Store, hfQuantConfigFile, MaxConfigSize)
	switch {
	case isNotExist(err):
		return nil
	case err != nil:
		return err
	}
	cfg, err := ParseConfig(data, c.Store.Location(hfQuantConfigFile))
	if err != nil {
		return err
	}
	c.HFQuantConfig = cfg
	return nil
}

func looksQuantised(ts []*Tensor) bool {
	for _, t := range ts {
		if t.DType == numfmt.U8 {
			return true
		}
		switch t.Name[strings.LastIndexByte(t.Name, '.')+1:] {
		case "weight_scale", "weight_scale_2", "input_scale":
			return true
		}
	}
	return false
}

// QuantRecipe returns the checkpoint's quantisation as declared by
// config.json's quantization_config (top level, else text_config) or,
// when that has none, by ModelOpt's hf_quant_config.json. It returns nil,
// nil when neither declares one, and a *quant.RecipeError when the
// declaration is not one of the schemes (quant.SpecOf) or not usable as
// one; never a half-read recipe.
func (c *Checkpoint) QuantRecipe() (*quant.Recipe, error) {
	if q := c.Config.Quantization(); q != nil {
		return quant.FromConfig(c.Config.File, q)
	}
	if c.HFQuantConfig == nil {
		return nil, nil
	}
	return quant.FromHFQuantConfig(c.HFQuantConfig.File, c.HFQuantConfig.Raw)
}

// QuantWeight is one quantised weight of a recipe and its companions as
// the scheme wants them.
type QuantWeight struct {
	Scheme quant.Scheme
	// Weight is the tensor of the stored codes; Name the name of the
	// weight's values (X for an MXFP4 X_blocks, else Weight.Name); Module
	// the module it belongs to (matched against the ignore list).
	Weight       *Tensor
	Name, Module string
	// Shape is the shape of the weight's values, nil when the stored shape
	// is not one the scheme allows (ShapeProblem says why).
	Shape        []int64
	ShapeProblem string
	Companions   []Companion
	// Block is an FP8PerBlock weight's block_structure [bm, bn].
	Block [2]int64
}

// Companion is one companion a quantised weight needs, and what was found.
type Companion struct {
	quant.CompanionSpec
	Name string
	// Tensor is the companion found, nil when absent.
	Tensor *Tensor
	// Want are the shapes the companion may have (several for a scalar:
	// [] and [1]); nil when the weight's shape allows no expectation.
	Want [][]int64
}

// ShapeOK reports whether the companion found has one of the shapes it
// may have (true when there is no expectation).
func (p *Companion) ShapeOK() bool {
	if p.Tensor == nil || p.Want == nil {
		return true
	}
	for _, w := range p.Want {
		if equalShape(p.Tensor.Shape, w) {
			return true
		}
	}
	return false
}

// DTypeOK reports whether the companion found has a dtype it may have.
func (p *Companion) DTypeOK() bool {
	if p.Tensor == nil {
		return true
	}
	for _, d := range p.DTypes {
		if p.Tensor.DType == d {
			return true
		}
	}
	return false
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var scalarShapes = [][]int64{{}, {1}}

// QuantWeight returns t's place in the recipe r when t holds the codes of a
// quantised weight of it (an MXFP4 X_blocks U8, an NVFP4 U8 or an FP8
// F8_E4M3 <module>.weight), with its companions looked up by name. It
// reads no data. A nil recipe has no quantised weights.
func (c *Checkpoint) QuantWeight(r *quant.Recipe, t *Tensor) (*QuantWeight, bool) {
	if r == nil {
		return nil, false
	}
	var w *QuantWeight
	module, isWeight := strings.CutSuffix(t.Name, ".weight")
	switch {
	case r.Scheme == quant.MXFP4:
		base, ok := strings.CutSuffix(t.Name, "_blocks")
		if !ok || t.DType != numfmt.U8 {
			return nil, false
		}
		w = &QuantWeight{Scheme: quant.MXFP4, Weight: t, Name: base, Module: base}
		if i := strings.LastIndexByte(base, '.'); i >= 0 {
			w.Module = base[:i]
		}
		sc := Companion{CompanionSpec: quant.SpecOf(quant.MXFP4).Companions[0], Name: base + "_scales"}
		if v, ok := numfmt.MXFP4Shape(t.Shape); ok {
			s, _ := numfmt.MXFP4ScaleShape(t.Shape)
			w.Shape, sc.Want = v, [][]int64{s}
		} else {
			w.ShapeProblem = "expected [..., G, 16] (16 bytes = 32 codes per block)"
		}
		w.Companions = []Companion{sc}
	case r.Scheme == quant.NVFP4:
		if !isWeight || t.DType != numfmt.U8 {
			return nil, false
		}
		w = &QuantWeight{Scheme: quant.NVFP4, Weight: t, Name: t.Name, Module: module}
		sp := quant.SpecOf(quant.NVFP4)
		sc := Companion{CompanionSpec: sp.Companions[0], Name: module + ".weight_scale"}
		if s, ok := numfmt.NVFP4ScaleShape(t.Shape); ok {
			w.Shape, sc.Want = []int64{t.Shape[0], 2 * t.Shape[1]}, [][]int64{s}
		} else {
			w.ShapeProblem = "expected [N, K/2] with K a multiple of 16"
		}
		w.Companions = []Companion{sc,
			{CompanionSpec: sp.Companions[1], Name: module + ".weight_scale_2", Want: scalarShapes},
			{CompanionSpec: sp.Companions[2], Name: module + ".input_scale", Want: scalarShapes}}
	case r.Scheme == quant.BlockFP8:
		if t.DType != numfmt.F8E4M3 {
			return nil, false
		}
		w = &QuantWeight{Scheme: quant.BlockFP8, Weight: t, Name: t.Name, Module: module, Shape: t.Shape}
		sc := Companion{CompanionSpec: quant.SpecOf(quant.BlockFP8).Companions[0], Name: ScaleName(t.Name)}
		if len(t.Shape) == 2 {
			sc.Want = [][]int64{{ceilDiv(t.Shape[0], r.Block[0]), ceilDiv(t.Shape[1], r.Block[1])}}
		} else {
			w.Shape, w.ShapeProblem = nil, "expected a 2-D weight [N, K]"
		}
		w.Companions = []Companion{sc}
	default: // compressed-tensors FP8
		if !isWeight || t.DType != numfmt.F8E4M3 {
			return nil, false
		}
		g := r.GroupFor(module)
		if g == nil {
			return nil, false
		}
		sp := quant.SpecOf(g.Scheme)
		w = &QuantWeight{Scheme: g.Scheme, Weight: t, Name: t.Name, Module: module, Shape: t.Shape, Block: g.Block}
		sc := Companion{CompanionSpec: sp.Companions[0], Name: module + ".weight_scale"}
		switch {
		case g.Scheme == quant.FP8Tensor:
			sc.Want = scalarShapes
		case len(t.Shape) != 2:
			w.Shape, w.ShapeProblem = nil, "expected a 2-D weight [N, K]"
		case g.Scheme == quant.FP8Channel:
			sc.Want = [][]int64{{t.Shape[0], 1}}
		default:
			sc.Want = [][]int64{{ceilDiv(t.Shape[0], g.Block[0]), ceilDiv(t.Shape[1], g.Block[1])}}
		}
		w.Companions = []Companion{sc, {CompanionSpec: sp.Companions[1], Name: module + ".input_scale", Want: scalarShapes}}
	}
	for i := range w.Companions {
		if s, ok := c.Lookup(w.Companions[i].Name); ok {
			w.Companions[i].Tensor = s
		}
	}
	return w, true
}

// QuantWeights returns every quantised weight of the recipe r in c, in
// the checkpoint's order.
func (c *Checkpoint) QuantWeights(r *quant.Recipe) []*QuantWeight {
	var out []*QuantWeight
	for _, t := range c.Tensors {
		if w, ok := c.QuantWeight(r, t); ok {
			out = append(out, w)
		}
	}
	return out
}

// CountParameters counts t's parameters as the Hugging Face Hub does
// (CountsAsParameter; quantized says whether the checkpoint declares a
// quantisation), with the recipe's packing: the packed E2M1 codes of an
// MXFP4 X_blocks or an NVFP4 weight count two per byte, and MXFP4's U8
// X_scales are bookkeeping (huggingface/huggingface.js:packages/hub/src/
// lib/parse-safetensors-metadata.ts, getQuantizationMultiplier and
// shouldSkipTensor: mxfp4 _blocks ×2, _scales skipped). r may be nil. The
// bool is false when t is no parameter at all.
func CountParameters(c *Checkpoint, r *quant.Recipe, t *Tensor, quantized bool) (int64, bool) {
	if !CountsAsParameter(&t.TensorInfo, quantized) {
		return 0, false
	}
	n := int64(t.Numel())
	if r == nil {
		return n, true
	}
	switch r.Scheme {
	case quant.MXFP4:
		if t.DType == numfmt.U8 && strings.HasSuffix(t.Name, "_scales") {
			return 0, false
		}
	case quant.BlockFP8, quant.FP8Tensor, quant.FP8Channel, quant.FP8PerBlock:
		return n, true
	}
	if w, ok := c.QuantWeight(r, t); ok && r.Ignored(w.Module) == "" {
		return n * quant.SpecOf(w.Scheme).ValuesPerElement, true
	}
	return n, true
}

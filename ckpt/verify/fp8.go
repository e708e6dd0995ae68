package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// notConvertEntry returns the entry of the config's modules_to_not_convert
// that keeps module unconverted, as transformers reads the list
// (quant.NotConvertList), and whether one does.
func (in *inventory) notConvertEntry(module string) (string, bool) {
	if in.notConvert == nil {
		return "", false
	}
	return in.notConvert.Match(module)
}

func moduleOf(weight string) string { return strings.TrimSuffix(weight, ".weight") }

// compressedSuffixes are the compressed-tensors / ModelOpt scale names.
var compressedSuffixes = []string{".weight_scale", ".input_scale"}

func isCompressedScale(name string) bool {
	for _, s := range compressedSuffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func isScaleDType(d numfmt.DType) bool { return ckpt.IsBlockScaleDType(d) }

// fp8Facts is what the FP8 checks learn about the checkpoint.
type fp8Facts struct {
	weights    []*ckpt.Tensor // F8_E4M3 tensors
	scales     []*ckpt.Tensor // *_scale_inv tensors
	compressed []*ckpt.Tensor // *.weight_scale / *.input_scale tensors
	ctMethod   bool           // quant_method is compressed-tensors
	block      []int64        // valid weight_block_size or nil
}

func (in *inventory) fp8Facts() *fp8Facts {
	f := &fp8Facts{}
	for _, t := range in.c.Tensors {
		switch {
		case t.DType == numfmt.F8E4M3 && !ckpt.IsBookkeeping(t.Name):
			// an F8_E4M3 weight_scale is NVFP4's scale, not an FP8 weight
			f.weights = append(f.weights, t)
		}
		if strings.HasSuffix(t.Name, ckpt.ScaleSuffix) {
			f.scales = append(f.scales, t)
		} else if isCompressedScale(t.Name) {
			f.compressed = append(f.compressed, t)
		}
	}
	q := in.quant
	f.ctMethod = q != nil && q.Method == "compressed-tensors"
	if q.IsBlockFP8() {
		f.block = q.BlockSize
	}
	return f
}

// IsFP8 reports whether the checkpoint is a block-FP8 release, decided from
// the tensors present (an F8_E4M3 weight with its _scale_inv sibling) plus
// the config (a block fp8 quantization_config).
func (in *inventory) isFP8(f *fp8Facts) bool {
	if in.quant.IsBlockFP8() {
		return true
	}
	for _, w := range f.weights {
		if _, ok := in.byName[ckpt.ScaleName(w.Name)]; ok {
			return true
		}
	}
	return false
}

// The ids of the block-FP8 checks.
const (
	FP8Config            ckpt.FindingID = "fp8.config"             // F8_E4M3 tensors without a valid fp8 quantization_config
	FP8ScaleMissing      ckpt.FindingID = "fp8.scale_missing"      // an F8_E4M3 weight without <name>_scale_inv
	FP8ScaleShape        ckpt.FindingID = "fp8.scale_shape"        // a scale not of shape [ceil(R/bm), ceil(C/bn)]
	FP8ScaleDType        ckpt.FindingID = "fp8.scale_dtype"        // a scale not F32, BF16, F16 or F8_E8M0 (scale_fmt "ue8m0")
	FP8ScaleOrphan       ckpt.FindingID = "fp8.scale_orphan"       // a scale whose weight is absent or not F8_E4M3
	FP8Rank              ckpt.FindingID = "fp8.rank"               // an F8_E4M3 tensor that is not 2-D
	FP8NotConvert        ckpt.FindingID = "fp8.not_convert"        // an F8_E4M3 weight listed in modules_to_not_convert
	FP8CompressedTensors ckpt.FindingID = "fp8.compressed_tensors" // compressed-tensors naming (weight_scale, input_scale)
)

func fp8Checks(c *ckpt.Checkpoint, in *inventory) []ckpt.Finding {
	f := in.fp8Facts()
	q := in.quant
	ids := []ckpt.FindingID{FP8Config, FP8ScaleMissing, FP8ScaleShape, FP8ScaleDType, FP8ScaleOrphan, FP8Rank, FP8NotConvert, FP8CompressedTensors}
	if len(f.weights) == 0 && len(f.scales) == 0 && len(f.compressed) == 0 && q == nil {
		out := make([]ckpt.Finding, len(ids))
		for i, id := range ids {
			out[i] = ckpt.Finding{ID: id, Status: ckpt.Skip, Message: "no F8_E4M3 tensors, no scales and no quantization_config"}
		}
		return out
	}
	var out []ckpt.Finding
	out = append(out, fp8ConfigCheck(c, f, q)...)

	// Weights with a compressed-tensors scale follow that scheme instead.
	ctWeight := map[string]bool{}
	for _, s := range f.compressed {
		if strings.HasSuffix(s.Name, ".weight_scale") {
			ctWeight[strings.TrimSuffix(s.Name, "_scale")] = true
		}
	}
	// scale_missing, scale_shape, scale_dtype
	var missing, shape, dtype []ckpt.Finding
	nPairs, nE8M0 := 0, 0
	for _, w := range f.weights {
		sname := ckpt.ScaleName(w.Name)
		s, ok := in.byName[sname]
		if !ok {
			if ctWeight[w.Name] {
				continue
			}
			want := "a [ceil(R/bm), ceil(C/bn)] scale"
			if ss, ok := blockScaleShape(w.Shape, f.block); f.block != nil && ok {
				want = fmt.Sprintf("shape %s", ckpt.FormatShape(ss))
			}
			missing = append(missing, ckpt.Finding{ID: FP8ScaleMissing, Status: ckpt.Fail, Tensors: []string{w.Name},
				Message: fmt.Sprintf("%s is F8_E4M3 %s but has no %s (expected F32/BF16/F16, %s); without it the weight is read unscaled",
					ckpt.EscapeName(w.Name), ckpt.FormatShape(w.Shape), ckpt.EscapeName(sname), want)})
			continue
		}
		nPairs++
		switch {
		case !isScaleDType(s.DType):
			dtype = append(dtype, ckpt.Finding{ID: FP8ScaleDType, Status: ckpt.Fail, Tensors: []string{s.Name},
				Message: fmt.Sprintf("%s has dtype %s, expected F32, BF16 or F16 (or F8_E8M0 with scale_fmt \"ue8m0\")", ckpt.EscapeName(s.Name), s.DType)})
		case s.DType == numfmt.F8E8M0:
			nE8M0++
			if q != nil && q.ScaleFmt != "ue8m0" {
				dtype = append(dtype, ckpt.Finding{ID: FP8ScaleDType, Status: ckpt.Warn, Tensors: []string{s.Name},
					Message: fmt.Sprintf("%s is F8_E8M0 but %s.scale_fmt is %s, not \"ue8m0\": transformers makes float32 scales for scale_fmt \"float\" "+
						"(read here as 2^(e-127))", ckpt.EscapeName(s.Name), q.Path, scaleFmtText(q.ScaleFmt))})
			}
		}
		if want, ok := blockScaleShape(w.Shape, f.block); f.block != nil && ok && len(w.Shape) == 3 {
			if !slices.Equal(s.Shape, want) {
				shape = append(shape, ckpt.Finding{ID: FP8ScaleShape, Status: ckpt.Fail, Tensors: []string{s.Name, w.Name},
					Message: fmt.Sprintf("%s has shape %s, expected %s = [%d, ceil(%d/%d), ceil(%d/%d)] for the stack of experts %s and %s.weight_block_size %s",
						ckpt.EscapeName(s.Name), ckpt.FormatShape(s.Shape), ckpt.FormatShape(want), w.Shape[0], w.Shape[1], f.block[0], w.Shape[2], f.block[1],
						ckpt.FormatShape(w.Shape), q.Path, ckpt.FormatShape(f.block))})
			}
		} else if f.block != nil && len(w.Shape) == 2 {
			want := scaleShape(w.Shape, f.block)
			if !slices.Equal(s.Shape, want) {
				shape = append(shape, ckpt.Finding{ID: FP8ScaleShape, Status: ckpt.Fail, Tensors: []string{s.Name, w.Name},
					Message: fmt.Sprintf("%s has shape %s, expected %s = [ceil(%d/%d), ceil(%d/%d)] for weight %s and %s.weight_block_size %s",
						ckpt.EscapeName(s.Name), ckpt.FormatShape(s.Shape), ckpt.FormatShape(want), w.Shape[0], f.block[0], w.Shape[1], f.block[1], ckpt.FormatShape(w.Shape),
						q.Path, ckpt.FormatShape(f.block))})
			}
		}
	}
	out = ckpt.AppendOr(out, missing, ckpt.Finding{ID: FP8ScaleMissing, Status: ckpt.Pass,
		Message: fmt.Sprintf("every F8_E4M3 weight (%d) has its weight_scale_inv", len(f.weights)-len(ctWeight))})
	switch {
	case len(shape) > 0:
		out = append(out, shape...)
	case f.block == nil && nPairs > 0:
		out = append(out, ckpt.Finding{ID: FP8ScaleShape, Status: ckpt.Skip,
			Message: "not checked: no valid quantization_config.weight_block_size (the block size is never inferred from shapes)"})
	default:
		out = append(out, ckpt.Finding{ID: FP8ScaleShape, Status: ckpt.Pass,
			Message: fmt.Sprintf("%s of shape [ceil(R/bm), ceil(C/bn)] for weight_block_size %s",
				ckpt.Plural(nPairs, "scale is", "scales are"), ckpt.FormatShape(f.block))})
	}
	passDType := fmt.Sprintf("every scale (%d) is F32, BF16 or F16", nPairs)
	if nE8M0 > 0 {
		passDType = fmt.Sprintf("every scale (%d) is F32, BF16, F16 or F8_E8M0 (%d F8_E8M0, scale_fmt \"ue8m0\")", nPairs, nE8M0)
	}
	out = ckpt.AppendOr(out, dtype, ckpt.Finding{ID: FP8ScaleDType, Status: ckpt.Pass, Message: passDType})

	// scale_orphan
	var orphans []ckpt.Finding
	for _, s := range f.scales {
		wname := strings.TrimSuffix(s.Name, ckpt.ScaleSuffix)
		w, ok := in.byName[wname]
		switch {
		case !ok:
			orphans = append(orphans, ckpt.Finding{ID: FP8ScaleOrphan, Status: ckpt.Fail, Tensors: []string{s.Name},
				Message: fmt.Sprintf("%s has no weight: %s does not exist", ckpt.EscapeName(s.Name), ckpt.EscapeName(wname))})
		case w.DType != numfmt.F8E4M3:
			orphans = append(orphans, ckpt.Finding{ID: FP8ScaleOrphan, Status: ckpt.Fail, Tensors: []string{s.Name, wname},
				Message: fmt.Sprintf("%s belongs to %s, which is %s, not F8_E4M3 (a loader may scale unquantised values)",
					ckpt.EscapeName(s.Name), ckpt.EscapeName(wname), w.DType)})
		}
	}
	out = ckpt.AppendOr(out, orphans, ckpt.Finding{ID: FP8ScaleOrphan, Status: ckpt.Pass,
		Message: fmt.Sprintf("every weight_scale_inv (%d) belongs to an F8_E4M3 weight", len(f.scales))})

	// rank
	var rank []ckpt.Finding
	stacks := 0
	for _, w := range f.weights {
		s, scaled := in.byName[ckpt.ScaleName(w.Name)]
		switch {
		case len(w.Shape) == 3 && scaled && len(s.Shape) == 3:
			// A stack of 2-D block weights, one block grid per expert
			// (fused MoE experts, ckpt.BlockScaleShape).
			stacks++
		case len(w.Shape) != 2:
			rank = append(rank, ckpt.Finding{ID: FP8Rank, Status: ckpt.Fail, Tensors: []string{w.Name},
				Message: fmt.Sprintf("%s is F8_E4M3 with shape %s (rank %d), expected a 2-D weight (or a 3-D stack of experts with a 3-D scale)",
					ckpt.EscapeName(w.Name), ckpt.FormatShape(w.Shape), len(w.Shape))})
		}
	}
	pass := fmt.Sprintf("every F8_E4M3 tensor (%d) is 2-D", len(f.weights))
	if stacks > 0 {
		pass = fmt.Sprintf("every F8_E4M3 tensor (%d) is 2-D or a 3-D stack of experts (%d) with a 3-D scale", len(f.weights), stacks)
	}
	out = ckpt.AppendOr(out, rank, ckpt.Finding{ID: FP8Rank, Status: ckpt.Pass, Message: pass})

	out = append(out, notConvertChecks(in, f, q)...)
	out = append(out, compressedCheck(f, q))
	return out
}

// blockScaleShape is ckpt.BlockScaleShape for a weight_block_size (none
// when it is not [bm, bn]).
func blockScaleShape(w, block []int64) ([]int64, bool) {
	if len(block) != 2 {
		return nil, false
	}
	return ckpt.BlockScaleShape(w, block[0], block[1])
}

func scaleShape(w, block []int64) []int64 {
	return []int64{(w[0] + block[0] - 1) / block[0], (w[1] + block[1] - 1) / block[1]}
}

// scaleFmtText quotes a scale_fmt, "(unset)" when absent.
func scaleFmtText(s string) string {
	if s == "" {
		return "(unset)"
	}
	return ckpt.Quote(s)
}

func fp8ConfigCheck(c *ckpt.Checkpoint, f *fp8Facts, q *quant.Config) []ckpt.Finding {
	id := FP8Config
	n := len(f.weights)
	if f.ctMethod {
		return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: fmt.Sprintf("%s.quant_method is compressed-tensors: see fp8.compressed_tensors", q.Path)}}
	}
	if n == 0 && len(f.scales) == 0 {
		if q == nil {
			return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: "no F8_E4M3 tensors and no quantization_config"}}
		}
		if q.IsBlockFP8() {
			return []ckpt.Finding{{ID: id, Status: ckpt.Warn, Message: fmt.Sprintf("%s says block fp8 but no tensor is F8_E4M3", q.Path)}}
		}
		return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: fmt.Sprintf("no F8_E4M3 tensors (%s.quant_method %s)", q.Path, ckpt.Quote(q.Method))}}
	}
	switch {
	case c.Config == nil:
		return []ckpt.Finding{{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s F8_E4M3 but there is no config.json with an fp8 quantization_config", ckpt.Plural(n, "tensor is", "tensors are"))}}
	case q == nil:
		return []ckpt.Finding{{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s F8_E4M3 but config.json has no quantization_config (expected quant_method \"fp8\" with weight_block_size)",
				ckpt.Plural(n, "tensor is", "tensors are"))}}
	case q.Method != "fp8":
		return []ckpt.Finding{{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s F8_E4M3 but %s.quant_method is %s, expected \"fp8\"", ckpt.Plural(n, "tensor is", "tensors are"), q.Path, ckpt.Quote(q.Method))}}
	case !q.IsBlockFP8():
		return []ckpt.Finding{{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s.weight_block_size is %v, expected two positive integers [bm, bn] (never inferred from shapes)",
				q.Path, q.Raw["weight_block_size"])}}
	}
	var out []ckpt.Finding
	if q.Fmt != "" && q.Fmt != "e4m3" {
		out = append(out, ckpt.Finding{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s.fmt is %s but the weights are F8_E4M3 (expected \"e4m3\")", q.Path, ckpt.Quote(q.Fmt))})
	}
	if q.ScaleFmt != "" && q.ScaleFmt != "float" && q.ScaleFmt != "ue8m0" {
		out = append(out, ckpt.Finding{ID: id, Status: ckpt.Fail,
			Message: fmt.Sprintf("%s.scale_fmt is %s, expected \"float\" or \"ue8m0\" (transformers' FineGrainedFP8Config refuses others)",
				q.Path, scaleFmtText(q.ScaleFmt))})
	}
	if q.ActivationScheme != "" && q.ActivationScheme != "dynamic" {
		out = append(out, ckpt.Finding{ID: id, Status: ckpt.Warn,
			Message: fmt.Sprintf("%s.activation_scheme is %s; block FP8 loaders (vLLM) require \"dynamic\"", q.Path, ckpt.Quote(q.ActivationScheme))})
	}
	if len(out) == 0 {
		fmtS := q.Fmt
		if fmtS == "" {
			fmtS = "(unset)"
		}
		out = append(out, ckpt.Finding{ID: id, Status: ckpt.Pass,
			Message: fmt.Sprintf("%s: quant_method fp8, fmt %s, weight_block_size %s, %s",
				q.Path, fmtS, ckpt.FormatShape(q.BlockSize), ckpt.Plural(n, "F8_E4M3 tensor", "F8_E4M3 tensors"))})
	}
	return out
}

func notConvertChecks(in *inventory, f *fp8Facts, q *quant.Config) []ckpt.Finding {
	id := FP8NotConvert
	if q == nil || len(q.ModulesToNotConvert) == 0 {
		return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: "no modules_to_not_convert in quantization_config"}}
	}
	var out []ckpt.Finding
	for _, w := range f.weights {
		if e, ok := in.notConvertEntry(moduleOf(w.Name)); ok {
			out = append(out, ckpt.Finding{ID: id, Status: ckpt.Fail, Tensors: []string{w.Name},
				Message: fmt.Sprintf("%s is F8_E4M3, but %s.modules_to_not_convert lists %s, which keeps module %s unconverted (BF16) as transformers reads the list",
					ckpt.EscapeName(w.Name), q.Path, ckpt.Quote(e), ckpt.EscapeName(moduleOf(w.Name)))})
		}
	}
	if len(out) == 0 {
		out = append(out, ckpt.Finding{ID: id, Status: ckpt.Pass,
			Message: fmt.Sprintf("no F8_E4M3 weight is kept unconverted by modules_to_not_convert (%d entries, read as transformers' "+
				"should_convert_module reads them)", len(q.ModulesToNotConvert))})
	}
	return out
}

func compressedCheck(f *fp8Facts, q *quant.Config) ckpt.Finding {
	id := FP8CompressedTensors
	var ws, is []string
	var all []string
	for _, t := range f.compressed {
		all = append(all, t.Name)
		if strings.HasSuffix(t.Name, ".weight_scale") {
			ws = append(ws, t.Name)
		} else {
			is = append(is, t.Name)
		}
	}
	desc := fmt.Sprintf("%s and %s (compressed-tensors / ModelOpt naming: scales are multipliers, no _inv suffix)",
		ckpt.Plural(len(ws), "weight_scale", "weight_scale tensors"), ckpt.Plural(len(is), "input_scale", "input_scale tensors"))
	switch {
	case f.ctMethod:
		return ckpt.Finding{ID: id, Status: ckpt.Warn, Tensors: all,
			Message: fmt.Sprintf("compressed-tensors checkpoint (%s.quant_method): %s; the block-FP8 weight_scale_inv rules do not apply and this scheme is not "+
				"verified further", q.Path, desc)}
	case len(all) == 0:
		return ckpt.Finding{ID: id, Status: ckpt.Pass, Message: "no compressed-tensors scales (weight_scale, input_scale)"}
	case q.IsBlockFP8():
		return ckpt.Finding{ID: id, Status: ckpt.Fail, Tensors: all,
			Message: fmt.Sprintf("%s, but %s is block fp8, which expects weight_scale_inv: %s", desc, q.Path, ckpt.NameList(all, 5))}
	default:
		return ckpt.Finding{ID: id, Status: ckpt.Warn, Tensors: all,
			Message: fmt.Sprintf("%s without a compressed-tensors quantization_config: %s", desc, ckpt.NameList(all, 5))}
	}
}

// defaultNotConvert is what transformers keeps unconverted when the config
// gives no modules_to_not_convert (absent or null): get_keys_to_not_convert
// (src/transformers/quantizers/base.py@v5.23.0) keeps the output
// embeddings, the tied weights and the module of the last parameter, which
// for the Qwen3.5 classes is the one Linear lm_head. A list that is given
// replaces these defaults (get_modules_to_not_convert).
var defaultNotConvert = []string{"lm_head"}

// notConvertOf is the modules_to_not_convert transformers applies for q:
// the list given, or defaultNotConvert when there is none.
func notConvertOf(q *quant.Config) *quant.NotConvertList {
	if q == nil {
		return nil
	}
	if q.ModulesToNotConvert == nil {
		return quant.NewNotConvertList(defaultNotConvert)
	}
	return quant.NewNotConvertList(q.ModulesToNotConvert)
}

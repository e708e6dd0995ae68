package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// The ids of the checks of a quantisation scheme other than block FP8
// (MXFP4, NVFP4, compressed-tensors FP8).
const (
	SchemeConfig           ckpt.FindingID = "scheme.config"            // the scheme, or a declaration ckpt cannot check (warn)
	SchemeWeightShape      ckpt.FindingID = "scheme.weight_shape"      // stored codes not of the scheme's shape
	SchemeCompanionMissing ckpt.FindingID = "scheme.companion_missing" // a quantised weight without a companion it needs
	SchemeCompanionDType   ckpt.FindingID = "scheme.companion_dtype"   // a companion of the wrong dtype
	SchemeCompanionShape   ckpt.FindingID = "scheme.companion_shape"   // a companion not of the shape its weight implies
	SchemeCompanionOrphan  ckpt.FindingID = "scheme.companion_orphan"  // a scale that belongs to no quantised weight
	SchemeIgnored          ckpt.FindingID = "scheme.ignored"           // a quantised weight inside the ignore list
	SchemeScaleValues      ckpt.FindingID = "scheme.scale_values"      // an E8M0 scale 0xFF or a global scale not finite and > 0 (--read-data)
)

// quantChecks checks the checkpoint's quantisation: the scheme checks when
// its config declares MXFP4, NVFP4 or compressed-tensors FP8, else the
// block-FP8 checks (fp8Checks), as before.
func quantChecks(ctx context.Context, c *ckpt.Checkpoint, in *inventory, opt CheckOptions) []ckpt.Finding {
	r, err := c.QuantRecipe()
	var re *quant.RecipeError
	if errors.As(err, &re) && !(in.quant != nil && strings.EqualFold(in.quant.Method, "fp8")) {
		// a declaration ckpt cannot check: say so, and run what applies.
		return append([]ckpt.Finding{{ID: SchemeConfig, Status: ckpt.Warn, Message: fmt.Sprintf("quantisation not verified: %v", err)}}, fp8Checks(c, in)...)
	}
	if err != nil || r == nil || r.Scheme == quant.BlockFP8 {
		return fp8Checks(c, in)
	}
	return schemeChecks(ctx, c, r, opt)
}

func schemeChecks(ctx context.Context, c *ckpt.Checkpoint, r *quant.Recipe, opt CheckOptions) []ckpt.Finding {
	sp := r.Spec()
	ws := c.QuantWeights(r)
	var out []ckpt.Finding
	declared := fmt.Sprintf("%s %s", ckpt.EscapeName(baseName(r.File)), r.Path)
	if len(ws) == 0 {
		out = append(out, ckpt.Finding{ID: SchemeConfig, Status: ckpt.Warn,
			Message: fmt.Sprintf("%s declares %s (%s), but no tensor is a quantised weight of it (%s %s)",
				declared, r.Scheme, sp.Title, dtypeNames(sp.WeightDTypes), sp.WeightName)})
	} else {
		out = append(out, ckpt.Finding{ID: SchemeConfig, Status: ckpt.Pass,
			Message: fmt.Sprintf("%s: %s, declared in %s; %s", r.Scheme, sp.Title, declared, ckpt.Plural(len(ws), "quantised weight", "quantised weights"))})
	}

	var shape, missing, dtype, cshape, ignored []ckpt.Finding
	owned := map[string]bool{}
	nComp := 0
	for _, w := range ws {
		wdesc := fmt.Sprintf("%s (%s %s)", ckpt.EscapeName(w.Weight.Name), w.Weight.DType, ckpt.FormatShape(w.Weight.Shape))
		if w.ShapeProblem != "" {
			shape = append(shape, ckpt.Finding{ID: SchemeWeightShape, Status: ckpt.Fail, Tensors: []string{w.Weight.Name},
				Message: fmt.Sprintf("%s is %s codes of shape %s: %s", ckpt.EscapeName(w.Weight.Name), w.Scheme, ckpt.FormatShape(w.Weight.Shape), w.ShapeProblem)})
		}
		if e := r.Ignored(w.Module); e != "" {
			ignored = append(ignored, ckpt.Finding{ID: SchemeIgnored, Status: ckpt.Fail, Tensors: []string{w.Weight.Name},
				Message: fmt.Sprintf("%s is quantised (%s), but %s lists %s, which leaves module %s unquantised",
					wdesc, w.Scheme, r.IgnoreKey, ckpt.Quote(e), ckpt.EscapeName(w.Module))})
		}
		for i := range w.Companions {
			p := &w.Companions[i]
			owned[p.Name] = true
			want := p.Shape
			if len(p.Want) == 1 {
				want = fmt.Sprintf("%s = %s", ckpt.FormatShape(p.Want[0]), p.Shape)
			}
			if p.Tensor == nil {
				if !p.Optional {
					missing = append(missing, ckpt.Finding{ID: SchemeCompanionMissing, Status: ckpt.Fail, Tensors: []string{w.Weight.Name},
						Message: fmt.Sprintf("%s is %s but has no %s (%s %s, %s)", wdesc, w.Scheme, ckpt.EscapeName(p.Name), p.Role, dtypeNames(p.DTypes), want)})
				}
				continue
			}
			nComp++
			if !p.DTypeOK() {
				dtype = append(dtype, ckpt.Finding{ID: SchemeCompanionDType, Status: ckpt.Fail, Tensors: []string{p.Name, w.Weight.Name},
					Message: fmt.Sprintf("%s (%s of %s %s) has dtype %s, expected %s",
						ckpt.EscapeName(p.Name), p.Role, w.Scheme, ckpt.EscapeName(w.Weight.Name), p.Tensor.DType, dtypeNames(p.DTypes))})
			}
			if !p.ShapeOK() {
				cshape = append(cshape, ckpt.Finding{ID: SchemeCompanionShape, Status: ckpt.Fail, Tensors: []string{p.Name, w.Weight.Name},
					Message: fmt.Sprintf("%s (%s of %s) has shape %s, expected %s for weight %s",
						ckpt.EscapeName(p.Name), p.Role, w.Scheme, ckpt.FormatShape(p.Tensor.Shape), want, wdesc)})
			}
		}
	}
	out = ckpt.AppendOr(out, shape, ckpt.Finding{ID: SchemeWeightShape, Status: ckpt.Pass,
		Message: fmt.Sprintf("every quantised weight (%d) has the stored shape of %s: %s", len(ws), r.Scheme, sp.WeightShape)})
	out = ckpt.AppendOr(out, missing, ckpt.Finding{ID: SchemeCompanionMissing, Status: ckpt.Pass,
		Message: fmt.Sprintf("every quantised weight (%d) has its companions (%s)", len(ws), companionNames(sp))})
	out = ckpt.AppendOr(out, dtype, ckpt.Finding{ID: SchemeCompanionDType, Status: ckpt.Pass, Message: fmt.Sprintf("every companion (%d) has its dtype", nComp)})
	out = ckpt.AppendOr(out, cshape, ckpt.Finding{ID: SchemeCompanionShape, Status: ckpt.Pass,
		Message: fmt.Sprintf("every companion (%d) has the shape its weight implies (scale per %s)", nComp, sp.Block)})

	// companion_orphan: bookkeeping of no quantised weight.
	var orphans []ckpt.Finding
	for _, t := range c.Tensors {
		if owned[t.Name] || !isSchemeCompanion(r.Scheme, t) {
			continue
		}
		wname := companionWeight(r.Scheme, t.Name)
		w, ok := c.Lookup(wname)
		what := fmt.Sprintf("%s does not exist", ckpt.EscapeName(wname))
		if ok {
			what = fmt.Sprintf("%s is %s %s, not a %s weight", ckpt.EscapeName(wname), w.DType, ckpt.FormatShape(w.Shape), r.Scheme)
		}
		orphans = append(orphans, ckpt.Finding{ID: SchemeCompanionOrphan, Status: ckpt.Fail, Tensors: []string{t.Name},
			Message: fmt.Sprintf("%s looks like a %s companion but belongs to no quantised weight: %s (a loader may scale unquantised values)",
				ckpt.EscapeName(t.Name), r.Scheme, what)})
	}
	out = ckpt.AppendOr(out, orphans, ckpt.Finding{ID: SchemeCompanionOrphan, Status: ckpt.Pass, Message: "every scale belongs to a quantised weight"})
	if r.IgnoreKey == "" || len(r.Ignore) == 0 {
		out = ckpt.AppendOr(out, ignored, ckpt.Finding{ID: SchemeIgnored, Status: ckpt.Skip,
			Message: fmt.Sprintf("no ignore list (%s)", strings.Join(sp.IgnoreKeys, ", "))})
	} else {
		how := "matched on whole dotted segments"
		if strings.HasSuffix(r.IgnoreKey, "modules_to_not_convert") {
			how = "read as transformers' should_convert_module reads them"
		}
		out = ckpt.AppendOr(out, ignored, ckpt.Finding{ID: SchemeIgnored, Status: ckpt.Pass,
			Message: fmt.Sprintf("no quantised weight is in %s (%s, %s)", r.IgnoreKey, ckpt.Plural(len(r.Ignore), "entry", "entries"), how)})
	}
	return append(out, scaleValueChecks(ctx, r, ws, opt)...)
}

// isSchemeCompanion reports whether t is named like a companion of the
// scheme's weights.
func isSchemeCompanion(s quant.Scheme, t *ckpt.Tensor) bool {
	if s == quant.MXFP4 {
		return t.DType == numfmt.U8 && strings.HasSuffix(t.Name, "_scales")
	}
	last := t.Name[strings.LastIndexByte(t.Name, '.')+1:]
	switch last {
	case "weight_scale", "weight_scale_2", "input_scale", "weight_scale_inv":
		return true
	}
	return false
}

// companionWeight names the weight a companion would belong to.
func companionWeight(s quant.Scheme, name string) string {
	if s == quant.MXFP4 {
		return strings.TrimSuffix(name, "_scales") + "_blocks"
	}
	if strings.HasSuffix(name, ckpt.ScaleSuffix) {
		return strings.TrimSuffix(name, ckpt.ScaleSuffix)
	}
	return name[:strings.LastIndexByte(name, '.')+1] + "weight"
}

func companionNames(sp *quant.Spec) string {
	var parts []string
	for _, p := range sp.Companions {
		if !p.Optional {
			parts = append(parts, p.Suffix)
		}
	}
	return strings.Join(parts, ", ")
}

func dtypeNames(ds []numfmt.DType) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = string(d)
	}
	return strings.Join(parts, "/")
}

func baseName(loc string) string { return loc[strings.LastIndexAny(loc, `/\`)+1:] }

// scaleValueChecks reads what the data checks do not: MXFP4's E8M0 scales
// (never 0xFF, NaN) and the F32 global scale of NVFP4 (weight_scale_2:
// finite and > 0). The other companions (weight_scale, input_scale) are
// scale tensors of data.scale_values.
func scaleValueChecks(ctx context.Context, r *quant.Recipe, ws []*ckpt.QuantWeight, opt CheckOptions) []ckpt.Finding {
	id := SchemeScaleValues
	if !opt.ReadData {
		return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: "not checked: tensor data is read only with " + opt.Words.Of("ReadData")}}
	}
	var bad []ckpt.Finding
	n := 0
	for _, w := range ws {
		for i := range w.Companions {
			p := &w.Companions[i]
			if p.Tensor == nil || !p.DTypeOK() || !(r.Scheme == quant.MXFP4 && p.Role == "scale" || p.Role == "global_scale") {
				continue
			}
			n++
			if f, ok := scanCompanion(ctx, p.Tensor, w); !ok {
				bad = append(bad, f)
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return []ckpt.Finding{{ID: id, Status: ckpt.Skip, Message: fmt.Sprintf("not checked: %v", err)}}
	}
	what := "global scale"
	if r.Scheme == quant.MXFP4 {
		what = "E8M0 scale tensor"
	}
	return ckpt.AppendOr(nil, bad, ckpt.Finding{ID: id, Status: ckpt.Pass,
		Message: fmt.Sprintf("every value of %s is a finite scale > 0 (E8M0: no 0xFF)", ckpt.Plural(n, what, what+"s"))})
}

// scanCompanion reads the companion t of w in chunks and counts its values
// that are no usable scale; ok is false with the finding when there are.
func scanCompanion(ctx context.Context, t *ckpt.Tensor, w *ckpt.QuantWeight) (ckpt.Finding, bool) {
	const chunk = 1 << 20
	size := int64(t.NBytes())
	buf := make([]byte, min(size, chunk))
	var nBad, total int64
	first, firstValue := int64(-1), ""
	for off := int64(0); off < size; off += int64(len(buf)) {
		if ctx.Err() != nil {
			return ckpt.Finding{}, true
		}
		p := buf[:min(int64(len(buf)), size-off)]
		if _, err := t.ReadAt(p, off); err != nil {
			return ckpt.Finding{ID: SchemeScaleValues, Status: ckpt.Fail, Tensors: []string{t.Name, w.Weight.Name},
				Message: fmt.Sprintf("%s (scale of %s) could not be read: %v", ckpt.EscapeName(t.Name), ckpt.EscapeName(w.Weight.Name), err)}, false
		}
		switch t.DType {
		case numfmt.U8: // E8M0
			for i, b := range p {
				total++
				if numfmt.E8M0IsNaN(b) {
					if nBad == 0 {
						first, firstValue = off+int64(i), "0xFF (NaN)"
					}
					nBad++
				}
			}
		case numfmt.F32:
			for i := 0; i+4 <= len(p); i += 4 {
				total++
				v := math.Float32frombits(binary.LittleEndian.Uint32(p[i:]))
				if !(v > 0) || math.IsInf(float64(v), 0) {
					if nBad == 0 {
						first, firstValue = (off+int64(i))/4, formatFloat(v)
					}
					nBad++
				}
			}
		}
	}
	if nBad == 0 {
		return ckpt.Finding{}, true
	}
	return ckpt.Finding{ID: SchemeScaleValues, Status: ckpt.Fail, Tensors: []string{t.Name, w.Weight.Name},
		Message: fmt.Sprintf("%s (%s of %s): %d of %d values are no finite scale > 0; first at element %d = %s",
			ckpt.EscapeName(t.Name), w.Scheme, ckpt.EscapeName(w.Weight.Name), nBad, total, first, firstValue)}, false
}

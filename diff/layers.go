package diff

import (
	"math"
	"strconv"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// LayerSummary is the per-layer picture of a comparison: one decoder
// layer of the text model, or the whole of the mtp, visual or other group
// (the groups of ckpt.SummaryGroupLayer).
type LayerSummary struct {
	Group string `json:"group"`
	// Layer is the decoder layer (text_layers only).
	Layer   *int  `json:"layer,omitempty"`
	Tensors int64 `json:"tensors"`
	// Changed counts tensors found to differ (changed, dtype_changed,
	// shape_changed, only_in_base, only_in_ft); NoChangeSeen sampled
	// tensors without a difference; Identical tensors identical or
	// requant_identical (the same weights). Relations has every count.
	Changed      int64 `json:"changed"`
	NoChangeSeen int64 `json:"no_change_seen"`
	Identical    int64 `json:"identical"`
	// ChangedFractionRange is the smallest and largest changed fraction of
	// the tensors whose elements were counted (sampled ones: of the
	// sample).
	ChangedFractionRange *[2]Float `json:"changed_fraction_range,omitempty"`
	// MeanRelL2 is the mean rel_l2 over the tensors with a finite one
	// (unchanged tensors count with 0).
	MeanRelL2 *Float  `json:"mean_rel_l2,omitempty"`
	Relations Summary `json:"relations"`
}

// Label names the layer for tables: the layer number, or the group.
func (l LayerSummary) Label() string {
	if l.Layer != nil {
		return "layer " + strconv.Itoa(*l.Layer)
	}
	return l.Group
}

// ChangedFractionOf returns the fraction of a row's elements that changed:
// ChangedFraction when set (sampled diffs), else changed_elems / numel or,
// for a block-FP8 / wider-float pair, the fraction of codes re-quantising
// fails to reproduce (requant_mismatch_elems / numel); false when elements
// were not counted.
func (t *Tensor) ChangedFractionOf() (float64, bool) {
	switch {
	case t.ChangedFraction != nil:
		return float64(*t.ChangedFraction), true
	case t.Numel <= 0:
		return 0, false
	case t.RequantMismatchElems != nil:
		return float64(*t.RequantMismatchElems) / float64(t.Numel), true
	case t.ChangedElems != nil:
		return float64(*t.ChangedElems) / float64(t.Numel), true
	}
	return 0, false
}

// ByLayer aggregates tensor rows per decoder layer (in layer order), then
// per mtp, visual and other group, leaving out empty ones.
func ByLayer(rows []Tensor) []LayerSummary {
	type acc struct {
		s       LayerSummary
		lo, hi  float64
		hasFrac bool
		relSum  float64
		relN    int64
	}
	text := map[int]*acc{}
	groups := map[string]*acc{}
	maxLayer := -1
	for i := range rows {
		t := &rows[i]
		g, _, layer := ckpt.GroupOf(t.Name)
		var a *acc
		if layer >= 0 {
			if a = text[layer]; a == nil {
				l := layer
				a = &acc{s: LayerSummary{Group: g, Layer: &l}}
				text[layer] = a
			}
			maxLayer = max(maxLayer, layer)
		} else if a = groups[g]; a == nil {
			a = &acc{s: LayerSummary{Group: g}}
			groups[g] = a
		}
		a.s.Tensors++
		a.s.Relations.Add(t.Relation)
		switch t.Relation {
		case Identical, RequantIdentical:
			a.s.Identical++
		case NoChangeSeen:
			a.s.NoChangeSeen++
		case SameHeader:
		default:
			a.s.Changed++
		}
		if f, ok := t.ChangedFractionOf(); ok {
			if !a.hasFrac || f < a.lo {
				a.lo = f
			}
			if !a.hasFrac || f > a.hi {
				a.hi = f
			}
			a.hasFrac = true
		}
		if t.RelL2 != nil {
			if r := float64(*t.RelL2); !math.IsNaN(r) && !math.IsInf(r, 0) {
				a.relSum += r
				a.relN++
			}
		}
	}
	var out []LayerSummary
	emit := func(a *acc) {
		if a.hasFrac {
			a.s.ChangedFractionRange = &[2]Float{Float(a.lo), Float(a.hi)}
		}
		if a.relN > 0 {
			m := Float(a.relSum / float64(a.relN))
			a.s.MeanRelL2 = &m
		}
		out = append(out, a.s)
	}
	for l := 0; l <= maxLayer; l++ {
		if a := text[l]; a != nil {
			emit(a)
		}
	}
	for _, g := range ckpt.Groups() {
		if a := groups[g]; a != nil {
			emit(a)
		}
	}
	return out
}

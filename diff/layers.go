package diff

import (
	"math"
	"strconv"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Tally is the picture of a set of tensor rows (a group, a decoder
// layer). The counts are one per relation, each counting that relation
// only (changed counts relation changed, not tensors removed, retyped or
// re-quantised), so they add up to Tensors. The statistics are over the
// changed tensors only, the rows counted in Changed: identical,
// requant_identical and sampled tensors without a difference do not
// dilute them, and dtype_changed rows keep their own.
type Tally struct {
	Tensors int64 `json:"tensors"`
	Summary
	// ChangedFractionRange is the smallest and largest changed fraction
	// (ChangedFractionOf: changed elements over those compared) of the
	// changed tensors whose elements were counted; ChangedMeanRelL2 is the
	// mean rel_l2 of the changed tensors with a finite one. Both are
	// absent when no changed tensor has one.
	ChangedFractionRange *[2]Float `json:"changed_fraction_range,omitempty"`
	ChangedMeanRelL2     *Float    `json:"changed_mean_rel_l2,omitempty"`
}

// tallier accumulates a Tally row by row.
type tallier struct {
	t       Tally
	lo, hi  float64
	hasFrac bool
	relSum  float64
	relN    int64
}

func (a *tallier) add(t *Tensor) {
	a.t.Tensors++
	a.t.add(t.Relation)
	if t.Relation != Changed {
		return
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

func (a *tallier) tally() Tally {
	t := a.t
	if a.hasFrac {
		t.ChangedFractionRange = &[2]Float{Float(a.lo), Float(a.hi)}
	}
	if a.relN > 0 {
		m := Float(a.relSum / float64(a.relN))
		t.ChangedMeanRelL2 = &m
	}
	return t
}

// LayerSummary is the per-layer picture of a comparison: one decoder
// layer of the text model, or the whole of the mtp, visual or other group
// (the groups of ckpt.GroupOf).
type LayerSummary struct {
	Group string `json:"group"`
	// Layer is the decoder layer (text_layers only).
	Layer *int `json:"layer,omitempty"`
	Tally
}

// Label names the layer for tables: the layer number, or the group.
func (l LayerSummary) Label() string {
	if l.Layer != nil {
		return "layer " + strconv.Itoa(*l.Layer)
	}
	return l.Group
}

// ChangedFractionOf returns the fraction of a row's elements that changed:
// ChangedFraction when set (sampled diffs: of the elements compared), else
// changed_elems / numel (across dtypes, requant pairs included: elements
// whose decoded values differ); false when elements were not counted.
func (t *Tensor) ChangedFractionOf() (float64, bool) {
	switch {
	case t.ChangedFraction != nil:
		return float64(*t.ChangedFraction), true
	case t.Numel <= 0:
		return 0, false
	case t.ChangedElems != nil:
		return float64(*t.ChangedElems) / float64(t.Numel), true
	}
	return 0, false
}

// groupSummaries tallies tensor rows per group (ckpt.Groups order), leaving out
// empty ones.
func groupSummaries(rows []Tensor) []GroupSummary {
	acc := map[string]*tallier{}
	for i := range rows {
		t := &rows[i]
		a := acc[t.Group]
		if a == nil {
			a = &tallier{}
			acc[t.Group] = a
		}
		a.add(t)
	}
	var out []GroupSummary
	for _, g := range ckpt.Groups() {
		if a := acc[g]; a != nil {
			out = append(out, GroupSummary{Group: g, Tally: a.tally()})
		}
	}
	return out
}

// ByLayer tallies tensor rows per decoder layer (in layer order), then
// per mtp, visual and other group, leaving out empty ones.
func ByLayer(rows []Tensor) []LayerSummary {
	text := map[int]*tallier{}
	groups := map[string]*tallier{}
	maxLayer := -1
	for i := range rows {
		t := &rows[i]
		g, _, layer := ckpt.GroupOf(t.Name)
		var a *tallier
		if layer >= 0 {
			if a = text[layer]; a == nil {
				a = &tallier{}
				text[layer] = a
			}
			maxLayer = max(maxLayer, layer)
		} else if a = groups[g]; a == nil {
			a = &tallier{}
			groups[g] = a
		}
		a.add(t)
	}
	var out []LayerSummary
	for l := 0; l <= maxLayer; l++ {
		if a := text[l]; a != nil {
			layer := l
			out = append(out, LayerSummary{Group: ckpt.GroupText, Layer: &layer, Tally: a.tally()})
		}
	}
	for _, g := range ckpt.Groups() {
		if a := groups[g]; a != nil {
			out = append(out, LayerSummary{Group: g, Tally: a.tally()})
		}
	}
	return out
}

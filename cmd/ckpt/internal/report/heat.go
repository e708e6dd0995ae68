// Package report renders the pictures of a diff result for people: the
// per-layer heatmap strip of `ckpt diff --by layer` in a terminal and the
// self-contained HTML page of `ckpt diff --format html`. It renders the
// result document (diff.Result) only; nothing here reads a checkpoint.
package report

import (
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/diff"
)

// State is what a heatmap cell shows.
type State uint8

// States of a cell, in legend order.
const (
	Absent      State = iota // no tensor of this kind in the layer
	Same                     // identical, or no difference seen in a sample
	Level                    // changed: a level 1..4 of the metric
	Unmeasured               // changed, without the metric (bytes mode, no elements counted)
	NonFinite                // changed, the metric is NaN or Inf
	Requant                  // requant_identical(_seen): another dtype, the same values
	NotCompared              // same_header: data not compared (header mode, --sample)
	Shape                    // shape_changed
	OnlyBase                 // only_in_base
	OnlyFT                   // only_in_ft
)

// Metric is the statistic a heatmap is coloured by.
type Metric uint8

// Metrics of a heatmap.
const (
	RelL2           Metric = iota // rel_l2, by decades below the largest
	ChangedFraction               // changed elements over those compared
)

func (m Metric) String() string {
	if m == ChangedFraction {
		return "changed fraction"
	}
	return "rel_l2"
}

// Levels is the number of levels of a changed cell.
const Levels = 4

// Cell is one tensor kind of one layer: the tensor (a weight, a norm...)
// and its quantisation bookkeeping (scale companions).
type Cell struct {
	Tensor     *diff.Tensor   // the tensor itself; nil when only companions exist
	Companions []*diff.Tensor // e.g. <module>.weight_scale_inv
}

// Empty reports whether the layer has no tensor of the cell's kind.
func (c Cell) Empty() bool { return c.Tensor == nil && len(c.Companions) == 0 }

// Column is one tensor kind of a grid: Kind is the name after the layer
// number (without ".weight"), Label a short label (at most 4 characters
// for the known kinds), Section the first dotted segment of Kind
// (self_attn, linear_attn, mlp; "" for the layer's own norms).
type Column struct{ Kind, Label, Section string }

// Row is one layer of a grid; Cells align with the grid's Columns.
type Row struct {
	Label string // "0", "63", "mtp 0"
	Group string // ckpt.GroupText, ckpt.GroupMTP, ...
	Stack string // e.g. "model.language_model.layers"
	Layer int
	Cells []Cell
}

// Grid is a heatmap: one row per layer of one or more layer stacks of the
// same tensor kinds (the decoder layers and the MTP head's layers share
// one grid).
type Grid struct {
	Title   string
	Decoder bool // the decoder layers (and the MTP head's layers)
	Columns []Column
	Rows    []Row
}

// Single is a tensor outside any layer stack (embeddings, final norm,
// lm_head, the MTP head's fc and norms, the vision merger).
type Single struct {
	Group string
	Cell  Cell
}

// Heatmap is the picture of a diff result: the grids of its layer stacks
// and the tensors outside them.
type Heatmap struct {
	Grids   []Grid
	Singles []Single
	// relTop is the decade of the largest finite rel_l2 of a changed
	// tensor (its floor(log10)); hasRel is false when there is none.
	relTop int
	hasRel bool
	// seen is set when a sampled tensor showed no difference
	// (no_change_seen): "no difference" is then "no difference found".
	seen bool
}

// SameLabel is the legend's words for a cell without a difference.
func (h *Heatmap) SameLabel() string {
	if h.seen {
		return "no difference found"
	}
	return "no difference"
}

// stackRe splits a layer-stack tensor name: prefix, "layers"/"blocks",
// the layer number and the rest.
var stackRe = regexp.MustCompile(`^(?:(.*)\.)?(layers|blocks)\.(\d{1,9})\.(.+)$`)

// Build makes the heatmap of a diff result's tensor rows.
func Build(res *diff.Result) *Heatmap {
	h := &Heatmap{}
	a := &heatAcc{grids: map[string]*gridAcc{}, singles: map[string]*Cell{}, textStacks: map[string]bool{}}
	for i := range res.Tensors {
		t := &res.Tensors[i]
		h.seen = h.seen || t.Relation == diff.NoChangeSeen
		a.add(t)
	}
	// Decoder grids first, then the others in order of appearance.
	sort.SliceStable(a.order, func(i, j int) bool { return a.order[i] == "decoder" && a.order[j] != "decoder" })
	for _, key := range a.order {
		h.Grids = append(h.Grids, a.grid(a.grids[key]))
	}
	h.Singles = a.singleList()
	h.setRelTop()
	return h
}

type rowKey struct {
	stack string
	layer int
}

// gridAcc gathers the rows and cells of one grid.
type gridAcc struct {
	grid  *Grid
	rows  map[rowKey]*Row
	cells map[rowKey]map[string]*Cell
	kinds []string // first appearance
	seen  map[string]bool
}

// heatAcc gathers a heatmap's grids (in order of appearance) and its
// tensors outside any layer stack, before they are sorted.
type heatAcc struct {
	order       []string
	grids       map[string]*gridAcc
	singles     map[string]*Cell
	singleOrder []string
	textStacks  map[string]bool
}

// add puts one tensor row into the cell of its grid, row and kind, or
// into the cell of its kind outside the layer stacks.
func (a *heatAcc) add(t *diff.Tensor) {
	m := stackRe.FindStringSubmatch(t.Name)
	if m == nil {
		kind, companion := kindOf(t.Name)
		c := a.singles[kind]
		if c == nil {
			c = &Cell{}
			a.singles[kind] = c
			a.singleOrder = append(a.singleOrder, kind)
		}
		addTo(c, t, companion)
		return
	}
	stack := m[2]
	if m[1] != "" {
		stack = m[1] + "." + m[2]
	}
	layer, _ := strconv.Atoi(m[3])
	group := t.Group
	if group == "" {
		group, _, _ = ckpt.GroupOf(t.Name)
	}
	key := group + "\x00" + stack
	decoder := group == ckpt.GroupText || group == ckpt.GroupMTP
	if decoder {
		key = "decoder"
	}
	if group == ckpt.GroupText {
		a.textStacks[stack] = true
	}
	g := a.grids[key]
	if g == nil {
		title := group + ": " + stack
		if decoder {
			title = "decoder layers"
		}
		g = &gridAcc{grid: &Grid{Title: title, Decoder: decoder}, rows: map[rowKey]*Row{}, cells: map[rowKey]map[string]*Cell{}, seen: map[string]bool{}}
		a.grids[key] = g
		a.order = append(a.order, key)
	}
	rk := rowKey{stack, layer}
	if g.rows[rk] == nil {
		g.rows[rk] = &Row{Group: group, Stack: stack, Layer: layer}
		g.cells[rk] = map[string]*Cell{}
	}
	kind, companion := kindOf(m[4])
	if !g.seen[kind] {
		g.seen[kind] = true
		g.kinds = append(g.kinds, kind)
	}
	c := g.cells[rk][kind]
	if c == nil {
		c = &Cell{}
		g.cells[rk][kind] = c
	}
	addTo(c, t, companion)
}

// grid is the finished grid of g: its columns, and its rows in group,
// stack and layer order, labelled, with one cell per column.
func (a *heatAcc) grid(g *gridAcc) Grid {
	grid := g.grid
	grid.Columns = columns(g.kinds)
	var keys []rowKey
	for rk := range g.rows {
		keys = append(keys, rk)
	}
	groupRank := func(r *Row) int { return slices.Index(ckpt.Groups(), r.Group) }
	sort.Slice(keys, func(i, j int) bool {
		a, b := g.rows[keys[i]], g.rows[keys[j]]
		if ra, rb := groupRank(a), groupRank(b); ra != rb {
			return ra < rb
		}
		if a.Stack != b.Stack {
			return a.Stack < b.Stack
		}
		return a.Layer < b.Layer
	})
	for _, rk := range keys {
		r := g.rows[rk]
		r.Label = strconv.Itoa(r.Layer)
		switch {
		case r.Group == ckpt.GroupMTP:
			r.Label = "mtp " + r.Label
		case r.Group == ckpt.GroupText && len(a.textStacks) > 1:
			r.Label = ckpt.EscapeName(r.Stack) + " " + r.Label
		}
		for _, col := range grid.Columns {
			c := Cell{}
			if p := g.cells[rk][col.Kind]; p != nil {
				c = *p
			}
			r.Cells = append(r.Cells, c)
		}
		grid.Rows = append(grid.Rows, *r)
	}
	return *grid
}

// singleList is the tensors outside the layer stacks, in group order,
// then in order of appearance.
func (a *heatAcc) singleList() []Single {
	var out []Single
	for _, kind := range a.singleOrder {
		c := a.singles[kind]
		g := ""
		if t := c.primary(); t != nil {
			g = t.Group
		}
		out = append(out, Single{Group: g, Cell: *c})
	}
	sort.SliceStable(out, func(i, j int) bool {
		return slices.Index(ckpt.Groups(), out[i].Group) < slices.Index(ckpt.Groups(), out[j].Group)
	})
	return out
}

// setRelTop sets the decade of the largest rel_l2 shown as a level, which
// anchors the rel_l2 levels.
func (h *Heatmap) setRelTop() {
	maxRel := 0.0
	visit := func(c Cell) {
		t, st := c.shown()
		if t == nil || st != Level || t.RelL2 == nil {
			return
		}
		if v := float64(*t.RelL2); v > maxRel && !math.IsInf(v, 0) {
			maxRel = v
		}
	}
	for _, g := range h.Grids {
		for _, r := range g.Rows {
			for _, c := range r.Cells {
				visit(c)
			}
		}
	}
	for _, s := range h.Singles {
		visit(s.Cell)
	}
	if maxRel > 0 {
		h.hasRel = true
		h.relTop = int(math.Floor(math.Log10(maxRel)))
	}
}

// kindOf returns the kind of a name (the part after the layer number):
// "mlp.up_proj.weight" and its "mlp.up_proj.weight_scale_inv" are both
// kind "mlp.up_proj", the second a companion.
func kindOf(rest string) (kind string, companion bool) {
	if ckpt.IsBookkeeping(rest) {
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			return rest[:i], true
		}
		return rest, true
	}
	return strings.TrimSuffix(rest, ".weight"), false
}

func addTo(c *Cell, t *diff.Tensor, companion bool) {
	if companion || c.Tensor != nil {
		c.Companions = append(c.Companions, t)
		return
	}
	c.Tensor = t
}

// primary is the row a cell stands for: the tensor, else its first
// companion.
func (c Cell) primary() *diff.Tensor {
	if c.Tensor != nil {
		return c.Tensor
	}
	if len(c.Companions) > 0 {
		return c.Companions[0]
	}
	return nil
}

// shown returns the row whose relation the cell shows and that relation's
// state (Level standing for any changed row with a metric): the tensor's,
// unless it shows no difference and a companion does (bytes mode: the same
// codes under another scale).
func (c Cell) shown() (*diff.Tensor, State) {
	t := c.primary()
	if t == nil {
		return nil, Absent
	}
	st := relState(t.Relation)
	if st == Same {
		for _, s := range c.Companions {
			if s2 := relState(s.Relation); s2 != Same && s2 != NotCompared {
				return s, s2
			}
		}
	}
	return t, st
}

func relState(r diff.Relation) State {
	switch r {
	case diff.Identical, diff.NoChangeSeen:
		return Same
	case diff.RequantIdentical, diff.RequantIdenticalSeen:
		return Requant
	case diff.SameHeader:
		return NotCompared
	case diff.ShapeChanged:
		return Shape
	case diff.OnlyInBase:
		return OnlyBase
	case diff.OnlyInFT:
		return OnlyFT
	}
	return Level // changed, dtype_changed
}

// Classify returns what a cell shows by metric m: its state and, for
// Level, the level 1..Levels.
func (h *Heatmap) Classify(c Cell, m Metric) (State, int) {
	t, st := c.shown()
	if st != Level {
		return st, 0
	}
	if t != c.primary() { // a companion differs: the values changed, unmeasured
		return Unmeasured, 0
	}
	v, ok := metricOf(t, m)
	switch {
	case !ok:
		return Unmeasured, 0
	case math.IsNaN(v) || math.IsInf(v, 0):
		return NonFinite, 0
	}
	return Level, h.level(v, m)
}

func metricOf(t *diff.Tensor, m Metric) (float64, bool) {
	if m == ChangedFraction {
		return t.ChangedFractionOf()
	}
	if t.RelL2 == nil {
		return 0, false
	}
	return float64(*t.RelL2), true
}

// fractionBounds are the lower bounds of the changed-fraction levels 2..4.
var fractionBounds = [Levels - 1]float64{0.01, 0.1, 0.5}

func (h *Heatmap) level(v float64, m Metric) int {
	if m == ChangedFraction {
		l := 1
		for _, b := range fractionBounds {
			if v >= b {
				l++
			}
		}
		return l
	}
	if v <= 0 || !h.hasRel {
		return 1
	}
	d := int(math.Floor(math.Log10(v)))
	return max(1, min(Levels, Levels-(h.relTop-d)))
}

// LevelRanges describes the values of levels 1..Levels of metric m, e.g.
// "<1e-4", "1e-4..1e-3", "1e-3..1e-2", ">=1e-2".
func (h *Heatmap) LevelRanges(m Metric) [Levels]string {
	var b [Levels - 1]string
	if m == ChangedFraction {
		for i, f := range fractionBounds {
			b[i] = strconv.FormatFloat(100*f, 'g', -1, 64) + "%"
		}
	} else {
		top := h.relTop
		if !h.hasRel {
			top = -2
		}
		for i := range b {
			b[i] = "1e" + strconv.Itoa(top-(Levels-2)+i)
		}
	}
	var out [Levels]string
	out[0] = "<" + b[0]
	for i := 1; i < Levels-1; i++ {
		out[i] = b[i-1] + ".." + b[i]
	}
	out[Levels-1] = ">=" + b[Levels-2]
	return out
}

// knownKinds orders and labels the tensor kinds of the decoder layers of
// the Qwen3.5 family (full attention, Gated DeltaNet linear attention,
// dense MLP, the layer's norms) and of a vision tower's blocks.
var knownKinds = []struct{ kind, label string }{
	{"self_attn.q_proj", "q"}, {"self_attn.k_proj", "k"}, {"self_attn.v_proj", "v"}, {"self_attn.o_proj", "o"},
	{"self_attn.q_norm", "qn"}, {"self_attn.k_norm", "kn"},
	{"linear_attn.in_proj_qkv", "qkv"}, {"linear_attn.in_proj_z", "z"}, {"linear_attn.in_proj_a", "a"},
	{"linear_attn.in_proj_b", "b"}, {"linear_attn.out_proj", "out"}, {"linear_attn.conv1d", "cv"},
	{"linear_attn.A_log", "A"}, {"linear_attn.dt_bias", "dt"}, {"linear_attn.norm", "n"},
	{"mlp.gate_proj", "g"}, {"mlp.up_proj", "u"}, {"mlp.down_proj", "d"},
	{"input_layernorm", "in"}, {"post_attention_layernorm", "po"},
	{"attn.qkv", "qkv"}, {"attn.qkv.bias", "qkvb"}, {"attn.proj", "o"}, {"attn.proj.bias", "ob"},
	{"mlp.linear_fc1", "fc1"}, {"mlp.linear_fc1.bias", "f1b"}, {"mlp.linear_fc2", "fc2"}, {"mlp.linear_fc2.bias", "f2b"},
	{"norm1", "n1"}, {"norm1.bias", "n1b"}, {"norm2", "n2"}, {"norm2.bias", "n2b"},
}

// sectionRank orders the sections: attention, MLP, then the rest.
func sectionRank(s string) int {
	switch s {
	case "self_attn", "linear_attn", "attn":
		return 0
	case "mlp":
		return 1
	}
	return 2
}

// columns orders a grid's kinds (known kinds in their order, the others
// in order of appearance, section by section) and labels them uniquely.
func columns(kinds []string) []Column {
	rank := func(k string) int {
		for i, kk := range knownKinds {
			if kk.kind == k {
				return i
			}
		}
		return len(knownKinds)
	}
	var sections []string
	for _, k := range kinds {
		if s := section(k); !slices.Contains(sections, s) {
			sections = append(sections, s)
		}
	}
	sort.SliceStable(sections, func(i, j int) bool { return sectionRank(sections[i]) < sectionRank(sections[j]) })
	var out []Column
	used := map[string]bool{}
	for _, s := range sections {
		var ks []string
		for _, k := range kinds {
			if section(k) == s {
				ks = append(ks, k)
			}
		}
		sort.SliceStable(ks, func(i, j int) bool { return rank(ks[i]) < rank(ks[j]) })
		for _, k := range ks {
			label := ""
			if r := rank(k); r < len(knownKinds) {
				label = knownKinds[r].label
			} else {
				label = shortLabel(k)
			}
			for n := 2; used[label]; n++ {
				label = strings.TrimRight(label, "0123456789")
				label = label[:min(len(label), 3)] + strconv.Itoa(n)
			}
			used[label] = true
			// label and section are shown only: escaped (a kind comes from
			// tensor names); the kind is also a key, escaped where shown
			out = append(out, Column{Kind: k, Label: ckpt.EscapeName(label), Section: ckpt.EscapeName(s)})
		}
	}
	return out
}

func section(kind string) string {
	kind = strings.TrimSuffix(kind, ".bias")
	if i := strings.IndexByte(kind, '.'); i >= 0 {
		return kind[:i]
	}
	return ""
}

// shortLabel derives a label of at most 4 characters from a kind's last
// segment (in_proj_x → x, gate_up_proj → gate...).
func shortLabel(kind string) string {
	last := kind[strings.LastIndexByte(kind, '.')+1:]
	if last == "bias" {
		return shortLabel(strings.TrimSuffix(kind, ".bias")) + "b"
	}
	last = strings.TrimPrefix(last, "in_proj_")
	last = strings.TrimSuffix(last, "_proj")
	if len(last) > 4 {
		last = last[:3]
	}
	if last == "" {
		last = "?"
	}
	return last
}

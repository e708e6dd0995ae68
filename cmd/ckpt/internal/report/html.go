package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/diff"
)

// HTML is the --format value of the HTML page.
const HTML = "html"

// Page is what WriteHTML renders: the result and what the command
// derived from it for its other formats (so that the page says the same).
type Page struct {
	Result  *diff.Result
	Heatmap *Heatmap
	Mode    string // the mode line ("values, sampled: ...")
	Verdict string // "differences found", ...
	// Relations are the relations the count tables show, in order.
	Relations  []diff.Relation
	Layers     []diff.LayerSummary
	Config     []ConfigLine
	SampleLine string // what a sampled diff read; "" otherwise
}

// ConfigLine is one config.json difference as the text output words it.
type ConfigLine struct{ Path, Change, Text string }

//go:embed page.html.tmpl
var pageTemplate string

// tmpl is the page; its text copied from inputs is escaped for HTML by
// html/template and, with name (ckpt.EscapeName), of controls and
// bidirectional characters.
var tmpl = template.Must(template.New("page").Funcs(template.FuncMap{"name": ckpt.EscapeName}).Parse(pageTemplate))

// view types of the template.
type (
	hCell struct{ Class, Text, Title string }
	hRow  struct {
		Label string
		Cells []hCell
	}
	hSection struct {
		Name string
		Span int
	}
	hLegend struct{ Class, Text, Label string }
	hMap    struct {
		Metric   string
		Sections []hSection
		Columns  []Column
		Rows     []hRow
		Legend   []hLegend
	}
	hGrid struct {
		Title string
		Maps  []hMap
	}
	hSingle struct {
		Group, Name, Relation string
		Rel, Frac             hCell
		RelL2, Changed        string
	}
	hTable struct {
		Header []string
		Right  map[int]bool
		Rows   [][]string
	}
	hView struct {
		P        *Page
		Grids    []hGrid
		Singles  []hSingle
		Counts   hTable
		Layers   hTable
		Groups   hTable
		Changed  hTable
		Keys     string
		NChanged int
	}
)

// WriteHTML writes p as one self-contained HTML page: inline CSS, no
// script, no external resource (its Content-Security-Policy forbids
// them).
func WriteHTML(w io.Writer, p *Page) error {
	h := p.Heatmap
	if h == nil {
		h = Build(p.Result)
	}
	v := hView{P: p}
	for _, g := range h.Grids {
		hg := hGrid{Title: g.Title}
		for _, m := range []Metric{RelL2, ChangedFraction} {
			hm := hMap{Metric: m.String(), Columns: g.Columns}
			for j, c := range g.Columns {
				if j == 0 || c.Section != g.Columns[j-1].Section {
					hm.Sections = append(hm.Sections, hSection{Name: sectionName(c.Section)})
				}
				hm.Sections[len(hm.Sections)-1].Span++
			}
			used := map[State]bool{}
			for _, r := range g.Rows {
				hr := hRow{Label: r.Label}
				for j, c := range r.Cells {
					cell := h.htmlCell(c, m)
					cell.Title = r.Label + " " + ckpt.EscapeName(g.Columns[j].Kind) + ": " + cell.Title
					if c.Empty() {
						cell.Title = r.Label + " " + ckpt.EscapeName(g.Columns[j].Kind) + ": no such tensor"
					}
					st, _ := h.Classify(c, m)
					used[st] = true
					hr.Cells = append(hr.Cells, cell)
				}
				hm.Rows = append(hm.Rows, hr)
			}
			hm.Legend = h.htmlLegend(m, used)
			hg.Maps = append(hg.Maps, hm)
		}
		v.Grids = append(v.Grids, hg)
	}
	for _, s := range h.Singles {
		t := s.Cell.primary()
		if t == nil {
			continue
		}
		rel, frac := h.htmlCell(s.Cell, RelL2), h.htmlCell(s.Cell, ChangedFraction)
		hs := hSingle{Group: s.Group, Name: ckpt.EscapeName(t.Name), Relation: string(t.Relation), Rel: rel, Frac: frac,
			RelL2: floatText(t.RelL2), Changed: "-"}
		if f, ok := t.ChangedFractionOf(); ok {
			hs.Changed = percent(f)
		}
		v.Singles = append(v.Singles, hs)
	}
	res := p.Result
	k := res.Keys
	v.Keys = fmt.Sprintf("%d in base, %d in ft, %d common, %d only in base, %d only in ft", k.Base, k.FT, k.Common, len(k.OnlyInBase), len(k.OnlyInFT))
	v.Counts = hTable{Header: []string{"relation", "tensors"}, Right: map[int]bool{1: true}}
	for _, r := range p.Relations {
		v.Counts.Rows = append(v.Counts.Rows, []string{string(r), strconv.FormatInt(res.Summary.Count(r), 10)})
	}
	tally := func(first string, t diff.Tally) []string {
		row := []string{first, strconv.FormatInt(t.Tensors, 10)}
		for _, r := range p.Relations {
			row = append(row, strconv.FormatInt(t.Count(r), 10))
		}
		fr := "-"
		if r := t.ChangedFractionRange; r != nil {
			fr = percent(float64(r[0]))
			if r[1] != r[0] {
				fr += "–" + percent(float64(r[1]))
			}
		}
		return append(row, fr, floatText(t.ChangedMeanRelL2))
	}
	header := func(first string) hTable {
		t := hTable{Header: []string{first, "tensors"}, Right: map[int]bool{}}
		for _, r := range p.Relations {
			t.Header = append(t.Header, string(r))
		}
		t.Header = append(t.Header, "changed % range", "changed mean rel_l2")
		for i := 1; i < len(t.Header); i++ {
			t.Right[i] = true
		}
		return t
	}
	v.Layers = header("layer")
	for _, l := range p.Layers {
		v.Layers.Rows = append(v.Layers.Rows, tally(strings.TrimPrefix(l.Label(), "layer "), l.Tally))
	}
	v.Groups = header("group")
	for _, g := range res.Groups {
		v.Groups.Rows = append(v.Groups.Rows, tally(g.Group, g.Tally))
	}
	v.Changed = hTable{Header: []string{"tensor", "relation", "base", "ft", "shape", "changed %", "max_abs_diff", "rel_l2", "cosine", "note"},
		Right: map[int]bool{5: true, 6: true, 7: true, 8: true}}
	for i := range res.Tensors {
		t := &res.Tensors[i]
		if st := relState(t.Relation); st == Same || st == NotCompared {
			continue
		}
		ch := "-"
		if f, ok := t.ChangedFractionOf(); ok {
			ch = percent(f)
		}
		v.Changed.Rows = append(v.Changed.Rows, []string{ckpt.EscapeName(t.Name), string(t.Relation), string(t.BaseDType), string(t.FTDType),
			ckpt.FormatShape(t.Shape), ch, floatText(t.MaxAbsDiff), floatText(t.RelL2), floatText(t.Cosine), t.Note})
	}
	v.NChanged = len(v.Changed.Rows)
	return tmpl.Execute(w, v)
}

// stateClass and stateText are the CSS class and the cell text of a state.
var (
	stateClass = map[State]string{Absent: "na", Same: "same", Unmeasured: "unm", NonFinite: "nf", Requant: "rq",
		NotCompared: "nc", Shape: "sh", OnlyBase: "ob", OnlyFT: "of"}
	stateText = map[State]string{Unmeasured: "*", NonFinite: "!", Requant: "r", NotCompared: "?", Shape: "x", OnlyBase: "<", OnlyFT: ">"}
	stateName = map[State]string{Same: "no difference", Unmeasured: "changed, not measured", NonFinite: "nan/inf",
		Requant: "re-quantises exactly", NotCompared: "data not compared", Shape: "shape changed",
		OnlyBase: "only in base", OnlyFT: "only in ft", Absent: "no such tensor"}
)

func (h *Heatmap) htmlCell(c Cell, m Metric) hCell {
	st, lv := h.Classify(c, m)
	cell := hCell{Class: stateClass[st], Text: stateText[st]}
	if st == Level {
		cell.Class = "l" + strconv.Itoa(lv)
	}
	t := c.primary()
	if t == nil {
		return cell
	}
	parts := []string{string(t.Relation)}
	if t.RelL2 != nil {
		parts = append(parts, "rel_l2 "+floatText(t.RelL2))
	}
	if f, ok := t.ChangedFractionOf(); ok {
		parts = append(parts, "changed "+percent(f)+" %")
	}
	if t.Cosine != nil {
		parts = append(parts, "cosine "+floatText(t.Cosine))
	}
	for _, s := range c.Companions {
		last := s.Name[strings.LastIndexByte(s.Name, '.')+1:]
		parts = append(parts, last+" "+string(s.Relation))
	}
	cell.Title = strings.Join(parts, ", ")
	return cell
}

func (h *Heatmap) htmlLegend(m Metric, used map[State]bool) []hLegend {
	out := []hLegend{{Class: "same", Label: h.SameLabel()}}
	for i, r := range h.LevelRanges(m) {
		out = append(out, hLegend{Class: "l" + strconv.Itoa(i+1), Label: r})
	}
	for _, st := range []State{Unmeasured, NonFinite, Requant, NotCompared, Shape, OnlyBase, OnlyFT, Absent} {
		if used[st] {
			out = append(out, hLegend{Class: stateClass[st], Text: stateText[st], Label: stateName[st]})
		}
	}
	return out
}

func floatText(p *diff.Float) string { return FloatText(p, 4) }

// FloatText renders a statistic of a diff with digits significant digits:
// "-" when absent, "nan" and "inf" spelled out (the terminal tables and the
// report pages show the same text).
func FloatText(p *diff.Float, digits int) string {
	if p == nil {
		return "-"
	}
	v := float64(*p)
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 0):
		return "inf"
	}
	return strconv.FormatFloat(v, 'g', digits, 64)
}

func percent(f float64) string {
	if f == 0 {
		return "0"
	}
	return strconv.FormatFloat(100*f, 'g', 3, 64)
}

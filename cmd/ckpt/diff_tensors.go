package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/report"
	"github.com/ckpt-dev/ckpt/diff"
)

// printTensors renders the tensor rows; identical ones (and, in a sampled
// diff, no_change_seen ones) only with --all.
func printTensors(w io.Writer, format string, res *diff.Result, all bool) error {
	stats := res.Mode == diff.ModeValues
	sampled := res.Sample != nil
	g := &output.Grid{Header: []string{"name", "relation", "base", "ft", "shape"}, Right: map[int]bool{}, Color: map[int]bool{1: true}}
	if stats {
		g.Header = append(g.Header, "changed")
		if sampled {
			g.Header = append(g.Header, "of", "changed %", "95 % interval")
		}
		g.Header = append(g.Header, "max_abs_diff", "rel_l2", "cosine")
		for i := 5; i < len(g.Header); i++ {
			g.Right[i] = true
		}
	}
	g.Header = append(g.Header, "note")
	tableForPeople(g, map[string]int{"rel_l2": 1, "note": 2, "shape": 3, "changed %": 4, "base": 5, "ft": 5,
		"changed": 6, "95 % interval": 7, "of": 8, "max_abs_diff": 9, "cosine": 10})
	hidden := 0
	for _, t := range res.Tensors {
		if !all && (t.Relation == diff.Identical || t.Relation == diff.SameHeader || t.Relation == diff.NoChangeSeen) {
			hidden++
			continue
		}
		row := []string{ckpt.EscapeName(t.Name), string(t.Relation), dtypeCell(t.BaseDType), dtypeCell(t.FTDType), output.Shape(t.Shape)}
		if stats {
			row = append(row, intCell(t.ChangedElems))
			if sampled {
				row = append(row, sampledCells(t)...)
			}
			row = append(row, floatCell(t.MaxAbsDiff, 4), floatCell(t.RelL2, 4), floatCell(t.Cosine, 6))
		}
		g.Rows = append(g.Rows, append(row, tensorNote(t)))
	}
	title := fmt.Sprintf("tensors: %d listed", len(g.Rows))
	if hidden > 0 {
		what := "identical"
		if sampled {
			what = "identical or no_change_seen"
		}
		if res.Sampled && res.Summary.SameHeader > 0 {
			what += " or same_header (data not in the --sample)"
		}
		title += fmt.Sprintf(", %d %s not listed (--all lists them)", hidden, what)
		if res.Mode == diff.ModeHeader {
			title = fmt.Sprintf("tensors: %d listed, %d with the same dtype and shape not listed (--all lists them)", len(g.Rows), hidden)
		}
	}
	g.Title = title
	if len(g.Rows) == 0 && format != output.CSV {
		_, err := fmt.Fprintln(w, title)
		return err
	}
	return g.Render(w, format)
}

// sampledCells are the "of", "changed %" and interval cells of a row of a
// sampled diff: the elements compared ("all" when read whole).
func sampledCells(t diff.Tensor) []string {
	if t.ChangedElems == nil {
		return []string{"-", "-", "-"}
	}
	of, ci := "all", "exact"
	if t.Sampled && t.SampledElems != nil {
		of = output.Int(*t.SampledElems)
		ci = fmt.Sprintf("%s–%s", percent(float64(t.ChangedFractionCI95[0])), percent(float64(t.ChangedFractionCI95[1])))
	}
	frac := "-"
	if f, ok := t.ChangedFractionOf(); ok {
		frac = percent(f)
	}
	return []string{of, frac, ci}
}

// percent renders a fraction as a percentage with three significant digits.
func percent(f float64) string {
	if f == 0 {
		return "0"
	}
	return strconv.FormatFloat(100*f, 'g', 3, 64)
}

// layerGrid is the per-layer table of --by layer: the tensors per
// relation, as in the per-group table, then the changed-fraction range
// and the mean rel_l2 of the changed tensors (those counted in changed).
func layerGrid(res *diff.Result) *output.Grid {
	rels := summaryRelations(res)
	g := &output.Grid{Title: "by layer (changed % range and changed mean rel_l2: over the tensors counted in changed)",
		Header: []string{"layer", "tensors"}, Right: map[int]bool{}}
	for _, r := range rels {
		g.Header = append(g.Header, string(r))
	}
	g.Header = append(g.Header, "changed % range", "changed mean rel_l2")
	for i := 1; i < len(g.Header); i++ {
		g.Right[i] = true
	}
	for _, l := range res.Layers {
		frac := "-"
		if r := l.ChangedFractionRange; r != nil {
			frac = percent(float64(r[0]))
			if r[1] != r[0] {
				frac += "–" + percent(float64(r[1]))
			}
		}
		row := []string{strings.TrimPrefix(l.Label(), "layer "), output.Int(l.Tensors)}
		for _, r := range rels {
			row = append(row, output.Int(l.Count(r)))
		}
		g.Rows = append(g.Rows, append(row, frac, floatCell(l.ChangedMeanRelL2, 4)))
	}
	dropZeroColumns(g, 2, 2+len(rels))
	return g
}

func dtypeCell(d numfmt.DType) string {
	if d == "" {
		return "-"
	}
	return ckpt.EscapeName(string(d))
}

func intCell(p *int64) string {
	if p == nil {
		return "-"
	}
	return output.Int(*p)
}

func floatCell(p *diff.Float, digits int) string { return report.FloatText(p, digits) }

func tensorNote(t diff.Tensor) string {
	var note string
	switch {
	case t.Note != "":
		return t.Note
	case t.Relation == diff.ShapeChanged:
		note = "ft shape " + output.Shape(t.FTShape)
	case t.RequantMismatchElems != nil && t.Relation == diff.RequantIdentical:
		note = "re-quantises exactly"
	case t.RequantMismatchElems != nil && t.Relation == diff.RequantIdenticalSeen:
		note = "the sample re-quantises exactly"
	case t.RequantMismatchElems != nil:
		note = fmt.Sprintf("re-quantising: %s code(s), %s block(s) differ", output.Int(*t.RequantMismatchElems), output.Int(*t.RequantMismatchBlocks))
	}
	// the recipe, but not ckpt's own block-FP8 recipe, the default
	if t.RequantRecipe != "" && t.RequantRecipe != numfmt.FP8Ckpt.String() && note != "" {
		note += " (" + t.RequantRecipe + ")"
	}
	if t.ZeroSignCodes > 0 {
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("%s code(s) differ only in the sign of zero", output.Int(t.ZeroSignCodes))
	}
	return note
}

// describeConfigChange renders one config difference for text output.
func describeConfigChange(c ckpt.ConfigChange) string {
	switch c.Change {
	case string(diff.OnlyInBase):
		return compactJSON(c.Base) + " → (absent)"
	case string(diff.OnlyInFT):
		return "(absent) → " + compactJSON(c.FT)
	}
	if added, removed, ok := diff.ArrayChange(c); ok {
		s := fmt.Sprintf("%d items → %d items", len(c.Base.([]any)), len(c.FT.([]any)))
		if len(added) > 0 {
			s += fmt.Sprintf("; +%d: %s", len(added), listSome(added))
		}
		if len(removed) > 0 {
			s += fmt.Sprintf("; -%d: %s", len(removed), listSome(removed))
		}
		return s
	}
	return compactJSON(c.Base) + " → " + compactJSON(c.FT)
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := ckpt.EscapeName(string(b))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// listSome renders up to three elements as JSON, then how many more.
func listSome(items []any) string {
	s := make([]string, len(items))
	for i, x := range items {
		s[i] = compactJSON(x)
	}
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + fmt.Sprintf(", ... (%d more)", len(s)-3)
	}
	return strings.Join(s, ", ")
}

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/report"
	"github.com/ckpt-dev/ckpt/diff"
)

// diffView says what printDiff shows: identical rows too (All), rows per
// layer instead of per tensor (ByLayer), no rows at all (SummaryOnly);
// Getenv (may be nil) tells the heatmap strip whether the locale is UTF-8.
type diffView struct {
	All, ByLayer, SummaryOnly bool
	Getenv                    func(string) string
}

func printDiff(w io.Writer, format string, res *diff.Result, v diffView) error {
	switch {
	case format == output.JSON && v.SummaryOnly:
		cp := *res
		cp.Tensors, cp.Layers = []diff.Tensor{}, nil
		return output.WriteJSON(w, cp.Document())
	case format == output.JSON:
		return output.WriteJSON(w, res.Document())
	case format == output.JSONL && v.SummaryOnly:
		return output.WriteJSONL(w, "tensor", []diff.Tensor{}, res.SummaryRecord())
	case format == output.JSONL && v.ByLayer:
		return output.WriteJSONL(w, "layer", res.Layers, res.SummaryRecord())
	case format == output.JSONL:
		return output.WriteJSONL(w, "tensor", res.Tensors, res.SummaryRecord())
	case format == output.CSV && v.SummaryOnly:
		return groupGrid(res).Render(w, format)
	case format == output.CSV && v.ByLayer:
		return layerGrid(res).Render(w, format)
	case format == output.CSV:
		return printTensors(w, format, res, v.All)
	case format == report.HTML:
		return writeDiffHTML(w, res, v)
	}
	// line writes one line of prose: a list item in Markdown (indent
	// nests it; its text arguments, names and values copied from the
	// inputs, escaped), else indented by two spaces per level.
	line := func(indent int, f string, args ...any) {
		if format == output.Markdown {
			for i, a := range args {
				if s, ok := a.(string); ok {
					args[i] = output.EscapeMarkdown(s)
				}
			}
			fmt.Fprintf(w, "%s- %s\n", strings.Repeat("  ", indent), fmt.Sprintf(f, args...))
			return
		}
		s := fmt.Sprintf(f, args...)
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", indent), s)
	}
	mode := string(res.Mode)
	if res.Sampled {
		mode += fmt.Sprintf(" (--sample: the data of %d of %d tensors; keys, dtypes and shapes of all)", res.SampleTensors, len(res.Tensors))
	}
	if s := res.Sample; s != nil && s.BudgetBytes > 0 {
		mode += fmt.Sprintf(", sampled: %s per side spread over the tensors (seed %d)", output.Bytes(s.BudgetBytes), s.Seed)
	} else if s != nil {
		mode += fmt.Sprintf(", sampled: %s per tensor and side (seed %d)", output.Bytes(s.BytesPerTensor), s.Seed)
	}
	line(0, "base: %s", ckpt.EscapeName(res.Base))
	line(0, "ft:   %s", ckpt.EscapeName(res.FT))
	line(0, "mode: %s", mode)
	fmt.Fprintln(w)
	k := res.Keys
	line(0, "keys: %d in base, %d in ft, %d common, %d only in base, %d only in ft", k.Base, k.FT, k.Common, len(k.OnlyInBase), len(k.OnlyInFT))
	fmt.Fprintln(w)

	notes := ""
	if n := len(res.Config) - res.ConfigDifferences(); n > 0 {
		notes = fmt.Sprintf(", %d bookkeeping note(s)", n)
	}
	line(0, "config: %d difference(s)%s", res.ConfigDifferences(), notes)
	for _, c := range res.Config {
		note := ""
		if c.Bookkeeping {
			note = " (bookkeeping: a note, not a difference)"
		}
		line(1, "%s: %s%s", ckpt.EscapeName(c.Path), describeConfigChange(c), note)
	}
	fmt.Fprintln(w)

	if !v.SummaryOnly {
		if v.ByLayer {
			if err := layerGrid(res).Render(w, format); err != nil {
				return err
			}
			fmt.Fprintln(w)
			if err := writeDiffStrip(w, format, res, v); err != nil {
				return err
			}
		} else if err := printTensors(w, format, res, v.All); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}

	if err := groupGrid(res).Render(w, format); err != nil {
		return err
	}
	fmt.Fprintln(w)
	var parts []string
	for _, r := range summaryRelations(res) {
		parts = append(parts, fmt.Sprintf("%d %s", res.Summary.Count(r), r))
	}
	line(0, "summary: %s; %s", strings.Join(parts, ", "), diffVerdict(res))
	if s := res.Sample; s != nil {
		line(0, "sample: %d tensor(s) sampled, %d read whole; read %s, %s", s.SampledTensors, s.WholeTensors,
			sideRead("base", s.Base), sideRead("ft", s.FT))
	}
	return nil
}

// diffVerdict is the verdict of the summary line.
func diffVerdict(res *diff.Result) string {
	switch {
	case res.Differs():
		return "differences found"
	case res.Summary.NoChangeSeen > 0:
		return "no differences found (a sample cannot prove identity)"
	case res.Sampled && res.Summary.SameHeader > 0:
		return fmt.Sprintf("no differences found (the data of %d tensor(s) was not compared: --sample)", res.Summary.SameHeader)
	}
	return "no differences"
}

// summaryRelations are the relations the per-group and per-layer tables
// and the summary line count: those of the diff's mode, and any other
// relation a tensor has, so that the counts of a row add up to its
// tensors.
func summaryRelations(res *diff.Result) []diff.Relation {
	rels := []diff.Relation{diff.Identical, diff.Changed, diff.RequantIdentical, diff.DTypeChanged, diff.ShapeChanged, diff.OnlyInBase, diff.OnlyInFT}
	if res.Mode == diff.ModeHeader {
		rels = append([]diff.Relation{diff.SameHeader}, rels[3:]...)
	}
	if res.Sample != nil {
		rels = append([]diff.Relation{diff.Changed, diff.NoChangeSeen, diff.Identical, diff.RequantIdentical, diff.RequantIdenticalSeen}, rels[3:]...)
	}
	for _, r := range diff.Relations {
		if res.Summary.Count(r) > 0 && !slices.Contains(rels, r) {
			rels = append(rels, r)
		}
	}
	return rels
}

// groupGrid is the per-group table: tensors per relation in each group.
func groupGrid(res *diff.Result) *output.Grid {
	rels := summaryRelations(res)
	gg := &output.Grid{Title: "by group", Header: []string{"group", "tensors"}, Right: map[int]bool{}}
	for i, r := range rels {
		gg.Header = append(gg.Header, string(r))
		gg.Right[i+1], gg.Right[i+2] = true, true
	}
	for _, s := range res.Groups {
		row := []string{s.Group, output.Int(s.Tensors)}
		for _, r := range rels {
			row = append(row, output.Int(s.Count(r)))
		}
		gg.Rows = append(gg.Rows, row)
	}
	dropZeroColumns(gg, 2, 2+len(rels))
	return gg
}

// dropZeroColumns lets a terminal table that is too narrow drop the
// relation columns from first to end (exclusive) by importance: those
// zero everywhere first (output.Grid chooses by emptiness), then the
// others from the last, changed and identical (or same_header) kept
// longest.
func dropZeroColumns(g *output.Grid, first, end int) {
	g.Drop = map[int]int{}
	for j := first; j < end; j++ {
		switch g.Header[j] {
		case string(diff.Changed):
			g.Drop[j] = 1
		case string(diff.Identical), string(diff.SameHeader):
			g.Drop[j] = 2
		default:
			g.Drop[j] = 3 + j - first
		}
	}
}

func sideRead(name string, s diff.SideRead) string {
	pct := 0.0
	if s.BytesTotal > 0 {
		pct = 100 * float64(s.BytesRead) / float64(s.BytesTotal)
	}
	reqs := ""
	if s.Requests > 0 {
		reqs = fmt.Sprintf(" (%s request(s))", output.Int(s.Requests))
	}
	return fmt.Sprintf("%s %s of %s (%.2f %%) in %s read(s)%s", name, output.Bytes(s.BytesRead), output.Bytes(s.BytesTotal), pct, output.Int(s.Reads), reqs)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/report"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/spf13/cobra"
)

type diffOptions struct {
	Base, FT string
	Format   string
	Mode     string
	Match    []string
	Exclude  []string
	Sample   int
	Seed     uint64
	Workers  int
	Progress string
	All      bool
	// SummaryOnly prints only the keys, config, per-group and summary
	// lines (no tensor rows).
	SummaryOnly bool
	// SampleBytes and SampleSeed sample byte ranges of every tensor; By
	// is "tensor" or "layer".
	SampleBytes string
	// SampleBudget spreads a total over the tensors instead.
	SampleBudget string
	SampleSeed   uint64
	By           string
	// Out is the file the report is written to (atomically) instead of
	// stdout.
	Out string
}

func (a *App) newDiffCmd() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff BASE FT",
		Short: "Compare two checkpoints: keys, config, then tensor by tensor (FP8-aware, streamed)",
		Long: `Compare a fine-tune FT against its BASE: the key sets, config.json (as JSON paths), then every
tensor of either checkpoint, with one relation each: identical, changed, requant_identical
(one side block FP8, the other a wider float that re-quantises to exactly its codes and scales),
dtype_changed, shape_changed, only_in_base, only_in_ft. In values mode (the default) the
statistics changed_elems, max_abs_diff, rel_l2 and cosine are computed over dequantised values
in float64. Data is streamed in chunks with bounded memory.

--sample-bytes SIZE compares every tensor larger than SIZE on a seeded sample of at most SIZE
bytes per side: many short ranges spread over the tensor (block-FP8 weights: runs of whole
128-column groups decoded with their scales, which are read whole), all of it over HTTP Range
for hf:// and https:// sources (each file resolved once, then one request per read, --workers
requests at a time). --sample-budget TOTAL spreads TOTAL bytes per side over the tensors in
proportion to their size instead, with a floor of 16 KiB per tensor. Smaller tensors are read
whole and classified exactly. A sampled tensor is changed when a sampled element differs, else
no_change_seen (never identical), or, for a block-FP8 / wider-float pair whose sampled codes
re-quantise exactly with their stored scales, requant_identical_seen; its row gives sampled_elems,
changed_elems of the sample, the changed fraction (changed_elems / sampled_elems) with a 95 %
interval that treats the ranges as clusters (docs/sampling.md) and the statistics of the sample,
and the summary says how many bytes of each side were read, in how many reads. --by layer counts the relations per decoder layer, mtp, visual and other,
like the per-group table (each count is of its relation only; they add up to tensors), with the
changed-fraction range and mean rel_l2 of the changed tensors, then a heatmap strip: one row per
decoder layer (and MTP layer), one cell per tensor kind (q k v o, qkv z a b out, gate up down,
norms), its glyph the rel_l2 decade below the largest (ASCII .:-=# unless on a UTF-8 terminal;
coloured on a colour terminal).

--format html writes one self-contained page (inline CSS, no script, nothing fetched): heatmaps
of rel_l2 and changed fraction per layer x tensor kind for the decoder layers, the MTP head and the
vision tower, the tensors outside the layers, the summary, per-layer and per-group tables, the
config differences and the tensors that differ. -o FILE writes any format to FILE (atomically)
instead of stdout; exit 3 when it cannot be written.

--sample N reads the data of N tensors only (and their scale companions); keys, dtypes and shapes
are compared for every tensor, the others being same_header when dtype and shape agree.

Exit status: 0 no differences (found), 1 differences, 2 unreadable input or bad command line,
3 the -o file could not be written.`,
		Example: `  ckpt diff ./base ./finetune
  ckpt diff ./base ./finetune --mode bytes --summary
  ckpt diff ./base ./finetune --format markdown > changes.md
  ckpt diff ./base ./finetune --by layer --format html -o report.html
  ckpt diff hf://Qwen/Qwen3.5-27B-FP8 hf://org/ft-FP8 --sample-bytes 64KiB --by layer`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Base, o.FT = args[0], args[1]
			return a.runDiff(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	enumFlag(f, &o.Format, "format", output.Auto, formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown, report.HTML), "output format: {} (auto: table on a terminal, text otherwise; csv: the tensor rows; markdown: for a pull request; html: a self-contained page with the per-layer heatmaps)")
	enumFlag(f, &o.Mode, "mode", string(diff.ModeValues), modeEnum, "{}")
	f.StringArrayVar(&o.Match, "match", nil, "only tensors matching this glob (`*` within a dotted segment, `**` across); repeatable")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "leave out tensors matching this glob; repeatable")
	f.IntVar(&o.Sample, "sample", 0, "compare the data of a deterministic subset of N tensors (plus their scale companions); keys, dtypes and shapes of all")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of --sample")
	f.IntVar(&o.Workers, "workers", 0, "chunks processed at once (default: the number of CPUs); with --sample-bytes/--sample-budget also the reads in flight (default 64)")
	f.StringVar(&o.SampleBytes, "sample-bytes", "", "compare a seeded sample of at most SIZE bytes (e.g. 64KiB) per tensor and side; smaller tensors whole")
	f.StringVar(&o.SampleBudget, "sample-budget", "", "compare a seeded sample of TOTAL bytes (e.g. 200MB) per side, spread over the tensors in proportion to their size")
	f.Uint64Var(&o.SampleSeed, "sample-seed", 0, "seed of --sample-bytes and --sample-budget")
	enumFlag(f, &o.By, "by", byTensor, byEnum, "table/text/jsonl rows: {}")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	f.BoolVar(&o.All, "all", false, "table/text/markdown/csv: list identical tensors too")
	addOutFlag(f, &o.Out, "write the report to this file (atomically) instead of stdout")
	f.BoolVar(&o.SummaryOnly, "summary", false, "print only the summary: keys, config, per-group and summary lines (csv: the per-group rows; json: no tensor rows; jsonl: the summary record)")
	return cmd
}

func (a *App) runDiff(ctx context.Context, o *diffOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal && o.Out == "", output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown, report.HTML)
	if err != nil {
		return usageError("%v", err)
	}
	mode, ok := diff.ParseMode(o.Mode)
	if !ok {
		return usageError("unknown --mode %q (want header, bytes or values)", o.Mode)
	}
	if o.Sample < 0 || o.Workers < 0 {
		return usageError("--sample and --workers must not be negative")
	}
	var sampleBytes int64
	if o.SampleBytes != "" {
		if sampleBytes, err = ckpt.ParseSize(o.SampleBytes); err != nil {
			return usageError("--sample-bytes: %v", err)
		}
		if sampleBytes <= 0 {
			return usageError("--sample-bytes must be positive, not %s", o.SampleBytes)
		}
		if mode != diff.ModeValues {
			return usageError("--sample-bytes needs --mode values, not %s", mode)
		}
	}
	var sampleBudget int64
	if o.SampleBudget != "" {
		if o.SampleBytes != "" {
			return usageError("--sample-bytes and --sample-budget exclude each other")
		}
		if sampleBudget, err = ckpt.ParseSize(o.SampleBudget); err != nil {
			return usageError("--sample-budget: %v", err)
		}
		if sampleBudget <= 0 {
			return usageError("--sample-budget must be positive, not %s", o.SampleBudget)
		}
		if mode != diff.ModeValues {
			return usageError("--sample-budget needs --mode values, not %s", mode)
		}
	}
	if o.By != "tensor" && o.By != "layer" {
		return usageError("unknown --by %q (want tensor or layer)", o.By)
	}
	switch o.Progress {
	case output.ProgressAuto, output.ProgressBar, output.ProgressPlain, output.ProgressNone:
	default:
		return usageError("unknown --progress %q (want auto, bar, plain or none)", o.Progress)
	}
	m, err := ckpt.NewMatcher(o.Match, o.Exclude)
	if err != nil {
		return usageError("%v", err)
	}
	var cks [2]*ckpt.Checkpoint
	var unknownErr error // unknown dtypes: compared as bytes, then exit 2
	for i, src := range []string{o.Base, o.FT} {
		c, err := a.open(ctx, src, ckpt.Options{Workers: o.Workers})
		var unknown *ckpt.UnknownDTypeError
		if err != nil && !errors.As(err, &unknown) {
			return err
		}
		if err != nil {
			fmt.Fprintf(a.Err, "ckpt: warning: %v (compared as bytes)\n", err)
			unknownErr = err
		}
		defer c.Close()
		a.warnIssues(c)
		cks[i] = c
	}
	if err := ckpt.CheckSelection(o.Match, o.Exclude, o.Base+" or "+o.FT, cks[0].Names(), cks[1].Names()); err != nil {
		return err
	}
	out, commit, abort, err := a.diffOutput(o.Out)
	if err != nil {
		return err
	}
	defer abort()
	p := ckpt.NewProgress()
	stop := func() {}
	if mode != diff.ModeHeader {
		if stop, err = output.StartProgress(o.Progress, a.ErrTerm, a.Err, "diff", p); err != nil {
			return usageError("%v", err)
		}
	}
	res, err := diff.Compare(ctx, cks[0], cks[1], diff.Options{Mode: mode, Match: m, Sample: o.Sample, Seed: o.Seed, Workers: o.Workers, Progress: p,
		SampleBytes: sampleBytes, SampleBudget: sampleBudget, SampleSeed: o.SampleSeed, ByLayer: o.By == "layer"})
	stop()
	if err != nil {
		return err
	}
	if err := printDiff(out, format, res, diffView{All: o.All, ByLayer: o.By == "layer", SummaryOnly: o.SummaryOnly, Getenv: a.Getenv}); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	if unknownErr != nil {
		return unknownErr
	}
	if res.Differs() {
		return silentExit(exitFailed)
	}
	return nil
}

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
		return output.WriteJSONL(w, "tensor", []diff.Tensor{}, diffSummaryRecord(res))
	case format == output.JSONL && v.ByLayer:
		return output.WriteJSONL(w, "layer", res.Layers, diffSummaryRecord(res))
	case format == output.JSONL:
		return output.WriteJSONL(w, "tensor", res.Tensors, diffSummaryRecord(res))
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
	// nests it), else indented by two spaces per level.
	line := func(indent int, f string, args ...any) {
		s := fmt.Sprintf(f, args...)
		if format == output.Markdown {
			fmt.Fprintf(w, "%s- %s\n", strings.Repeat("  ", indent), s)
			return
		}
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

	line(0, "config: %d difference(s)", len(res.Config))
	for _, c := range res.Config {
		line(1, "%s: %s", ckpt.EscapeName(c.Path), describeConfigChange(c))
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
// relation columns from first to end (exclusive) whose counts are all
// zero, then the count of identical tensors (the rest of the row's
// tensors).
func dropZeroColumns(g *output.Grid, first, end int) {
	g.Drop = map[int]int{}
	for j := first; j < end; j++ {
		zero := true
		for _, r := range g.Rows {
			zero = zero && r[j] == "0"
		}
		switch {
		case zero:
			g.Drop[j] = 1
		case g.Header[j] == string(diff.Identical) || g.Header[j] == string(diff.SameHeader):
			g.Drop[j] = 2
		}
	}
}

// diffSummaryRecord is the final JSON Lines record of diff: the counts per
// relation, the verdict and (sampled) what was read.
func diffSummaryRecord(res *diff.Result) any {
	return struct {
		Base    string           `json:"base"`
		FT      string           `json:"ft"`
		Mode    diff.Mode        `json:"mode"`
		Differs bool             `json:"differs"`
		Keys    diff.Keys        `json:"keys"`
		Sample  *diff.SampleInfo `json:"sample,omitempty"`
		diff.Summary
	}{res.Base, res.FT, res.Mode, res.Differs(), res.Keys, res.Sample, res.Summary}
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

func dtypeCell(d ckpt.DType) string {
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

func floatCell(p *diff.Float, digits int) string {
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
	return fmt.Sprintf("%.*g", digits, v)
}

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
	if t.ZeroSignCodes > 0 {
		if note != "" {
			note += "; "
		}
		note += fmt.Sprintf("%s code(s) differ only in the sign of zero", output.Int(t.ZeroSignCodes))
	}
	return note
}

// describeConfigChange renders one config difference for text output.
func describeConfigChange(c diff.ConfigChange) string {
	switch c.Change {
	case string(diff.OnlyInBase):
		return compactJSON(c.Base) + " → (absent)"
	case string(diff.OnlyInFT):
		return "(absent) → " + compactJSON(c.FT)
	}
	ba, okB := c.Base.([]any)
	fa, okF := c.FT.([]any)
	if okB && okF {
		added, removed := setDiff(fa, ba), setDiff(ba, fa)
		s := fmt.Sprintf("%d items → %d items", len(ba), len(fa))
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

// setDiff lists the elements of a (rendered as JSON) that b lacks.
func setDiff(a, b []any) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[compactJSON(x)] = true
	}
	var out []string
	for _, x := range a {
		if s := compactJSON(x); !in[s] {
			out = append(out, s)
		}
	}
	return out
}

func listSome(s []string) string {
	if len(s) > 3 {
		return strings.Join(s[:3], ", ") + fmt.Sprintf(", ... (%d more)", len(s)-3)
	}
	return strings.Join(s, ", ")
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type cacheCompareOptions struct {
	A, B     string
	Workers  int
	Progress string
	Format   string
}

// newCacheCompareCmd is ckpt cache compare; runF, when set, runs instead of
// the workflow (tests of the option parsing).
func (a *App) newCacheCompareCmd(runF func(context.Context, *cacheCompareOptions) error) *cobra.Command {
	o := &cacheCompareOptions{}
	cmd := &cobra.Command{
		Use: "compare A B",
		Short: "Compare two cache directories (e.g. ours and the one the serving stack wrote): missing/extra files, every header field, shard bytes; " +
			"exit 0 identical, 1 different, 2 unreadable",
		Example: `  ckpt cache compare /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2 $TT_CACHE_PATH/P300/tensor_cache_bfp8_mesh1x2
  ckpt cache compare ours theirs --format json`,
		Args: exactArgs(2),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.A, o.B = args[0], args[1]
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runCacheCompare(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Workers, "workers", 0, "files compared at once (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, cacheCompareFormats,
		"output format: {} (auto: table on a terminal, text otherwise; jsonl and csv: the difference rows)")
	return cmd
}

// request is the library request of the options.
func (o *cacheCompareOptions) request() compare.Options {
	return compare.Options{A: o.A, B: o.B, DirsOptions: compare.DirsOptions{Workers: o.Workers, Words: flagWords()}}
}

func (a *App) runCacheCompare(ctx context.Context, o *cacheCompareOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheCompareFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	req := o.request()
	prog, stop, err := a.startProgress(o.Progress, "cache compare")
	if err != nil {
		return err
	}
	req.Progress = prog
	rep, err := compare.Run(ctx, req)
	stop()
	if err != nil {
		return err
	}
	return renderCompare(a.Out, format, rep.Report, "A", "B")
}

// renderCompare prints a comparison report (labelA / labelB head the two
// value columns) and returns the exit: 2 when a file was unreadable, 1 on
// any difference, else nil.
func renderCompare(w io.Writer, format string, rep *compare.Report, labelA, labelB string) error {
	res := rep.Document()
	switch format {
	case output.JSON:
		if err := output.WriteJSON(w, res); err != nil {
			return err
		}
	case output.JSONL:
		if err := output.WriteJSONL(w, "difference", rep.Diffs, res.SummaryRecord()); err != nil {
			return err
		}
	default:
		if len(rep.Diffs) > 0 || format == output.CSV {
			if err := renderDiffRows(w, format, rep, labelA, labelB); err != nil {
				return err
			}
			if format != output.CSV {
				fmt.Fprintln(w)
			}
		}
		if format != output.CSV {
			esc := output.EscapeFor(format)
			for _, t := range rep.Tolerated {
				fmt.Fprintf(w, "within %d ulp (%s): %s: %d element(s) differ, by at most %d ulp\n", t.Tolerance.ULP, t.Tolerance.Op, esc(t.File), t.Elements, t.MaxULP)
			}
			if len(rep.Tolerated) > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, compareSummary(rep, labelA, labelB, esc))
		}
	}
	return compareExit(res.Same, res.Unreadable)
}

// compareExit is the exit of a comparison of files: 2 when one could not
// be read, 1 when they differ, else 0.
func compareExit(same, unreadable bool) error {
	switch {
	case unreadable:
		return silentExit(2)
	case !same:
		return silentExit(1)
	}
	return nil
}

// compareSummary is the verdict line of a comparison, the folders' names
// escaped by esc (the format's).
func compareSummary(rep *compare.Report, labelA, labelB string, esc func(string) string) string {
	count := map[compare.Kind]int{}
	files := map[compare.Kind]map[string]bool{}
	for _, d := range rep.Diffs {
		count[d.Kind]++
		if files[d.Kind] == nil {
			files[d.Kind] = map[string]bool{}
		}
		files[d.Kind][d.File] = true
	}
	verdict := "identical"
	switch {
	case rep.Unreadable():
		verdict = "UNREADABLE files"
	case !rep.Same():
		verdict = "DIFFERENT"
	case len(rep.Tolerated) > 0:
		// Not "identical": some data is the same computation within a
		// tolerance, not the same bits.
		verdict = "equal within tolerance, not identical"
	}
	identical := fmt.Sprintf("%d identical", rep.Identical)
	if n := len(rep.Tolerated); n > 0 {
		identical += fmt.Sprintf(", %d equal within a tolerance", n)
	}
	parts := []string{
		fmt.Sprintf("%d missing in %s", count[compare.DiffMissing], labelB),
		fmt.Sprintf("%d extra in %s", count[compare.DiffExtra], labelB),
		fmt.Sprintf("%d header field(s) differ in %d file(s)", count[compare.DiffHeader], len(files[compare.DiffHeader])),
	}
	data := "headers only (no data read)"
	if !rep.HeadersOnly {
		parts = append(parts, fmt.Sprintf("%d shard(s) differ in %d file(s)", count[compare.DiffData], len(files[compare.DiffData])))
		data = output.Int(rep.Bytes) + " bytes compared"
	}
	if n := count[compare.DiffUnreadable]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d unreadable", n))
	}
	return fmt.Sprintf("%s %s (%d files) vs %s %s (%d files): %d in both, %s, %s; %s: %s%s",
		labelA, esc(rep.A), rep.FilesA, labelB, esc(rep.B), rep.FilesB, rep.Common, identical,
		data, strings.Join(parts, ", "), verdict, compare.ToleratedNote(rep.Tolerated))
}

// renderDiffRows prints the differences of a comparison report as a grid
// (kind, file, field, the two sides, detail).
func renderDiffRows(w io.Writer, format string, rep *compare.Report, labelA, labelB string) error {
	g := &output.Grid{Header: []string{"kind", "file", "field", labelA, labelB, "detail"}}
	g.Drop = map[int]int{5: 1} // a terminal too narrow drops the detail first
	for _, d := range rep.Diffs {
		field, detail := d.Field, ""
		switch d.Kind {
		case compare.DiffData:
			field = fmt.Sprintf("shard %d device %s", *d.Shard, cache.FormatDims(d.Device))
			detail = d.Message
		case compare.DiffMissing, compare.DiffExtra, compare.DiffUnreadable:
			detail = d.Message
		}
		g.Rows = append(g.Rows, []string{string(d.Kind), ckpt.EscapeName(d.File), field, ckpt.EscapeName(d.A), ckpt.EscapeName(d.B), ckpt.EscapeName(detail)})
	}
	if format == output.Table {
		// For people the file comes first, its rows grouped under their
		// layer or directory, the rest of its name in the row.
		for i, r := range g.Rows {
			g.Rows[i] = []string{r[1], r[0], r[2], r[3], r[4], r[5]}
		}
		g.Header = []string{"file", "kind", "field", labelA, labelB, "detail"}
		g.Group = true
	}
	return g.Render(w, format)
}

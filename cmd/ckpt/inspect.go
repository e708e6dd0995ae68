package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type inspectOptions struct {
	Source      string
	Format      string
	Match       []string
	Exclude     []string
	SummaryOnly bool
	Metadata    bool
	Workers     int
	Variant     string
}

// inspectValues are what inspect's flags with a syntax parsed into, as
// they were set (their text stays in inspectOptions).
type inspectValues struct {
	match, exclude globsValue
}

// newInspectCmd is ckpt inspect; runF, when set, runs instead of the
// workflow (tests of the option parsing).
func (a *App) newInspectCmd(runF func(context.Context, *inspectOptions) error) *cobra.Command {
	o, v := &inspectOptions{}, &inspectValues{}
	var opt inspect.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "inspect SRC",
		Short: "List tensors (name, dtype, shape, parameters, bytes, shard) and a summary by dtype and group, from headers only",
		Example: `  ckpt inspect ./Qwen3.5-27B-FP8 --summary
  ckpt inspect hf:Qwen/Qwen3.5-27B-FP8 --match 'mtp.**' --format json
  ckpt inspect ./model.safetensors --metadata --summary`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runInspect(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	enumFlag(f, &o.Format, "format", output.Auto, inspectFormats, "output format: {} (auto: table on a terminal, text otherwise)")
	globsFlag(f, &v.match, &o.Match, "match", "only tensors matching this glob (`*` within a dotted segment, `**` across); repeatable")
	globsFlag(f, &v.exclude, &o.Exclude, "exclude", "leave out tensors matching this glob; repeatable")
	f.BoolVar(&o.SummaryOnly, "summary", false, "print only the summary (table/text/markdown)")
	f.BoolVar(&o.Metadata, "metadata", false,
		"also show each file's safetensors __metadata__ (table/text/markdown; csv: only the metadata rows; json always has it)")
	f.IntVar(&o.Workers, "workers", 16, "shard headers read concurrently")
	addVariantFlag(f, &o.Variant)
	return cmd
}

// check holds inspect's rules of the command line, in their order; the
// first broken one is the error.
func (o *inspectOptions) check(v *inspectValues) error {
	if _, err := selection(&v.match, &v.exclude); err != nil {
		return err
	}
	if o.Workers < 1 {
		return ckpt.Usagef("--workers must be at least 1, got %d", o.Workers)
	}
	return nil
}

// options checks the command line (check) and is the workflow's options.
func (o *inspectOptions) options(a *App, v *inspectValues) (inspect.Options, error) {
	if err := o.check(v); err != nil {
		return inspect.Options{}, err
	}
	sel, _ := selection(&v.match, &v.exclude) // checked
	return inspect.Options{Source: o.Source, Openers: a.Openers, Select: sel, Workers: o.Workers, Variant: o.Variant, Words: flagWords()}, nil
}

// runInspect runs the inspect workflow (inspect.Run) and renders
// its result; unknown dtypes exit 2 after the report.
func (a *App) runInspect(ctx context.Context, o *inspectOptions, req inspect.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, inspectFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	res, err := inspect.Run(ctx, req)
	if res == nil {
		return err
	}
	a.warn(res.Warnings...)
	if err := printInspect(a.Out, format, res, o.SummaryOnly, o.Metadata); err != nil {
		return err
	}
	return err
}

func printInspect(w io.Writer, format string, res *inspect.Result, summaryOnly, metadata bool) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		return output.WriteJSONL(w, "tensor", res.Tensors, res.SummaryRecord())
	}
	if metadata && format == output.CSV {
		return metadataGrid(res).Render(w, format)
	}
	// the prose lines' text copied from the inputs, escaped for the format
	esc := output.EscapeFor(format)
	tensors := &output.Grid{Header: []string{"name", "dtype", "shape", "parameters", "bytes", "file"},
		Right: map[int]bool{3: true, 4: true}, Sizes: map[int]bool{4: true}}
	tableForPeople(tensors, map[string]int{"dtype": 1, "shape": 2, "bytes": 3, "parameters": 4, "file": 5})
	tensors.Names[5] = true
	for _, t := range res.Tensors {
		tensors.Rows = append(tensors.Rows, []string{ckpt.EscapeName(t.Name), ckpt.EscapeName(t.DType), output.Shape(t.Shape),
			output.Int(t.Parameters), output.Int(t.NBytes), ckpt.EscapeName(t.File)})
	}
	if format == output.CSV {
		for i, t := range res.Tensors { // machine format: plain numbers
			tensors.Rows[i][3], tensors.Rows[i][4] = fmt.Sprint(t.Parameters), fmt.Sprint(t.NBytes)
		}
		return tensors.Render(w, format)
	}
	if !summaryOnly {
		if err := tensors.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	s := res.Summary
	byD := &output.Grid{Title: "by dtype", Header: []string{"dtype", "tensors", "parameters", "bytes"},
		Right: map[int]bool{1: true, 2: true, 3: true}, Sizes: map[int]bool{3: true}}
	for _, d := range s.ByDType {
		byD.Rows = append(byD.Rows, []string{ckpt.EscapeName(string(d.DType)), output.Int(d.Tensors), output.Int(d.Parameters), output.Int(d.Bytes)})
	}
	byG := &output.Grid{Title: "by group", Header: []string{"group", "tensors", "parameters", "bytes"},
		Right: map[int]bool{1: true, 2: true, 3: true}, Sizes: map[int]bool{3: true}}
	for _, g := range s.ByGroup {
		byG.Rows = append(byG.Rows, []string{ckpt.EscapeName(g.Pattern), output.Int(g.Tensors), output.Int(g.Parameters), output.Int(g.Bytes)})
	}
	for _, g := range []*output.Grid{byD, byG} {
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if metadata {
		if g := metadataGrid(res); len(g.Rows) > 0 {
			if err := g.Render(w, format); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(w, "metadata: none of the %d file(s) has __metadata__\n", len(res.Files))
		}
		fmt.Fprintln(w)
	}
	if q := res.Quantization; q != nil {
		fmt.Fprintln(w, quantLine(q, esc))
	}
	kind := "single file"
	if res.Sharded {
		kind = fmt.Sprintf("%d shards", len(res.Files))
	}
	fmt.Fprintf(w, "%s: %s tensors, %s parameters, %s (%s)\n", esc(res.Source), output.Int(s.Tensors), output.Int(s.Parameters), output.Bytes(s.Bytes), kind)
	return nil
}

// metadataGrid lists the __metadata__ entries of every file, by key.
func metadataGrid(res *inspect.Result) *output.Grid {
	g := &output.Grid{Title: "metadata", Header: []string{"file", "key", "value"}}
	for _, f := range res.Files {
		keys := make([]string, 0, len(f.Metadata))
		for k := range f.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			g.Rows = append(g.Rows, []string{ckpt.EscapeName(f.Path), ckpt.EscapeName(k), ckpt.EscapeName(f.Metadata[k])})
		}
	}
	return g
}

// quantLine is inspect's line about the quantisation scheme.
func quantLine(q *inspect.Quant, esc func(string) string) string {
	how := ""
	switch {
	case q.GroupSize > 0:
		how = fmt.Sprintf(", %d elements per scale", q.GroupSize)
	case len(q.BlockSize) == 2:
		how = fmt.Sprintf(", %dx%d blocks", q.BlockSize[0], q.BlockSize[1])
	}
	ignore := "none"
	if len(q.Ignore) > 0 {
		// A block-FP8 checkpoint lists every unquantised module (hundreds
		// in the 27B): the line shows the first few, JSON has them all.
		const shown = 6
		var parts []string
		for i, e := range q.Ignore {
			if i == shown {
				parts = append(parts, fmt.Sprintf("and %d more", len(q.Ignore)-shown))
				break
			}
			parts = append(parts, esc(e))
		}
		ignore = strings.Join(parts, ", ")
	}
	weights := fmt.Sprintf("%d quantised weights", q.Weights)
	if q.Weights == 1 {
		weights = "1 quantised weight"
	}
	return fmt.Sprintf("quantization: %s, %s (%s %s%s); %s; not quantised (%s): %s\n",
		esc(string(q.Scheme)), q.Title, esc(q.File), esc(q.Path), how, weights, esc(q.IgnoreKey), ignore)
}

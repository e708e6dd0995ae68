package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type inspectOptions struct {
	Source      string
	Format      string
	Match       []string
	Exclude     []string
	SummaryOnly bool
	Workers     int
}

func (a *App) newInspectCmd() *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect SRC",
		Short: "List tensors (name, dtype, shape, parameters, bytes, shard) and a summary by dtype and group, from headers only",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			return a.runInspect(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Format, "format", "auto", "output format: table, text, json, jsonl, csv, markdown (auto: table on a terminal, text otherwise)")
	f.StringArrayVar(&o.Match, "match", nil, "only tensors matching this glob (`*` within a dotted segment, `**` across); repeatable")
	f.StringArrayVar(&o.Exclude, "exclude", nil, "leave out tensors matching this glob; repeatable")
	f.BoolVar(&o.SummaryOnly, "summary", false, "print only the summary (table/text/markdown)")
	f.IntVar(&o.Workers, "workers", 16, "shard headers read concurrently")
	return cmd
}

// InspectFile is one file of the inspect JSON.
type InspectFile struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	HeaderBytes int64  `json:"header_bytes"`
	Tensors     int    `json:"tensors"`
}

// InspectTensor is one tensor of the inspect JSON.
type InspectTensor struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	File       string  `json:"file"`
	Offset     int64   `json:"offset"`
	NBytes     int64   `json:"nbytes"`
	Parameters int64   `json:"parameters"`
}

// InspectResult is the inspect JSON document (cli.md).
type InspectResult struct {
	Source   string          `json:"source"`
	Sharded  bool            `json:"sharded"`
	Files    []InspectFile   `json:"files"`
	Tensors  []InspectTensor `json:"tensors"`
	Summary  ckpt.Summary    `json:"summary"`
	Warnings []string        `json:"warnings,omitempty"`
}

// Inspect builds the inspect result of an open checkpoint.
func Inspect(c *ckpt.Checkpoint, m *ckpt.Matcher) InspectResult {
	res := InspectResult{Source: c.Source, Sharded: c.Sharded, Files: []InspectFile{}, Tensors: []InspectTensor{}}
	quantized := c.Config.Quantization() != nil
	for _, f := range c.Files {
		res.Files = append(res.Files, InspectFile{Path: f.Name, Size: f.Size, HeaderBytes: int64(f.Header.Size), Tensors: len(f.Header.Tensors)})
	}
	var sel []*ckpt.Tensor
	for _, t := range c.Tensors {
		if !m.Match(t.Name) {
			continue
		}
		sel = append(sel, t)
		var params int64
		if ckpt.CountsAsParameter(&t.TensorInfo, quantized) {
			params = int64(t.Numel())
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		res.Tensors = append(res.Tensors, InspectTensor{Name: t.Name, DType: string(t.DType), Shape: shape, File: t.File.Name,
			Offset: t.Offset(), NBytes: int64(t.NBytes()), Parameters: params})
	}
	res.Summary = ckpt.Summarize(sel, quantized)
	for _, is := range c.Issues {
		res.Warnings = append(res.Warnings, is.Message)
	}
	for _, f := range c.Files {
		for _, l := range f.Header.Lints {
			if l.ID != "header.order" { // the writer's order is style, not a format deviation
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s (%s)", f.Location, l.Message, l.ID))
			}
		}
	}
	return res
}

func (a *App) runInspect(ctx context.Context, o *inspectOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	m, err := ckpt.NewMatcher(o.Match, o.Exclude)
	if err != nil {
		return usageError("%v", err)
	}
	if o.Workers < 1 {
		return usageError("--workers must be at least 1, got %d", o.Workers)
	}
	c, openErr := a.open(ctx, o.Source, ckpt.Options{Workers: o.Workers})
	var unknown *ckpt.UnknownDTypeError
	if openErr != nil && !errors.As(openErr, &unknown) {
		return inputError(openErr)
	}
	defer c.Close()
	if err := ckpt.CheckSelection(o.Match, o.Exclude, o.Source, c.Names()); err != nil {
		return inputError(err)
	}
	res := Inspect(c, m)
	for _, w := range res.Warnings {
		fmt.Fprintf(a.Err, "ckpt: warning: %s\n", w)
	}
	if err := printInspect(a.Out, format, &res, o.SummaryOnly); err != nil {
		return err
	}
	if openErr != nil {
		return inputError(openErr)
	}
	return nil
}

func printInspect(w io.Writer, format string, res *InspectResult, summaryOnly bool) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		return output.WriteJSONL(w, res.Tensors)
	}
	tensors := &output.Grid{Header: []string{"name", "dtype", "shape", "parameters", "bytes", "file"}, Right: map[int]bool{3: true, 4: true}}
	for _, t := range res.Tensors {
		tensors.Rows = append(tensors.Rows, []string{ckpt.EscapeName(t.Name), ckpt.EscapeName(t.DType), output.Shape(t.Shape), output.Int(t.Parameters), output.Int(t.NBytes), ckpt.EscapeName(t.File)})
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
	byD := &output.Grid{Title: "by dtype", Header: []string{"dtype", "tensors", "parameters", "bytes"}, Right: map[int]bool{1: true, 2: true, 3: true}}
	for _, d := range s.ByDType {
		byD.Rows = append(byD.Rows, []string{ckpt.EscapeName(string(d.DType)), output.Int(d.Tensors), output.Int(d.Parameters), output.Int(d.Bytes)})
	}
	byG := &output.Grid{Title: "by group", Header: []string{"group", "tensors", "parameters", "bytes"}, Right: map[int]bool{1: true, 2: true, 3: true}}
	for _, g := range s.ByGroup {
		byG.Rows = append(byG.Rows, []string{ckpt.EscapeName(g.Group), output.Int(g.Tensors), output.Int(g.Parameters), output.Int(g.Bytes)})
	}
	for _, g := range []*output.Grid{byD, byG} {
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	kind := "single file"
	if res.Sharded {
		kind = fmt.Sprintf("%d shards", len(res.Files))
	}
	fmt.Fprintf(w, "%s: %s tensors, %s parameters, %s (%s)\n", ckpt.EscapeName(res.Source), output.Int(s.Tensors), output.Int(s.Parameters), output.Bytes(s.Bytes), kind)
	return nil
}

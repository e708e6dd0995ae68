package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type extractOptions struct {
	Source         string
	Out            string
	Match          []string
	Exclude        []string
	DType          string
	WithScales     bool
	AllowNonFinite bool
	MaxShardSize   string
	Format         string
	Progress       string
	Variant        string
}

// extractValues are what extract's flags with a syntax parsed into, as
// they were set (their text stays in extractOptions).
type extractValues struct {
	maxShardSize   sizeValue
	match, exclude globsValue
}

// newExtractCmd is ckpt extract; runF, when set, runs instead of the
// workflow (tests of the option parsing).
func (a *App) newExtractCmd(runF func(context.Context, *extractOptions) error) *cobra.Command {
	o, v := &extractOptions{}, &extractValues{}
	var opt extract.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "extract SRC --match GLOB --out PATH",
		Short: "Write a subset of a checkpoint as a valid safetensors file (or sharded directory), optionally dequantised to bf16/f32",
		Long: `Write the tensors selected by --match/--exclude as a new safetensors file, streaming
tensor data in bounded chunks. --out FILE.safetensors writes one file; any other --out is a
directory (new or empty) that receives model.safetensors, or model-0000k-of-0000n.safetensors
shards with model.safetensors.index.json when the payload exceeds --max-shard-size, plus the
source config.json (without quantization_config when everything was dequantised).
With --dtype bf16|f16|f32, block-FP8 weights are dequantised with their weight_scale_inv
companions (the scales are dropped) and other float tensors are rounded to that dtype (nearest
even); integer and bool tensors are copied. A quantised weight without a scale ckpt can apply
(none, or a weight_scale / weight_scale_2 / input_scale of another scheme) is refused, exit 1.
With --dtype keep (default) every tensor is copied byte for byte; --with-scales adds the scales
of selected quantised weights.`,
		Example: `  ckpt extract hf:Qwen/Qwen3.5-27B-FP8 --match 'mtp.**' --dtype bf16 -o mtp.safetensors
  ckpt extract ./ckpt --match 'model.language_model.layers.3.**' --with-scales -o layer3/
  ckpt extract ./ckpt --match '**' --max-shard-size 5G -o ./copy/`,
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
			return a.runExtract(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	globsFlag(f, &v.match, &o.Match, "match", "extract tensors matching this glob (`*` within a dotted segment, `**` across); repeatable")
	globsFlag(f, &v.exclude, &o.Exclude, "exclude", "leave out tensors matching this glob; repeatable")
	addOutFlag(f, &o.Out, "output: FILE.safetensors, or a directory (required)")
	enumFlag(f, &o.DType, "dtype", extract.Keep, dtypeEnum, "output dtype: {} (float dtypes dequantise FP8 weights)")
	f.BoolVar(&o.WithScales, "with-scales", false, "with --dtype keep, also extract the scales (weight_scale_inv, ...) of every selected quantised weight")
	f.BoolVar(&o.AllowNonFinite, "allow-nonfinite", false,
		"extract even tensors holding NaN or Inf (listed in the output); default: fail naming the tensor, exit 1")
	sizeFlag(f, &v.maxShardSize, &o.MaxShardSize, "max-shard-size",
		"split output larger than this into shards (e.g. 2G = 2·10⁹ bytes, 500Mi = 500·2²⁰ bytes); --out must then be a directory")
	enumFlag(f, &o.Format, "format", output.Auto, extractFormats,
		"summary format: {} (auto: table on a terminal, text otherwise; jsonl: one record per tensor written; csv: the file rows)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	addVariantFlag(f, &o.Variant)
	return cmd
}

// check holds extract's rules of the command line, in their order; the
// first broken one is the error.
func (o *extractOptions) check(v *extractValues) error {
	if o.Out == "" {
		return ckpt.Usagef("extract needs -o/--out FILE.safetensors or -o/--out DIR")
	}
	if len(o.Match) == 0 {
		return ckpt.Usagef("extract needs --match GLOB (use --match '**' to extract everything)")
	}
	dtype := strings.ToLower(o.DType)
	if _, err := extract.TargetDType(dtype); err != nil {
		return &ckpt.UsageError{Option: "--dtype", Reason: err.Error()}
	}
	if o.WithScales && dtype != extract.Keep {
		return ckpt.Usagef("--with-scales only applies to --dtype keep: float dtypes dequantise FP8 weights and drop their scales")
	}
	if o.MaxShardSize != "" {
		maxShard, err := v.maxShardSize.Size()
		if err != nil {
			return &ckpt.UsageError{Option: "--max-shard-size", Reason: err.Error()}
		}
		if maxShard < 1 {
			return ckpt.Usagef("--max-shard-size: invalid size %q: must be at least 1 byte", o.MaxShardSize)
		}
	}
	_, err := selection(&v.match, &v.exclude)
	return err
}

// options checks the command line (check) and is the workflow's options.
func (o *extractOptions) options(a *App, v *extractValues) (extract.Options, error) {
	if err := o.check(v); err != nil {
		return extract.Options{}, err
	}
	sel, _ := selection(&v.match, &v.exclude) // checked
	maxShard, _ := v.maxShardSize.Size()      // checked
	return extract.Options{Source: o.Source, Openers: a.Openers, Out: o.Out, Select: sel, DType: o.DType,
		WithScales: o.WithScales, AllowNonFinite: o.AllowNonFinite, MaxShardSize: maxShard, Variant: o.Variant, Words: flagWords()}, nil
}

// runExtract runs the extract workflow (extract.Run) and renders its
// report.
func (a *App) runExtract(ctx context.Context, o *extractOptions, req extract.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, extractFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	prog, stop, err := a.startProgress(o.Progress, "extract")
	if err != nil {
		return err
	}
	req.Progress = prog
	out, err := extract.Run(ctx, req)
	stop()
	if out != nil {
		a.warn(out.Shown...)
	}
	if sf := (*extract.ShardedFileError)(nil); errors.As(err, &sf) {
		return ckpt.Usagef("the output is %d shards at --max-shard-size %s: --out must be a directory, not %s", sf.Shards, o.MaxShardSize, sf.Out)
	}
	if err != nil {
		return err
	}
	if s := ckpt.NonFiniteNote(out.NonFinite, flagWords()); s != "" {
		a.note(s)
	}
	return printExtract(a.Out, format, out)
}

func printExtract(w io.Writer, format string, r *extract.Result) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, r)
	case output.JSONL:
		return output.WriteJSONL(w, "tensor", r.Tensors, r.SummaryRecord())
	}
	g := &output.Grid{Header: []string{"file", "tensors", "bytes", "size"}, Right: map[int]bool{1: true, 2: true, 3: true}, Sizes: map[int]bool{2: true, 3: true}}
	for _, f := range r.Files {
		g.Rows = append(g.Rows, []string{ckpt.EscapeName(f.Path), output.Int(int64(f.Tensors)), output.Int(f.Bytes), output.Int(f.Size)})
	}
	if format == output.CSV {
		for i, f := range r.Files { // machine format: plain numbers
			g.Rows[i][2], g.Rows[i][3] = fmt.Sprint(f.Bytes), fmt.Sprint(f.Size)
		}
		return g.Render(w, format)
	}
	if err := g.Render(w, format); err != nil {
		return err
	}
	s := r.Summary
	fmt.Fprintf(w, "\nextracted %s tensors (%d dequantised, %d converted, %d copied), %s of data (%s bytes) in %d file(s), dtype %s\n",
		output.Int(int64(s.Tensors)), s.Dequantized, s.Converted, s.Copied, output.Bytes(s.Bytes), output.Int(s.Bytes), s.Files, r.DType)
	if r.Index != "" {
		fmt.Fprintf(w, "index: %s\n", output.EscapeFor(format)(r.Index))
	}
	if r.Config != "" {
		fmt.Fprintf(w, "config: %s\n", output.EscapeFor(format)(r.Config))
	}
	return nil
}

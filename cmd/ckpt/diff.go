package main

import (
	"context"
	"errors"

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
	Variant  string
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

// diffValues are what diff's flags with a syntax parsed into, as they
// were set (their text stays in diffOptions).
type diffValues struct {
	sampleBytes, sampleBudget sizeValue
	match, exclude            globsValue
}

// newDiffCmd is ckpt diff; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newDiffCmd(runF func(context.Context, *diffOptions) error) *cobra.Command {
	o, v := &diffOptions{}, &diffValues{}
	var opt diff.Options // built once, in PreRunE
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
  ckpt diff hf://Qwen/Qwen3.5-27B-FP8 hf://org/ThinkingCap-27B-FP8 --sample-bytes 64KiB --by layer`,
		Args: exactArgs(2),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Base, o.FT = args[0], args[1]
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runDiff(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	enumFlag(f, &o.Format, "format", output.Auto, diffFormats, "output format: {} (auto: table on a terminal, text otherwise; "+
		"csv: the tensor rows; markdown: for a pull request; html: a self-contained page with the per-layer heatmaps)")
	enumFlag(f, &o.Mode, "mode", string(diff.ModeValues), modeEnum, "{}")
	globsFlag(f, &v.match, &o.Match, "match", "only tensors matching this glob (`*` within a dotted segment, `**` across); repeatable")
	globsFlag(f, &v.exclude, &o.Exclude, "exclude", "leave out tensors matching this glob; repeatable")
	f.IntVar(&o.Sample, "sample", 0, "compare the data of a deterministic subset of N tensors (plus their scale companions); keys, dtypes and shapes of all")
	f.Uint64Var(&o.Seed, "seed", 0, "seed of --sample")
	f.IntVar(&o.Workers, "workers", 0, "chunks processed at once (default: the number of CPUs); "+
		"with --sample-bytes/--sample-budget also the reads in flight (default 128, 64 per side)")
	sizeFlag(f, &v.sampleBytes, &o.SampleBytes, "sample-bytes",
		"compare a seeded sample of at most SIZE bytes (e.g. 64KiB) per tensor and side; smaller tensors whole")
	sizeFlag(f, &v.sampleBudget, &o.SampleBudget, "sample-budget",
		"compare a seeded sample of TOTAL bytes (e.g. 200MB) per side, spread over the tensors in proportion to their size")
	f.Uint64Var(&o.SampleSeed, "sample-seed", 0, "seed of --sample-bytes and --sample-budget")
	f.StringVar(&o.Variant, "variant", "", "read the variant NAME of each checkpoint directory, as transformers' from_pretrained(variant=NAME) does: "+
		"model.NAME.safetensors, else model.safetensors.index.NAME.json with its shards "+
		"(default: the default checkpoint, or a directory's only variant, with a warning); "+
		"to compare a variant with another checkpoint, name its index or file as that side")
	enumFlag(f, &o.By, "by", byTensor, byEnum, "table/text/jsonl rows: {}")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	f.BoolVar(&o.All, "all", false, "table/text/markdown/csv: list identical tensors too")
	addOutFlag(f, &o.Out, "write the report to this file (atomically) instead of stdout")
	f.BoolVar(&o.SummaryOnly, "summary", false, "print only the summary: keys, config, per-group and summary lines "+
		"(csv: the per-group rows; json: no tensor rows; jsonl: the summary record)")
	return cmd
}

// check holds diff's rules of the command line, in their order; the first
// broken one is the error.
func (o *diffOptions) check(v *diffValues) error {
	mode, ok := diff.ParseMode(o.Mode)
	if !ok {
		return ckpt.Usagef("unknown --mode %q (want header, bytes or values)", o.Mode)
	}
	if o.Sample < 0 || o.Workers < 0 {
		return ckpt.Usagef("--sample and --workers must not be negative")
	}
	if o.SampleBytes != "" {
		n, err := v.sampleBytes.Size()
		if err != nil {
			return &ckpt.UsageError{Option: "--sample-bytes", Reason: err.Error()}
		}
		if n <= 0 {
			return ckpt.Usagef("--sample-bytes must be positive, not %s", o.SampleBytes)
		}
		if mode != diff.ModeValues {
			return ckpt.Usagef("--sample-bytes needs --mode values, not %s", mode)
		}
	}
	if o.SampleBudget != "" {
		if o.SampleBytes != "" {
			return ckpt.Usagef("--sample-bytes and --sample-budget exclude each other")
		}
		n, err := v.sampleBudget.Size()
		if err != nil {
			return &ckpt.UsageError{Option: "--sample-budget", Reason: err.Error()}
		}
		if n <= 0 {
			return ckpt.Usagef("--sample-budget must be positive, not %s", o.SampleBudget)
		}
		if mode != diff.ModeValues {
			return ckpt.Usagef("--sample-budget needs --mode values, not %s", mode)
		}
	}
	// A seed without what it seeds would be silently ignored: the user
	// meant a sampled comparison.
	if o.SampleSeed != 0 && o.SampleBytes == "" && o.SampleBudget == "" {
		return ckpt.Usagef("--sample-seed seeds --sample-bytes or --sample-budget; give one of them")
	}
	if o.Seed != 0 && o.Sample == 0 {
		return ckpt.Usagef("--seed seeds --sample N; give it")
	}
	_, err := selection(&v.match, &v.exclude)
	return err
}

// options checks the command line (check) and is the workflow's options
// (the Progress aside, which runDiff starts).
func (o *diffOptions) options(a *App, v *diffValues) (diff.Options, error) {
	if err := o.check(v); err != nil {
		return diff.Options{}, err
	}
	sel, _ := selection(&v.match, &v.exclude) // checked
	sampleBytes, _ := v.sampleBytes.Size()    // checked
	sampleBudget, _ := v.sampleBudget.Size()  // checked
	return diff.Options{Base: o.Base, FT: o.FT, Openers: a.Openers, Variant: o.Variant, Out: o.Out, Words: flagWords(),
		CompareOptions: diff.CompareOptions{Mode: diff.Mode(o.Mode), Match: sel, Sample: o.Sample, Seed: o.Seed, Workers: o.Workers,
			SampleBytes: sampleBytes, SampleBudget: sampleBudget, SampleSeed: o.SampleSeed, ByLayer: o.By == byLayer}}, nil
}

// runDiff runs the diff workflow (diff.Run) and renders its result to
// stdout or -o: exit 1 on differences, 2 (after the report) when a side
// has tensors of unknown dtypes.
func (a *App) runDiff(ctx context.Context, o *diffOptions, opts diff.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal && o.Out == "", diffFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	// The -o file is created first, so that an unwritable path fails
	// before the comparison.
	out, commit, abort, err := a.diffOutput(o.Out)
	if err != nil {
		return err
	}
	defer abort()
	stop := func() {} // --mode header reads no data: no progress
	if opts.Mode != diff.ModeHeader {
		if opts.Progress, stop, err = a.startProgress(o.Progress, "diff"); err != nil {
			return err
		}
	}
	res, err := diff.Run(ctx, opts)
	stop()
	if res != nil {
		a.warn(res.Warnings...)
	}
	var unknown *ckpt.UnknownDTypeError
	if err != nil && !errors.As(err, &unknown) {
		return err
	}
	if format == output.JSON || format == output.Markdown || format == report.HTML {
		res.GeneratedBy = a.generator() // a report names its tool, version and time
	}
	if err := printDiff(out, format, res, diffView{All: o.All, ByLayer: o.By == byLayer, SummaryOnly: o.SummaryOnly, Getenv: a.Getenv}); err != nil {
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	if unknown != nil {
		return err
	}
	if res.Differs() {
		return silentExit(exitFailed)
	}
	return nil
}

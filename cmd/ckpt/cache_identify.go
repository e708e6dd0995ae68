package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
)

type cacheIdentifyOptions struct {
	Dir, Source string
	Profiles    []string
	Rules       string
	Select      cache.Selector
	Format      string
	HeadersOnly bool
	NaN         string
	Workers     int
	Progress    string
	Variant     string
}

func (a *App) newCacheIdentifyCmd() *cobra.Command {
	o := &cacheIdentifyOptions{}
	var opt identify.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use: "identify DIR [--source SRC]",
		Short: "Name the mapping profile and --set switches that reproduce a cache (e.g. one the serving stack wrote), " +
			"from its file names and headers, and with --source its data; exit 0 exact, 1 closest only, 2 unreadable",
		Example: `  ckpt cache identify $TT_CACHE_PATH
  ckpt cache identify $TT_CACHE_PATH --source ./Qwen3.5-27B-FP8
  ckpt cache identify $TT_CACHE_PATH/P300/tensor_cache_bfp8_mesh1x2 --source hf:Qwen/Qwen3.5-27B-FP8 --format json`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			var err error
			opt, err = o.options(a)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runCacheIdentify(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Source, "source", "", "the checkpoint the cache was built from; every candidate plan is made of it, and the closest one's data is compared "+
		"(default: the source a ckpt manifest in the folder names, names and headers only; "+
		"with neither, the candidates are planned from the cache's file names and held against its headers, shapes and data not compared)")
	addVariantFlag(f, &o.Variant)
	f.StringArrayVar(&o.Profiles, "profile", nil, "try only this built-in profile (repeatable; default: every built-in profile)")
	completeWith(f, "profile", mapping.BuiltinNames())
	f.StringVar(&o.Rules, "rules", "", "try this mapping profile JSON instead of the built-in profiles")
	f.StringVar(&o.Select.Mesh, "mesh", "", "when DIR is a cache root with several cache folders: the one for this mesh")
	f.StringVar(&o.Select.Tag, "tag", "", "when DIR is a cache root with several cache folders: the one with this tag")
	f.StringVar(&o.Select.Device, "device", "", "when DIR is a cache root with several cache folders: the one for this device")
	f.BoolVar(&o.HeadersOnly, "headers-only", false, "with --source: compare names and headers only, not the closest candidate's data")
	enumFlag(f, &o.NaN, "nan", string(build.NaNVector), nanEnum,
		"with --source, for the data comparison: the NaN bits the cache's host wrote ({}, as cache build --nan)")
	f.IntVar(&o.Workers, "workers", 0, "conversion and comparison goroutines of the data comparison (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.Markdown),
		"output format: {} (auto: table on a terminal, text otherwise; jsonl: the candidate rows)")
	return cmd
}

// check holds cache identify's rules of the command line.
func (o *cacheIdentifyOptions) check() error {
	if o.Rules != "" && len(o.Profiles) > 0 {
		return &ckpt.UsageError{Reason: "--rules and --profile are exclusive"}
	}
	return nil
}

// options checks the command line (check) and is the workflow's options
// (Progress is set when the run starts it).
func (o *cacheIdentifyOptions) options(a *App) (identify.Options, error) {
	if err := o.check(); err != nil {
		return identify.Options{}, err
	}
	return identify.Options{Dir: o.Dir, Source: o.Source, Openers: a.Openers, Profiles: o.Profiles, Rules: o.Rules,
		Select: o.Select, HeadersOnly: o.HeadersOnly, NaN: build.NaN(o.NaN), Workers: o.Workers, Variant: o.Variant,
		Words: flagWords()}, nil
}

func (a *App) runCacheIdentify(ctx context.Context, o *cacheIdentifyOptions, opt identify.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	prog, stop, err := a.startProgress(o.Progress, "cache identify")
	if err != nil {
		return err
	}
	opt.Progress = prog
	res, err := identify.Run(ctx, opt)
	stop()
	if res != nil {
		a.warn(res.Warnings...)
	}
	if err != nil {
		return err
	}
	switch format {
	case output.JSON:
		err = output.WriteJSON(a.Out, res)
	case output.JSONL:
		err = output.WriteJSONL(a.Out, "candidate", res.Candidates, res.SummaryRecord())
	default:
		err = printIdentifyModel(a.Out, format, res, o.Rules, o.Variant)
	}
	if err != nil {
		return err
	}
	if !res.Exact {
		return silentExit(exitFailed)
	}
	return nil
}

// printIdentifyModel renders the identification of a cache folder and,
// when the root or device folder asked about holds the model's vision
// folder beside it, that folder's after it, then one line for both (the
// exit code covers both); a vision folder the manifest names that is not
// there is said to be neither there nor identified.
func printIdentifyModel(w io.Writer, format string, r *identify.Result, rules, variant string) error {
	if err := printIdentify(w, format, r, rules, variant); err != nil {
		return err
	}
	esc := output.EscapeFor(format)
	if r.VisionMissing != "" {
		_, err := fmt.Fprintf(w, "vision folder %s (named by the manifest of %s) is not there: not identified; the model is not complete\n",
			esc(r.VisionMissing), esc(r.Dir))
		return err
	}
	if r.VisionEmpty != "" {
		_, err := fmt.Fprintf(w, "vision folder %s of the model holds no %s file: not identified; the model is not complete\n", esc(r.VisionEmpty), mapping.FileExt)
		return err
	}
	if r.Vision == nil {
		return nil
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "vision folder of the model: %s\n", esc(r.Vision.Dir))
	if err := printIdentify(w, format, r.Vision, rules, variant); err != nil {
		return err
	}
	fmt.Fprintln(w)
	word := func(f *identify.Result) string {
		switch {
		case !f.FolderExact() && f.Best == nil:
			return "NOT reproduced (no candidate maps)"
		case !f.FolderExact():
			return fmt.Sprintf("NOT reproduced (closest: %d difference(s))", f.Best.Differences+f.Best.Data)
		case f.NamesOnly:
			return "names and headers as planned (no source)"
		}
		return "exact"
	}
	if r.VisionOther != "" {
		_, err := fmt.Fprintf(w, "the model's 2 cache folders: NOT both reproduced: text folder %s %s; "+
			"vision folder %s is another model's (%s): the model is not complete\n",
			esc(r.Dir), word(r), esc(r.Vision.Dir), esc(r.VisionOther))
		return err
	}
	verdict := "both folders reproduced"
	if !r.Exact {
		verdict = "NOT both reproduced"
	}
	if _, err := fmt.Fprintf(w, "the model's 2 cache folders: %s: text folder %s %s; vision folder %s %s\n",
		verdict, esc(r.Dir), word(r), esc(r.Vision.Dir), word(r.Vision)); err != nil {
		return err
	}
	// One build writes both folders: when the vision folder's settings
	// (instruct, host_vision_embed) are not the text folder's, neither
	// folder's line reproduces the model (the text line writes another
	// vision folder, the vision line takes the default tag): one line
	// with both does.
	if r.Best == nil || r.Vision.Best == nil || r.Best.Profile != r.Vision.Best.Profile {
		return nil
	}
	all := append([]string(nil), r.Best.Overrides...)
	for _, o := range r.Vision.Best.Overrides {
		if !slices.Contains(all, o) {
			all = append(all, o)
		}
	}
	if len(all) == len(r.Best.Overrides) {
		return nil
	}
	_, err := fmt.Fprintf(w, "reproduce the model (both folders) with: %s\n", buildCommand(r, rules, variant, esc, all))
	return err
}

// printIdentify renders the candidates (closest first), the closest one's
// remaining differences, and the verdict with the command line that plans
// the cache.
func printIdentify(w io.Writer, format string, r *identify.Result, rules, variant string) error {
	// differences are of names and headers, what every candidate is
	// ranked by; the closest one's data differences (with --source) are
	// beside them, "data N": the others' data is not compared.
	g := &output.Grid{Header: []string{"profile", "overrides", "differences", "missing", "extra", "header"}}
	g.Drop = map[int]int{3: 1, 4: 2, 5: 3} // the parts of the differences give way on a narrow terminal, header counts first
	for _, c := range r.Candidates {
		ov := strings.Join(c.Overrides, " ")
		if ov == "" {
			ov = "(defaults)"
		}
		if c.Problem != "" {
			g.Rows = append(g.Rows, []string{c.Profile, ov, "does not map: " + c.Problem, "", "", ""})
			continue
		}
		diffs := fmt.Sprint(c.Differences)
		if c.DataCompared {
			diffs += fmt.Sprintf(", data %d", c.Data)
		}
		g.Rows = append(g.Rows, []string{c.Profile, ov, diffs, fmt.Sprint(c.Missing), fmt.Sprint(c.Extra), fmt.Sprint(c.Headers)})
	}
	if err := g.Render(w, format); err != nil {
		return err
	}
	fmt.Fprintln(w)
	// The prose copies the folder's name, its device, tag and mesh, the
	// profiles' names and overrides (a --rules file's), the rules path:
	// escaped for the format.
	esc := output.EscapeFor(format)
	dir := esc(r.Dir)
	if r.Best == nil {
		fmt.Fprintf(w, "%s (mesh %s): the source maps with no candidate profile\n", dir, esc(r.Mesh))
		return nil
	}
	cmd := buildCommand(r, rules, variant, esc, r.Best.Overrides)
	what := "names and headers"
	if r.NamesOnly {
		what = "names and headers alone (no source)"
	}
	if r.DataCompared {
		what = fmt.Sprintf("names, headers and data (%s compared)", ckpt.FormatBytes(r.DataBytes))
		if rep := r.ClosestReport(); rep != nil {
			// Files whose data is the same computation within a
			// tolerance (neg_exp), not the same bits: said, not hidden.
			what += compare.ToleratedNote(rep.Tolerated)
		}
	}
	ties := make([]string, len(r.Ties))
	for i, t := range r.Ties {
		ties[i] = esc(t)
	}
	if r.MeshFrom != "" {
		// A stack's vision folder: neither its name nor a manifest
		// gives the mesh.
		fmt.Fprintf(w, "mesh %s inferred from %s\n", esc(r.Mesh), esc(r.MeshFrom))
	}
	if r.FolderExact() {
		if r.NamesOnly {
			// Not "exactly": the decoder layers and config-dependent parts
			// are only those the names show (listed below).
			layers := "decoder layers"
			if r.Part == mapping.PartVision {
				layers = "vision blocks"
			}
			fmt.Fprintf(w, "%s (%d files, mesh %s): %s plans these names and headers for the %s and parts the names show, by %s; not known without the source:\n",
				dir, r.Files, esc(r.Mesh), esc(r.Best.Describe()), layers, what)
			for _, n := range r.NotCompared {
				fmt.Fprintf(w, "  %s\n", esc(n))
			}
			if len(r.Ties) > 0 {
				fmt.Fprintf(w, "as close (they plan the same files for these file names): %s\n", strings.Join(ties, "; "))
			}
			fmt.Fprintf(w, "reproduce it with: %s\n", cmd)
			fmt.Fprintln(w, "(--source SRC, the checkpoint the cache was built from, compares them)")
			return nil
		}
		fmt.Fprintf(w, "%s (%d files, mesh %s): exactly %s, by %s\n", dir, r.Files, esc(r.Mesh), esc(r.Best.Describe()), what)
		if len(r.Ties) > 0 {
			fmt.Fprintf(w, "as exact (they plan the same files for this checkpoint): %s\n", strings.Join(ties, "; "))
		}
		fmt.Fprintf(w, "reproduce it with: %s\n", cmd)
		printNotCompared(w, r, esc)
		return nil
	}
	if rep := r.ClosestReport(); rep != nil && len(rep.Diffs) > 0 {
		fmt.Fprintln(w, "differences of the closest candidate (plan vs cache):")
		if err := renderDiffRows(w, format, rep, "plan", "cache"); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	diffs := fmt.Sprintf("%d difference(s)", r.Best.Differences)
	if r.Best.DataCompared {
		diffs = fmt.Sprintf("%d name or header difference(s) and %d data difference(s) (the data of the others not compared)", r.Best.Differences, r.Best.Data)
	}
	fmt.Fprintf(w, "%s (%d files, mesh %s): no candidate reproduces its %s; closest %s with %s (%s)\n",
		dir, r.Files, esc(r.Mesh), what, esc(r.Best.Describe()), diffs, cmd)
	printNotCompared(w, r, esc)
	return nil
}

// printNotCompared lists what a names-only identification could not
// compare (--source compares it), escaped by esc (the lines name files).
func printNotCompared(w io.Writer, r *identify.Result, esc func(string) string) {
	for _, n := range r.NotCompared {
		fmt.Fprintln(w, esc(n))
	}
	if len(r.NotCompared) > 0 {
		fmt.Fprintln(w, "(--source SRC, the checkpoint the cache was built from, compares them)")
	}
}

// buildCommand is the cache build line that plans r's folder with the
// overrides set (r.Best's, or the model's: the text folder's and its vision
// folder's), escaped with esc.
func buildCommand(r *identify.Result, rules, variant string, esc func(string) string, overrides []string) string {
	set := ""
	for _, o := range overrides {
		set += " --set " + esc(shellQuote(o))
	}
	// The device folder always: without --device a build goes where
	// $MESH_DEVICE or the mesh's upstream name says, not necessarily here.
	// A candidate of --rules FILE is that file's profile, whatever its name.
	q := func(s string) string { return esc(shellQuote(s)) }
	prof := "--profile " + q(r.Best.Profile)
	if rules != "" {
		prof = "--rules " + q(rules)
	}
	// The real source when known (--source, or the manifest's), and the
	// cache root the folder is in: the line runs as printed.
	src := "SRC"
	if r.Source != "" {
		src = q(r.Source)
	}
	root := filepath.Dir(filepath.Dir(filepath.Clean(r.Dir)))
	cmd := fmt.Sprintf("ckpt cache build %s --out %s %s --mesh %s --device %s", src, q(root), prof, q(r.Mesh), q(r.Device))
	if r.Tag != "bfp8" {
		cmd += " --tag " + q(r.Tag)
	}
	if variant != "" {
		cmd += " --variant " + q(variant)
	}
	cmd += set + r.BuildFlags
	return cmd
}

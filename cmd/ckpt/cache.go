package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
)

func (a *App) newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Prebuild, verify, list and ship the Tenstorrent tensor cache (.tensorbin files) of a checkpoint",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("cache needs a subcommand: build, verify, ls, pack or unpack (see %s --help)", cmd.CommandPath())
		},
	}
	cmd.AddCommand(a.newCacheBuildCmd(), a.newCacheVerifyCmd(), a.newCacheLsCmd(), a.newCachePackCmd(), a.newCacheUnpackCmd())
	return cmd
}

// planFlags are the mapping flags shared by build and verify.
type planFlags struct {
	Profile, Rules, Mesh, Device, Tag string
}

func (p *planFlags) add(f interface {
	StringVar(*string, string, string, string)
}, meshDefault string) {
	f.StringVar(&p.Profile, "profile", mapping.BuiltinName, "built-in mapping profile ("+strings.Join(mapping.BuiltinNames(), ", ")+")")
	f.StringVar(&p.Rules, "rules", "", "load the mapping profile from this JSON file (see ckpt map --dump)")
	f.StringVar(&p.Mesh, "mesh", meshDefault, "device mesh, 1xN")
	f.StringVar(&p.Device, "device", "", "device directory of the cache root (default: the profile's, e.g. P300)")
	f.StringVar(&p.Tag, "tag", "", "cache tag of tensor_cache_<tag>_mesh1xN (default: the profile's, e.g. bfp8)")
}

// plan opens src and builds its plan. Plan problems are printed to w and
// end the command with exit 1.
func (a *App) plan(ctx context.Context, src string, pf planFlags, w io.Writer) (*ckpt.Checkpoint, *mapping.Plan, error) {
	prof, err := a.loadProfile(&mapOptions{Profile: pf.Profile, Rules: pf.Rules})
	if err != nil {
		return nil, nil, err
	}
	mesh, err := mapping.ParseMesh(pf.Mesh)
	if err != nil {
		return nil, nil, usageError("%v", err)
	}
	if mesh.Rows != 1 {
		return nil, nil, usageError("mesh %s: only 1xN meshes are supported", mesh)
	}
	p := *prof
	if pf.Device != "" {
		p.Device = pf.Device
	}
	if pf.Tag != "" {
		p.Tag = pf.Tag
	}
	c, err := a.open(ctx, src, ckpt.Options{})
	if err != nil {
		return nil, nil, inputError(err)
	}
	plan, err := mapping.Build(c, &p, mesh)
	if err != nil {
		var pe *mapping.PlanError
		if !errors.As(err, &pe) {
			c.Close()
			return nil, nil, inputError(err)
		}
		for _, pr := range pe.Problems {
			fmt.Fprintf(w, "problem (%s): %s\n", pr.Kind, ckpt.EscapeName(pr.Message))
		}
		fmt.Fprintf(w, "the %s plan of %s on mesh %s has %d problem(s) (see ckpt map)\n", p.Name, src, mesh, len(pe.Problems))
		c.Close()
		return nil, nil, silentExit(1)
	}
	return c, plan, nil
}

// ---- build ----

type cacheBuildOptions struct {
	Source, Out string
	planFlags
	Workers        int
	Progress       string
	Format         string
	Force          bool
	AllowNonFinite bool
}

func (a *App) newCacheBuildCmd() *cobra.Command {
	o := &cacheBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build SRC --out DIR",
		Short: "Write the TP-sharded tensor cache of the mapping plan (streaming, bounded memory, crash-safe; skips unchanged files)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			return a.runCacheBuild(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Out, "out", "", "cache root (TT_CACHE_PATH): files and manifest go to <out>/<device>/tensor_cache_<tag>_mesh1xN/; other folders there are left alone")
	o.planFlags.add(f, "1x2")
	f.IntVar(&o.Workers, "workers", 0, "conversion goroutines (default: all cores)")
	f.StringVar(&o.Progress, "progress", "auto", "progress on stderr: auto, bar, plain, none")
	f.StringVar(&o.Format, "format", "auto", "output format: text, json (auto: text)")
	f.BoolVar(&o.Force, "force", false, "rebuild every file, even unchanged ones")
	f.BoolVar(&o.AllowNonFinite, "allow-nonfinite", false, "build even from source tensors holding NaN or Inf (recorded in the manifest); default: fail naming the tensor, exit 1")
	return cmd
}

// CacheBuildResult is the cache build JSON document.
type CacheBuildResult struct {
	Out               string           `json:"out"`
	Manifest          string           `json:"manifest"`
	Profile           string           `json:"profile"`
	Mesh              string           `json:"mesh"`
	CacheDir          string           `json:"cache_dir"`
	Files             int              `json:"files"`
	Built             []string         `json:"built"`
	Skipped           int              `json:"skipped"`
	Removed           []string         `json:"removed"`
	SourceTensors     int              `json:"source_tensors"`
	SourceElements    int64            `json:"source_elements"`
	SourceBytes       int64            `json:"source_bytes"`
	Rehashed          int              `json:"rehashed"`
	Seconds           float64          `json:"seconds"`
	ElementsPerSecond float64          `json:"elements_per_second"`
	Warnings          []string         `json:"warnings"`
	Unknown           []string         `json:"unknown"`
	NonFinite         []ckpt.NonFinite `json:"nonfinite"`
}

func (a *App) runCacheBuild(ctx context.Context, o *cacheBuildOptions) error {
	format, err := output.Resolve(o.Format, false, output.Text, output.JSON)
	if err != nil {
		return usageError("%v", err)
	}
	if o.Out == "" {
		return usageError("cache build needs --out DIR")
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Keep the heap (bands, tile staging) well inside the 512 MiB budget.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(384 << 20))
	}
	start := time.Now()
	c, plan, err := a.plan(ctx, o.Source, o.planFlags, a.Out)
	if err != nil {
		return err
	}
	defer c.Close()
	prog := ckpt.NewProgress()
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache build", prog)
	if err != nil {
		return usageError("%v", err)
	}
	res, err := cache.Build(ctx, c, plan, o.Out, cache.BuildOptions{Workers: o.Workers, Progress: prog, Tool: "ckpt", ToolVersion: Version, Force: o.Force, AllowNonFinite: o.AllowNonFinite})
	stop()
	if err != nil {
		return buildError(err)
	}
	el := time.Since(start).Seconds()
	out := CacheBuildResult{Out: o.Out, Manifest: filepath.Join(cache.FolderOf(o.Out, plan.CacheDir).Path(), cache.ManifestName), Profile: plan.Profile.Name, Mesh: plan.Mesh.String(),
		CacheDir: plan.CacheDir, Files: len(res.Manifest.Files), Built: res.Built, Skipped: len(res.Skipped), Removed: res.Removed,
		SourceTensors: res.SourceTensors, SourceElements: res.SourceElements, SourceBytes: res.SourceBytes, Rehashed: res.Rehashed,
		Seconds: el, Warnings: append(groupEntryWarnings(plan), buildNotes(res)...), Unknown: res.Unknown}
	if el > 0 {
		out.ElementsPerSecond = float64(res.SourceElements) / el
	}
	if out.Built == nil {
		out.Built = []string{}
	}
	if out.Removed == nil {
		out.Removed = []string{}
	}
	if out.Unknown == nil {
		out.Unknown = []string{}
	}
	out.NonFinite = append([]ckpt.NonFinite{}, res.NonFinite...)
	if format == output.JSON {
		return output.WriteJSON(a.Out, out)
	}
	for _, w := range out.Warnings {
		fmt.Fprintf(a.Out, "note: %s\n", w)
	}
	fmt.Fprintf(a.Out, "%s on mesh %s: %d files in %s: %d built, %d unchanged, %d removed\n", out.Profile, out.Mesh, out.Files,
		filepath.Join(o.Out, filepath.FromSlash(plan.CacheDir)), len(out.Built), out.Skipped, len(out.Removed))
	fmt.Fprintf(a.Out, "streamed %d source tensors (%s elements, %s) in %.1fs: %.0f M elements/s\n", out.SourceTensors,
		output.Int(out.SourceElements), output.Bytes(out.SourceBytes), el, out.ElementsPerSecond/1e6)
	fmt.Fprintf(a.Out, "manifest: %s\n", out.Manifest)
	return nil
}

// groupEntryWarnings collapses the plan's per-entry warnings by rule.
func groupEntryWarnings(plan *mapping.Plan) []string {
	var es []MapEntry
	for _, e := range plan.Entries {
		es = append(es, MapEntry{Rule: e.Rule, Warnings: e.Warnings})
	}
	out := groupWarnings(es)
	for i := range out {
		out[i] = strings.Replace(out[i], "(TILE pads it)", "(padded to whole tiles with zeros)", 1)
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// ---- verify ----

type cacheVerifyOptions struct {
	Dir, Source string
	Rules       string
	MinMem      string
	MemInfo     string
	Rehash      bool
	Workers     int
	Progress    string
	Format      string
	Select      cache.Selector
}

func (a *App) newCacheVerifyCmd() *cobra.Command {
	o := &cacheVerifyOptions{}
	cmd := &cobra.Command{
		Use:   "verify DIR --source SRC",
		Short: "Fail-closed preflight of a built cache: missing, extra, truncated, corrupted and stale files; exit 1 on any",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCacheVerify(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Source, "source", "", "the checkpoint the cache must have been built from (required)")
	f.StringVar(&o.Rules, "rules", "", "mapping profile JSON the cache was built with (default: the built-in profile named in the manifest)")
	f.StringVar(&o.MinMem, "min-mem", "", "also fail when MemAvailable is below this size, e.g. 4GiB")
	f.StringVar(&o.MemInfo, "meminfo", "/proc/meminfo", "meminfo file to read MemAvailable from")
	_ = f.MarkHidden("meminfo")
	f.StringVar(&o.Select.Mesh, "mesh", "", "when DIR is a cache root with several cache folders: the one for this mesh")
	f.StringVar(&o.Select.Tag, "tag", "", "when DIR is a cache root with several cache folders: the one with this tag")
	f.StringVar(&o.Select.Device, "device", "", "when DIR is a cache root with several cache folders: the one for this device")
	f.BoolVar(&o.Rehash, "rehash", false, "re-read and hash every source tensor instead of trusting unchanged file size, mtime and offsets")
	f.IntVar(&o.Workers, "workers", 0, "hashing goroutines (default: all cores)")
	f.StringVar(&o.Progress, "progress", "auto", "progress on stderr: auto, bar, plain, none")
	f.StringVar(&o.Format, "format", "auto", "output format: text, json (auto: text)")
	return cmd
}

// CacheVerifyResult is the cache verify JSON document.
type CacheVerifyResult struct {
	Dir          string          `json:"dir"`
	Source       string          `json:"source"`
	OK           bool            `json:"ok"`
	Profile      string          `json:"profile,omitempty"`
	Mesh         string          `json:"mesh,omitempty"`
	Files        int             `json:"files"`
	Bytes        int64           `json:"bytes"`
	MemAvailable int64           `json:"mem_available,omitempty"`
	Findings     []cache.Finding `json:"findings"`
}

func (a *App) runCacheVerify(ctx context.Context, o *cacheVerifyOptions) error {
	format, err := output.Resolve(o.Format, false, output.Text, output.JSON)
	if err != nil {
		return usageError("%v", err)
	}
	if o.Source == "" {
		return usageError("cache verify needs --source SRC (the checkpoint the cache is for)")
	}
	var minMem int64
	if o.MinMem != "" {
		if minMem, err = cache.ParseBytes(o.MinMem); err != nil {
			return usageError("--min-mem: %v", err)
		}
	}
	res := CacheVerifyResult{Dir: o.Dir, Source: o.Source, Findings: []cache.Finding{}}
	finish := func() error {
		res.OK = len(res.Findings) == 0
		if format == output.JSON {
			if err := output.WriteJSON(a.Out, res); err != nil {
				return err
			}
		} else {
			printFindings(a.Out, &res)
		}
		if !res.OK {
			return silentExit(1)
		}
		return nil
	}
	if minMem > 0 {
		avail, err := cache.MemAvailable(o.MemInfo)
		if err != nil {
			res.Findings = append(res.Findings, cache.Finding{Kind: "memory", Message: err.Error()})
		} else {
			res.MemAvailable = avail
			if avail < minMem {
				res.Findings = append(res.Findings, cache.Finding{Kind: "memory", Message: fmt.Sprintf("MemAvailable is %s, below --min-mem %s", output.Bytes(avail), output.Bytes(minMem))})
			}
		}
	}
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		res.Findings = append(res.Findings, cache.Finding{Kind: cache.FindingManifest, Message: fmt.Sprintf("%s is not a cache directory", o.Dir)})
		return finish()
	}
	folder, err := cache.ResolveFolder(o.Dir, o.Select)
	if err != nil {
		var amb *cache.AmbiguousCacheError
		if errors.As(err, &amb) {
			return usageError("%v", err)
		}
		res.Findings = append(res.Findings, cache.Finding{Kind: cache.FindingManifest, Message: err.Error()})
		return finish()
	}
	m, err := cache.ReadManifest(folder.Path())
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s has no %s: the cache is incomplete (no build finished there)", folder.Path(), cache.ManifestName)
		}
		res.Findings = append(res.Findings, cache.Finding{Kind: cache.FindingManifest, File: cache.ManifestName, Message: msg})
		return finish()
	}
	res.Profile, res.Mesh = m.Profile, m.Mesh
	pf := planFlags{Profile: m.Profile, Rules: o.Rules, Mesh: m.Mesh, Device: m.Device, Tag: m.Tag}
	if o.Rules == "" {
		if _, err := mapping.Builtin(m.Profile); err != nil {
			return usageError("the manifest names profile %q, which is not built in: pass the profile with --rules", m.Profile)
		}
	}
	var planOut strings.Builder
	c, plan, err := a.plan(ctx, o.Source, pf, &planOut)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) && ee.code == 1 {
			res.Findings = append(res.Findings, cache.Finding{Kind: cache.FindingStale, Message: "the source no longer maps with the cache's profile: " + strings.TrimSpace(planOut.String())})
			return finish()
		}
		return err
	}
	defer c.Close()
	prog := ckpt.NewProgress()
	for _, f := range m.Files {
		prog.AddTotal(f.Size)
	}
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache verify", prog)
	if err != nil {
		return usageError("%v", err)
	}
	rep, err := cache.Verify(ctx, folder.Root, m, c, plan, cache.VerifyOptions{Workers: o.Workers, Rehash: o.Rehash, Progress: prog})
	stop()
	if err != nil {
		return inputError(err)
	}
	res.Files, res.Bytes = rep.Files, rep.Bytes
	res.Findings = append(res.Findings, rep.Findings...)
	return finish()
}

func printFindings(w io.Writer, r *CacheVerifyResult) {
	for _, f := range r.Findings {
		if f.File != "" {
			fmt.Fprintf(w, "%s: %s: %s\n", f.Kind, ckpt.EscapeName(f.File), ckpt.EscapeName(f.Message))
		} else {
			fmt.Fprintf(w, "%s: %s\n", f.Kind, ckpt.EscapeName(f.Message))
		}
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "ok: %d files (%s) in %s match the plan of %s and their manifest\n", r.Files, output.Bytes(r.Bytes), r.Dir, r.Source)
		return
	}
	fmt.Fprintf(w, "FAILED: %d problem(s) in %s (%d files checked)\n", len(r.Findings), r.Dir, r.Files)
}

// ---- ls ----

type cacheLsOptions struct {
	Dir    string
	Format string
}

func (a *App) newCacheLsCmd() *cobra.Command {
	o := &cacheLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the .tensorbin files under DIR: name, dtype, layout, per-shard shape, placement, bytes (from their headers)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCacheLs(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Format, "format", "auto", "output format: table, text, json, jsonl, csv, markdown (auto: table on a terminal, text otherwise)")
	return cmd
}

func (a *App) runCacheLs(ctx context.Context, o *cacheLsOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return inputError(fmt.Errorf("listing %s: not a directory", o.Dir))
	}
	es, err := cache.List(o.Dir)
	if err != nil {
		return inputError(err)
	}
	if es == nil {
		es = []cache.ListEntry{}
	}
	bad := 0
	for _, e := range es {
		if e.Error != "" {
			bad++
		}
	}
	switch format {
	case output.JSON:
		if err := output.WriteJSON(a.Out, map[string]any{"dir": o.Dir, "files": es}); err != nil {
			return err
		}
	case output.JSONL:
		if err := output.WriteJSONL(a.Out, es); err != nil {
			return err
		}
	default:
		g := &output.Grid{Header: []string{"name", "dtype", "layout", "shard shape", "placement", "shards", "memory", "bytes"}, Right: map[int]bool{5: true, 7: true}}
		var total int64
		for _, e := range es {
			total += e.Bytes
			if e.Error != "" {
				g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Path), "?", "?", "?", "unreadable: " + ckpt.EscapeName(e.Error), "", "", output.Int(e.Bytes)})
				continue
			}
			shape := make([]int64, len(e.ShardShape))
			for i, d := range e.ShardShape {
				shape[i] = int64(d)
			}
			g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Name), e.DType, e.Layout, output.Shape(shape), e.Placement, fmt.Sprint(e.Shards), e.Memory, output.Int(e.Bytes)})
		}
		if err := g.Render(a.Out, format); err != nil {
			return err
		}
		if format != output.CSV {
			fmt.Fprintf(a.Out, "%d files, %s\n", len(es), output.Bytes(total))
		}
	}
	if bad > 0 {
		return silentExit(1)
	}
	return nil
}

// ---- pack / unpack ----

type cachePackOptions struct {
	Dir, Out string
	Workers  int
	Progress string
}

func (a *App) newCachePackCmd() *cobra.Command {
	o := &cachePackOptions{}
	cmd := &cobra.Command{
		Use:   "pack DIR -o FILE.tar.zst",
		Short: "Archive a built cache (tar + zstd, manifest last), checking every file's hash against the manifest",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCachePack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Out, "output", "o", "", "archive to write (FILE.tar.zst)")
	f.IntVar(&o.Workers, "workers", 0, "zstd encoder concurrency (default: all cores)")
	f.StringVar(&o.Progress, "progress", "auto", "progress on stderr: auto, bar, plain, none")
	return cmd
}

func (a *App) runCachePack(ctx context.Context, o *cachePackOptions) error {
	if o.Out == "" {
		return usageError("cache pack needs -o FILE.tar.zst")
	}
	af, err := ckpt.CreateAtomic(o.Out)
	if err != nil {
		return inputError(err)
	}
	defer af.Abort()
	prog := ckpt.NewProgress()
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache pack", prog)
	if err != nil {
		return usageError("%v", err)
	}
	m, err := cache.Pack(ctx, o.Dir, af, cache.PackOptions{Workers: o.Workers, Progress: prog})
	stop()
	if err != nil {
		return inputError(err)
	}
	if err := af.Commit(); err != nil {
		return err
	}
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	size := int64(0)
	if st, err := os.Stat(o.Out); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(a.Out, "packed %d files (%s) into %s (%s)\n", len(m.Files), output.Bytes(total), o.Out, output.Bytes(size))
	return nil
}

type cacheUnpackOptions struct {
	File, Dir string
	Progress  string
}

func (a *App) newCacheUnpackCmd() *cobra.Command {
	o := &cacheUnpackOptions{}
	cmd := &cobra.Command{
		Use:   "unpack FILE.tar.zst -C DIR",
		Short: "Extract a packed cache into DIR, verifying every file against the manifest before anything is put in place",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			return a.runCacheUnpack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Dir, "directory", "C", "", "cache root to extract into")
	f.StringVar(&o.Progress, "progress", "auto", "progress on stderr: auto, bar, plain, none")
	return cmd
}

func (a *App) runCacheUnpack(ctx context.Context, o *cacheUnpackOptions) error {
	if o.Dir == "" {
		return usageError("cache unpack needs -C DIR")
	}
	f, err := os.Open(o.File)
	if err != nil {
		return inputError(err)
	}
	defer f.Close()
	prog := ckpt.NewProgress()
	if st, err := f.Stat(); err == nil {
		prog.AddTotal(st.Size())
	}
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache unpack", prog)
	if err != nil {
		return usageError("%v", err)
	}
	m, err := cache.Unpack(ctx, countingReader{f, prog}, o.Dir, cache.UnpackOptions{})
	stop()
	if err != nil {
		return inputError(fmt.Errorf("unpacking %s: %w", o.File, err))
	}
	var total int64
	for _, r := range m.Files {
		total += r.Size
	}
	fmt.Fprintf(a.Out, "unpacked %d files (%s) into %s; all match the manifest\n", len(m.Files), output.Bytes(total), o.Dir)
	return nil
}

// countingReader counts the archive bytes read.
type countingReader struct {
	r io.Reader
	p *ckpt.Progress
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.Add(int64(n))
	return n, err
}

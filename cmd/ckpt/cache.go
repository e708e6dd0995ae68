package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *App) newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Prebuild, verify, list and ship the Tenstorrent tensor cache (.tensorbin files) of a checkpoint",
		Example: `  ckpt cache build hf:Qwen/Qwen3.6-27B-FP8 -o /data/tt-cache --mesh 1x2
  ckpt cache verify /data/tt-cache --source hf:Qwen/Qwen3.6-27B-FP8`,
		Args:                       subcommands,
		SuggestionsMinimumDistance: maxSuggestDistance,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("cache needs a subcommand: build, verify, ls, pack, unpack, compare or identify (see %s --help)", cmd.CommandPath())
		},
	}
	cmd.AddCommand(a.newCacheBuildCmd(), a.newCacheVerifyCmd(), a.newCacheLsCmd(), a.newCachePackCmd(), a.newCacheUnpackCmd(), a.newCacheCompareCmd(), a.newCacheIdentifyCmd())
	return cmd
}

// planFlags are the mapping flags shared by build and verify. Set holds
// the --set NAME=VALUE overrides of profile variables.
type planFlags struct {
	Profile, Rules, Mesh, Device, Tag string
	Set                               []string
}

func (p *planFlags) add(f interface {
	StringVar(*string, string, string, string)
	StringArrayVar(*[]string, string, []string, string)
	Var(pflag.Value, string, string)
}, meshDefault string) {
	enumFlag(f, &p.Profile, "profile", mapping.BuiltinName, profileEnum(), "built-in mapping profile ({})")
	f.StringVar(&p.Rules, "rules", "", "load the mapping profile from this JSON file (see ckpt map --dump)")
	f.StringVar(&p.Mesh, "mesh", meshDefault, "device mesh, 1xN")
	f.StringVar(&p.Device, "device", "", "device folder of the cache root (default: $MESH_DEVICE, else upstream's name for the mesh: P150, P300, P150x4, P150x8 on Blackhole)")
	f.StringVar(&p.Tag, "tag", "", "cache tag of tensor_cache_<tag>_mesh1xN (default: the profile's, e.g. bfp8)")
	addSetFlag(f, &p.Set)
}

// planOptions are the plan flags as mapping.PlanOptions.
func (p *planFlags) planOptions(getenv func(string) string) mapping.PlanOptions {
	return mapping.PlanOptions{Profile: p.Profile, Rules: p.Rules, Mesh: p.Mesh, Device: p.Device, Tag: p.Tag, Set: p.Set, MeshDevice: getenv("MESH_DEVICE")}
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
	NaN            string
	Fsync          bool
	DeviceDRAM     string
}

func (a *App) newCacheBuildCmd() *cobra.Command {
	o := &cacheBuildOptions{}
	cmd := &cobra.Command{
		Use:   "build SRC --out DIR",
		Short: "Write the TP-sharded tensor cache of the mapping plan (streaming, bounded memory, crash-safe; skips unchanged files)",
		Example: `  ckpt cache build ./Qwen3.6-27B-FP8 -o /data/tt-cache --mesh 1x2
  ckpt cache build hf:Qwen/Qwen3.6-27B-FP8 -o $TT_CACHE_PATH --set proj_1d_decode=false --format json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			return a.runCacheBuild(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out, "cache root (TT_CACHE_PATH): files and manifest go to <out>/<device>/tensor_cache_<tag>_mesh1xN/; other folders there are left alone")
	o.planFlags.add(f, "1x2")
	f.IntVar(&o.Workers, "workers", 0, "conversion goroutines (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, formatEnum(output.Text, output.JSON), "output format: {} (auto: text)")
	f.BoolVar(&o.Force, "force", false, "rebuild every file, even unchanged ones")
	f.BoolVar(&o.Fsync, "fsync", true, "fsync every file before renaming it into place; --fsync=false leaves the bytes to the kernel's write-back, as the serving stack does with its own cache (page-cache speed; files written so are hashed again by a build after a reboot, and cache verify checks them)")
	addDeviceDRAMFlag(f, &o.DeviceDRAM)
	f.BoolVar(&o.AllowNonFinite, "allow-nonfinite", false, "build even from source tensors holding NaN or Inf (recorded in the manifest); default: fail naming the tensor, exit 1")
	enumFlag(f, &o.NaN, "nan", build.NaNVector, nanBuildEnum, "with --allow-nonfinite, the bits of a NaN that the serving host's torch produces (float32 → bf16 cast, bf16 dequantisation, bf16 arithmetic): {}; a bf16 NaN no arithmetic touches keeps its bits either way")
	return cmd
}

func (a *App) runCacheBuild(ctx context.Context, o *cacheBuildOptions) error {
	format, err := output.Resolve(o.Format, false, output.Text, output.JSON)
	if err != nil {
		return usageError("%v", err)
	}
	if o.Out == "" {
		return usageError("cache build needs -o/--out DIR")
	}
	if _, err := build.NaNBits(o.NaN); err != nil {
		return usageError("--nan: %v", err)
	}
	dram, err := parseDeviceDRAM(o.DeviceDRAM)
	if err != nil {
		return err
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// Keep the heap (bands, tile staging) well inside the 512 MiB budget.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(384 << 20))
	}
	start := time.Now()
	c, plan, err := mapping.Resolve(ctx, o.Source, o.planOptions(a.Getenv), a.Openers...)
	var pe *mapping.PlanError
	if errors.As(err, &pe) {
		c.Close()
		printProblems(a.Out, pe.Problems)
		fmt.Fprintf(a.Out, "the %s plan of %s on mesh %s has %d problem(s) (see ckpt map)\n", plan.Profile.Name, o.Source, plan.Mesh, len(pe.Problems))
		return silentExit(exitFailed)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	a.warnIssues(c)
	prog := ckpt.NewProgress()
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache build", prog)
	if err != nil {
		return usageError("%v", err)
	}
	res, err := build.Run(ctx, c, plan, o.Out, build.Options{Workers: o.Workers, Progress: prog, Tool: "ckpt", ToolVersion: Version, Force: o.Force, AllowNonFinite: o.AllowNonFinite, NaN: o.NaN, NoSync: !o.Fsync})
	stop()
	if err != nil {
		return err
	}
	out := res.Summary(o.Out, plan, time.Since(start).Seconds())
	mem, err := plan.Memory(dram)
	if err != nil {
		return err
	}
	out.PerDevice, out.Memory = mem.PerDevice, &mem
	// Warnings and notes are not the result: stderr, prefixed (-q drops
	// them); the JSON document keeps them in warnings.
	for _, w := range plan.GroupedWarnings() {
		fmt.Fprintf(a.Err, "ckpt: warning: %s\n", w)
	}
	for _, n := range res.Notes() {
		fmt.Fprintf(a.Err, "ckpt: note: %s\n", n)
	}
	if format == output.JSON {
		return output.WriteJSON(a.Out, out)
	}
	fmt.Fprintf(a.Out, "%s on mesh %s: %d files in %s: %d built, %d unchanged, %d removed\n", out.Profile, out.Mesh, out.Files,
		filepath.Join(o.Out, filepath.FromSlash(plan.CacheDir)), len(out.Built), out.Skipped, len(out.Removed))
	fmt.Fprintf(a.Out, "streamed %d source tensors (%s elements, %s) in %.1fs: %.0f M elements/s\n", out.SourceTensors,
		output.Int(out.SourceElements), output.Bytes(out.SourceBytes), out.Seconds, out.ElementsPerSecond/1e6)
	if err := printMemory(a.Out, output.Text, plan.Device, &mem, mem.PerDevice); err != nil {
		return err
	}
	fmt.Fprintf(a.Out, "manifest: %s\n", out.Manifest)
	return nil
}

// ---- verify ----

type cacheVerifyOptions struct {
	Dir, Source string
	Rules       string
	Set         []string
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
		Example: `  ckpt cache verify /data/tt-cache --source ./Qwen3.6-27B-FP8
  ckpt cache verify /data/tt-cache --source hf:Qwen/Qwen3.6-27B-FP8 --mesh 1x2 --min-mem 4GiB --format json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCacheVerify(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Source, "source", "", "the checkpoint the cache must have been built from (required)")
	f.StringVar(&o.Rules, "rules", "", "mapping profile JSON the cache was built with (default: the built-in profile named in the manifest)")
	f.StringArrayVar(&o.Set, "set", nil, "override a profile variable, NAME=true|false (repeatable; default: the settings recorded in the manifest)")
	f.StringVar(&o.MinMem, "min-mem", "", "also fail when MemAvailable is below this size (e.g. 4Gi = 4·2³⁰ bytes, 4G = 4·10⁹ bytes)")
	f.StringVar(&o.MemInfo, "meminfo", "/proc/meminfo", "meminfo file to read MemAvailable from")
	_ = f.MarkHidden("meminfo")
	addSelectFlags(f, &o.Select, "verify only the cache folders of DIR (a cache root) for this mesh (default: every folder, one verdict each)",
		"verify only the cache folders with this tag", "verify only the cache folders for this device")
	f.BoolVar(&o.Rehash, "rehash", false, "re-read and hash every source tensor instead of trusting unchanged file size, mtime and offsets")
	f.IntVar(&o.Workers, "workers", 0, "hashing goroutines (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.Markdown), "output format: {} (auto: table on a terminal, text otherwise; jsonl: the finding rows)")
	return cmd
}

func (a *App) runCacheVerify(ctx context.Context, o *cacheVerifyOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	if o.Source == "" {
		return usageError("cache verify needs --source SRC (the checkpoint the cache is for)")
	}
	var minMem int64
	if o.MinMem != "" {
		if minMem, err = ckpt.ParseSize(o.MinMem); err != nil {
			return usageError("--min-mem: %v", err)
		}
	}
	prog := ckpt.NewProgress()
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache verify", prog)
	if err != nil {
		return usageError("%v", err)
	}
	all, err := check.RunAll(ctx, o.Dir, check.Options{Source: o.Source, Openers: a.Openers, Rules: o.Rules, Set: o.Set, Select: o.Select, MinMem: minMem, MemInfo: o.MemInfo,
		VerifyOptions: check.VerifyOptions{Workers: o.Workers, Rehash: o.Rehash, Progress: prog}})
	stop()
	if err != nil {
		return err
	}
	if len(all) > 1 {
		return a.printCheckAll(format, o, all)
	}
	res := all[0]
	switch format {
	case output.JSON:
		err = output.WriteJSON(a.Out, res)
	case output.JSONL:
		err = output.WriteJSONL(a.Out, "finding", res.Findings, struct {
			Dir      string `json:"dir"`
			Source   string `json:"source"`
			OK       bool   `json:"ok"`
			Files    int    `json:"files"`
			Bytes    int64  `json:"bytes"`
			Findings int    `json:"findings"`
		}{res.Dir, res.Source, res.OK, res.Files, res.Bytes, len(res.Findings)})
	default:
		err = printFindings(a.Out, format, res)
	}
	if err != nil {
		return err
	}
	if !res.OK {
		return silentExit(exitFailed)
	}
	return nil
}

// CheckAllResult is the cache verify JSON document of a cache root
// holding several cache folders: one cache verify document per folder.
type CheckAllResult struct {
	Schema  ckpt.Schema     `json:"schema_version"`
	Dir     string          `json:"dir"`
	Source  string          `json:"source"`
	OK      bool            `json:"ok"`
	Folders []*check.Result `json:"folders"`
}

// printCheckAll renders the checks of several cache folders: each
// folder's findings and verdict, then a line counting the verdicts (json:
// CheckAllResult; jsonl: the findings with their folder's dir).
func (a *App) printCheckAll(format string, o *cacheVerifyOptions, all []*check.Result) error {
	doc := CheckAllResult{Dir: o.Dir, Source: o.Source, OK: true, Folders: all}
	failed := 0
	for _, r := range all {
		if !r.OK {
			doc.OK = false
			failed++
		}
	}
	var err error
	switch format {
	case output.JSON:
		err = output.WriteJSON(a.Out, doc)
	case output.JSONL:
		var rows []folderFinding
		files, bytes, n := 0, int64(0), 0
		for _, r := range all {
			for _, f := range r.Findings {
				rows = append(rows, folderFinding{r.Dir, f})
			}
			files, bytes, n = files+r.Files, bytes+r.Bytes, n+len(r.Findings)
		}
		err = output.WriteJSONL(a.Out, "finding", rows, struct {
			Dir      string `json:"dir"`
			Source   string `json:"source"`
			OK       bool   `json:"ok"`
			Folders  int    `json:"folders"`
			Failed   int    `json:"failed"`
			Files    int    `json:"files"`
			Bytes    int64  `json:"bytes"`
			Findings int    `json:"findings"`
		}{o.Dir, o.Source, doc.OK, len(all), failed, files, bytes, n})
	default:
		for i, r := range all {
			if i > 0 && format != output.Text {
				fmt.Fprintln(a.Out)
			}
			if err = printFindings(a.Out, format, r); err != nil {
				return err
			}
		}
		verdict := "all ok"
		if failed > 0 {
			verdict = fmt.Sprintf("%d FAILED", failed)
		}
		_, err = fmt.Fprintf(a.Out, "%d cache folders in %s checked: %s\n", len(all), o.Dir, verdict)
	}
	if err != nil {
		return err
	}
	if !doc.OK {
		return silentExit(exitFailed)
	}
	return nil
}

// folderFinding is a finding row of a multi-folder cache verify (jsonl):
// the finding's keys after "dir", the folder's path.
type folderFinding struct {
	Dir     string
	Finding ckpt.Finding
}

func (f folderFinding) MarshalJSON() ([]byte, error) {
	dir, err := json.Marshal(f.Dir)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(f.Finding)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("finding %s is not a JSON object", f.Finding.ID)
	}
	out := append([]byte(`{"dir":`), dir...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// printFindings renders a cache check: one line per finding in text
// ("id: file: message"), a table (finding, file, message) otherwise; then
// the verdict.
func printFindings(w io.Writer, format string, r *check.Result) error {
	if format == output.Text {
		for _, f := range r.Findings {
			if f.File() != "" {
				fmt.Fprintf(w, "%s: %s: %s\n", f.ID, ckpt.EscapeName(f.File()), ckpt.EscapeName(f.Message))
			} else {
				fmt.Fprintf(w, "%s: %s\n", f.ID, ckpt.EscapeName(f.Message))
			}
		}
	} else if len(r.Findings) > 0 {
		g := &output.Grid{Header: []string{"finding", "file", "message"}}
		for _, f := range r.Findings {
			g.Rows = append(g.Rows, []string{f.ID, ckpt.EscapeName(f.File()), ckpt.EscapeName(f.Message)})
		}
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(w, "ok: %d files (%s) in %s match the plan of %s and their manifest; %s\n", r.Files, output.Bytes(r.Bytes), r.Dir, r.Source, r.Trusted())
		return nil
	}
	fmt.Fprintf(w, "FAILED: %d problem(s) in %s (%d files checked)\n", len(r.Findings), r.Dir, r.Files)
	return nil
}

// addSelectFlags registers --mesh, --tag and --device, which pick cache
// folders of a cache root (cache.Selector).
func addSelectFlags(f interface {
	StringVar(*string, string, string, string)
}, sel *cache.Selector, mesh, tag, device string) {
	f.StringVar(&sel.Mesh, "mesh", "", mesh)
	f.StringVar(&sel.Tag, "tag", "", tag)
	f.StringVar(&sel.Device, "device", "", device)
}

// ---- ls ----

type cacheLsOptions struct {
	Dir    string
	Format string
	Select cache.Selector
}

func (a *App) newCacheLsCmd() *cobra.Command {
	o := &cacheLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the .tensorbin files under DIR: name, dtype, layout, per-shard shape, placement, bytes (from their headers)",
		Example: `  ckpt cache ls /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2
  ckpt cache ls /data/tt-cache --format jsonl`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCacheLs(cmd.Context(), o)
		},
	}
	enumFlag(cmd.Flags(), &o.Format, "format", output.Auto, formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown), "output format: {} (auto: table on a terminal, text otherwise)")
	addSelectFlags(cmd.Flags(), &o.Select, "list only the cache folder of DIR (a cache root) for this mesh (default: everything under DIR)",
		"list only the cache folder with this tag", "list only the cache folder for this device")
	return cmd
}

func (a *App) runCacheLs(ctx context.Context, o *cacheLsOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	res, err := cache.ListDir(o.Dir, o.Select)
	if err != nil {
		return err
	}
	es := res.Files
	switch format {
	case output.JSON:
		if err := output.WriteJSON(a.Out, res); err != nil {
			return err
		}
	case output.JSONL:
		var total int64
		for _, e := range es {
			total += e.Bytes
		}
		sum := struct {
			Dir        string `json:"dir"`
			Files      int    `json:"files"`
			Bytes      int64  `json:"bytes"`
			Unreadable int    `json:"unreadable"`
		}{res.Dir, len(es), total, res.Unreadable()}
		if err := output.WriteJSONL(a.Out, "file", es, sum); err != nil {
			return err
		}
	default:
		g := &output.Grid{Header: []string{"name", "dtype", "layout", "shard shape", "placement", "shards", "memory", "bytes"}, Right: map[int]bool{5: true, 7: true}, Sizes: map[int]bool{7: true}}
		tableForPeople(g, map[string]int{"bytes": 1, "shard shape": 2, "dtype": 3, "placement": 4, "shards": 5, "layout": 6, "memory": 7})
		var total int64
		for _, e := range es {
			total += e.Bytes
			if e.Error != "" {
				g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Path), "?", "?", "?", "unreadable: " + ckpt.EscapeName(e.Error), "", "", output.Int(e.Bytes)})
				continue
			}
			shape := make([]int64, len(e.DeviceShape))
			for i, d := range e.DeviceShape {
				shape[i] = int64(d)
			}
			g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Name), e.DType, e.Layout, output.Shape(shape), e.PlacementText, fmt.Sprint(e.Shards), e.MemoryText, output.Int(e.Bytes)})
		}
		if err := g.Render(a.Out, format); err != nil {
			return err
		}
		if format != output.CSV {
			unfinished := ""
			switch n := len(res.Unfinished); {
			case n == 1:
				unfinished = " (UNFINISHED build: no manifest)"
			case n > 1:
				unfinished = fmt.Sprintf(" (%d UNFINISHED builds: no manifest)", n)
			}
			fmt.Fprintf(a.Out, "%d files, %s%s\n", len(es), output.Bytes(total), unfinished)
		}
	}
	if len(res.Unfinished) > 0 {
		// The listing stays on stdout; why it is not a usable cache goes
		// to stderr, exit 1.
		return &exitError{code: exitFailed, err: errors.New(strings.Join(res.Unfinished, "; "))}
	}
	if res.Unreadable() > 0 {
		return silentExit(exitFailed)
	}
	return nil
}

// ---- pack / unpack ----

type cachePackOptions struct {
	Dir, Out string
	Workers  int
	Progress string
	Select   cache.Selector
}

func (a *App) newCachePackCmd() *cobra.Command {
	o := &cachePackOptions{}
	cmd := &cobra.Command{
		Use:   "pack DIR --out FILE.tar.zst",
		Short: "Archive a built cache (tar + zstd, manifest last), checking every file's hash against the manifest",
		Example: `  ckpt cache pack /data/tt-cache -o cache.tar.zst
  ckpt cache pack /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2 -o bfp8-1x2.tar.zst`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return a.runCachePack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out, "archive to write (FILE.tar.zst)")
	deprecatedAlias(f, "output", "", "out")
	f.IntVar(&o.Workers, "workers", 0, "zstd encoder concurrency (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	addSelectFlags(f, &o.Select, "when DIR is a cache root with several cache folders: pack the one for this mesh",
		"when DIR is a cache root with several cache folders: pack the one with this tag", "when DIR is a cache root with several cache folders: pack the one for this device")
	return cmd
}

func (a *App) runCachePack(ctx context.Context, o *cachePackOptions) error {
	if o.Out == "" {
		return usageError("cache pack needs -o/--out FILE.tar.zst")
	}
	af, err := atomicfile.Create(o.Out)
	if err != nil {
		return err
	}
	defer af.Abort()
	prog := ckpt.NewProgress()
	stop, err := output.StartProgress(o.Progress, a.ErrTerm, a.Err, "cache pack", prog)
	if err != nil {
		return usageError("%v", err)
	}
	m, err := archive.Pack(ctx, o.Dir, af, archive.PackOptions{Workers: o.Workers, Progress: prog, Select: o.Select})
	stop()
	if err != nil {
		return err
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
		Use:     "unpack FILE.tar.zst -o DIR",
		Short:   "Extract a packed cache into DIR, verifying every file against the manifest before anything is put in place",
		Example: `  ckpt cache unpack cache.tar.zst -o /data/tt-cache`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			return a.runCacheUnpack(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Dir, "cache root to extract into")
	deprecatedAlias(f, "directory", "C", "out")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	return cmd
}

func (a *App) runCacheUnpack(ctx context.Context, o *cacheUnpackOptions) error {
	if o.Dir == "" {
		return usageError("cache unpack needs -o/--out DIR")
	}
	f, err := os.Open(o.File)
	if err != nil {
		return err
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
	m, err := archive.Unpack(ctx, countingReader{f, prog}, o.Dir, archive.UnpackOptions{})
	stop()
	if err != nil {
		return fmt.Errorf("unpacking %s: %w", o.File, err)
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

package main

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *App) newCacheCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Prebuild, verify, list and ship the Tenstorrent tensor cache (.tensorbin files) of a checkpoint",
		Example: `  ckpt cache build hf:Qwen/Qwen3.5-27B-FP8 -o /data/tt-cache --mesh 1x2
  ckpt cache verify /data/tt-cache --source hf:Qwen/Qwen3.5-27B-FP8`,
		Args:                       subcommands,
		SuggestionsMinimumDistance: maxSuggestDistance,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError("cache needs a subcommand: build, verify, ls, pack, unpack, compare or identify (see %s --help)", cmd.CommandPath())
		},
	}
	cmd.AddCommand(a.newCacheBuildCmd(nil), a.newCacheVerifyCmd(nil), a.newCacheLsCmd(nil), a.newCachePackCmd(nil), a.newCacheUnpackCmd(nil),
		a.newCacheCompareCmd(nil), a.newCacheIdentifyCmd())
	return cmd
}

// The formats of the cache commands' --format (each command's
// output.Resolve takes the same list).
var (
	cacheBuildFormats   = formatEnum(output.Table, output.Text, output.JSON)
	cacheVerifyFormats  = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.Markdown)
	cacheLsFormats      = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	cacheCompareFormats = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
)

// planFlags are the mapping flags shared by build and verify. Set holds
// the --set NAME=VALUE overrides of profile variables.
type planFlags struct {
	Profile, Rules, Mesh, Device, Tag string
	Set                               []string
	// Variant is the --variant of the source (addVariantFlag).
	Variant string
	// Ignore are the --ignore globs (addIgnoreFlag).
	Ignore []string
}

// ignoreUsage is the help of --ignore GLOB for map and cache build.
const ignoreUsage = "leave source tensors matching this glob out of the plan, listed as ignored with the reason \"--ignore GLOB\" " +
	"(`*` within a dotted segment, `**` across; only tensors no rule maps: a mapped one stays mapped, with a warning); " +
	"recorded in the cache manifest; repeatable"

// add registers the plan flags of cache build, their values in v.
func (p *planFlags) add(f *pflag.FlagSet, v *planValues) {
	enumFlag(f, &p.Profile, "profile", mapping.BuiltinName, profileEnum(), "built-in mapping profile ({})")
	f.StringVar(&p.Rules, "rules", "", "load the mapping profile from this JSON file (see ckpt map --dump)")
	meshFlag(f, &v.mesh, &p.Mesh, "device mesh, 1xN")
	f.StringVar(&p.Device, "device", "",
		"device folder of the cache root (default: $MESH_DEVICE, else upstream's name for the mesh: P150, P300, P150x4, P150x8 on Blackhole)")
	f.StringVar(&p.Tag, "tag", "", "cache tag of tensor_cache_<tag>_mesh1xN (default: the profile's, e.g. bfp8)")
	addSetFlag(f, &v.set, &p.Set)
	globsFlag(f, &v.ignore, &p.Ignore, "ignore", ignoreUsage)
}

// planOptions are the plan flags as mapping.PlanOptions, with the values
// that parse (planValues.err reports the others).
func (p *planFlags) planOptions(getenv func(string) string, v *planValues) mapping.PlanOptions {
	mesh, _ := v.mesh.Mesh()
	set, _ := v.set.settings()
	ignore, _ := ignores(&v.ignore)
	return mapping.PlanOptions{Profile: p.Profile, Rules: p.Rules, Mesh: mesh, Device: p.Device, Tag: p.Tag, Set: set, MeshDevice: getenv("MESH_DEVICE"),
		Variant: p.Variant, Ignore: ignore, Words: flagWords()}
}

// ---- build ----

type cacheBuildOptions struct {
	Source, Out string
	// OutFromEnv: Out is $TT_CACHE_PATH, no -o/--out was given.
	OutFromEnv bool
	planFlags
	Workers        int
	Progress       string
	Format         string
	Force          bool
	AllowNonFinite bool
	NaN            string
	Fsync          bool
	NoSpaceCheck   bool
	DeviceDRAM     string
}

// cacheBuildValues are what cache build's flags with a syntax parsed
// into, as they were set (their text stays in cacheBuildOptions).
type cacheBuildValues struct {
	plan       planValues
	deviceDRAM sizeValue
}

// newCacheBuildCmd is ckpt cache build; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newCacheBuildCmd(runF func(context.Context, *cacheBuildOptions) error) *cobra.Command {
	o, v := &cacheBuildOptions{}, &cacheBuildValues{}
	var opt build.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "build SRC --out DIR",
		Short: "Write the TP-sharded tensor cache of the mapping plan (streaming, bounded memory, crash-safe; skips unchanged files)",
		Example: `  ckpt cache build ./Qwen3.5-27B-FP8 -o /data/tt-cache --mesh 1x2
  ckpt cache build hf:Qwen/Qwen3.5-27B-FP8 -o $TT_CACHE_PATH --set proj_1d_decode=false --format json`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			if o.Out == "" && a.Getenv != nil && a.Getenv("TT_CACHE_PATH") != "" {
				// The cache root the serving stack reads, as the help says.
				o.Out, o.OutFromEnv = a.Getenv("TT_CACHE_PATH"), true
			}
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if o.OutFromEnv {
				a.note(fmt.Sprintf("no -o/--out: building under $TT_CACHE_PATH (%s)", o.Out))
			}
			return a.runCacheBuild(cmd.Context(), o, v, opt)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out,
		"cache root (default: $TT_CACHE_PATH): files and manifest go to <out>/<device>/tensor_cache_<tag>_mesh1xN/; other folders there are left alone")
	o.planFlags.add(f, &v.plan)
	addVariantFlag(f, &o.Variant)
	f.IntVar(&o.Workers, "workers", 0, "conversion goroutines (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, cacheBuildFormats,
		"output format: {} (auto: table on a terminal, text otherwise; the per-device block as map shows it)")
	f.BoolVar(&o.Force, "force", false, "rebuild every file, even unchanged ones")
	f.BoolVar(&o.Fsync, "fsync", true, "fsync every file before renaming it into place; "+
		"--fsync=false leaves the bytes to the kernel's write-back, as the serving stack does with its own cache "+
		"(page-cache speed; files written so are hashed again by a build after a reboot, and cache verify checks them)")
	f.BoolVar(&o.NoSpaceCheck, "no-space-check", false, "build even when the file system of the cache folder has less free space than the files to write "+
		"(default: refuse before writing anything, naming both sizes, exit 3)")
	addDeviceDRAMFlag(f, &v.deviceDRAM, &o.DeviceDRAM)
	f.BoolVar(&o.AllowNonFinite, "allow-nonfinite", false,
		"build even from source tensors holding NaN or Inf (recorded in the manifest); default: fail naming the tensor, exit 1")
	enumFlag(f, &o.NaN, "nan", string(build.NaNVector), nanBuildEnum, "with --allow-nonfinite, the bits of a NaN that the serving host's torch produces "+
		"(float32 → bf16 cast, bf16 dequantisation, bf16 arithmetic): {}; a bf16 NaN no arithmetic touches keeps its bits either way")
	return cmd
}

// ---- verify ----

type cacheVerifyOptions struct {
	Dir, Source string
	Variant     string
	Rules       string
	Set         []string
	Ignore      []string
	MinMem      string
	MemInfo     string
	Rehash      bool
	ReadData    bool
	Strict      bool
	Workers     int
	Progress    string
	Format      string
	Select      cache.Selector
}

// cacheVerifyValues are what cache verify's flags with a syntax parsed
// into, as they were set (their text stays in cacheVerifyOptions).
type cacheVerifyValues struct {
	set    settingsValue
	ignore globsValue
	minMem sizeValue
}

// newCacheVerifyCmd is ckpt cache verify; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newCacheVerifyCmd(runF func(context.Context, *cacheVerifyOptions) error) *cobra.Command {
	o, v := &cacheVerifyOptions{}, &cacheVerifyValues{}
	var opt check.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "verify DIR [--source SRC]",
		Short: "Fail-closed preflight of a built cache: missing, extra, truncated, corrupted and stale files; exit 1 on any",
		Example: `  ckpt cache verify /data/tt-cache --source ./Qwen3.5-27B-FP8
  ckpt cache verify /data/tt-cache --source hf:Qwen/Qwen3.5-27B-FP8 --mesh 1x2 --min-mem 4GiB --format json`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runCacheVerify(cmd.Context(), o, v, opt)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Source, "source", "", "the checkpoint the cache must have been built from (default: the source its manifest names, with a note)")
	addVariantFlag(f, &o.Variant)
	f.StringVar(&o.Rules, "rules", "", "mapping profile JSON the cache was built with (default: the built-in profile named in the manifest)")
	settingsFlag(f, &v.set, &o.Set, "override a profile variable, NAME=true|false (repeatable; default: the settings recorded in the manifest)")
	globsFlag(f, &v.ignore, &o.Ignore, "ignore",
		"the --ignore globs the cache must have been built with (repeatable; default: those recorded in the manifest; a different set is a manifest finding)")
	sizeFlag(f, &v.minMem, &o.MinMem, "min-mem", "also fail when MemAvailable is below this size (e.g. 4Gi = 4·2³⁰ bytes, 4G = 4·10⁹ bytes)")
	f.StringVar(&o.MemInfo, "meminfo", check.DefaultMemInfo, "meminfo file to read MemAvailable from")
	_ = f.MarkHidden("meminfo")
	addSelectFlags(f, &o.Select, "verify only the cache folders of DIR (a cache root) for this mesh (default: every folder, one verdict each)",
		"verify only the cache folders with this tag", "verify only the cache folders for this device")
	f.BoolVar(&o.Rehash, "rehash", false, "re-read and hash every source tensor instead of trusting unchanged file size, mtime and offsets")
	f.BoolVar(&o.ReadData, "read-data", false,
		"also compare every file's data with what SRC builds to (reads the whole source; without it the data is held against the manifest's hashes only)")
	f.BoolVar(&o.Strict, "strict", false, "warnings fail too: exit 1 when a text folder checked alone names a vision folder that is not there")
	f.IntVar(&o.Workers, "workers", 0, "hashing goroutines (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	enumFlag(f, &o.Format, "format", output.Auto, cacheVerifyFormats, "output format: {} (auto: table on a terminal, text otherwise; jsonl: the finding rows)")
	return cmd
}

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

// newCacheLsCmd is ckpt cache ls; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newCacheLsCmd(runF func(context.Context, *cacheLsOptions) error) *cobra.Command {
	o := &cacheLsOptions{}
	cmd := &cobra.Command{
		Use:   "ls DIR",
		Short: "List the .tensorbin files under DIR: name, dtype, layout, per-shard shape, placement, bytes (from their headers)",
		Example: `  ckpt cache ls /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2
  ckpt cache ls /data/tt-cache --format jsonl`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runCacheLs(cmd.Context(), o)
		},
	}
	enumFlag(cmd.Flags(), &o.Format, "format", output.Auto, cacheLsFormats, "output format: {} (auto: table on a terminal, text otherwise)")
	addSelectFlags(cmd.Flags(), &o.Select, "list only the cache folder of DIR (a cache root) for this mesh (default: everything under DIR)",
		"list only the cache folder with this tag", "list only the cache folder for this device")
	return cmd
}

// ---- pack / unpack ----

type cachePackOptions struct {
	Dir, Out string
	Workers  int
	Progress string
	Select   cache.Selector
}

// newCachePackCmd is ckpt cache pack; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newCachePackCmd(runF func(context.Context, *cachePackOptions) error) *cobra.Command {
	o := &cachePackOptions{}
	var req archive.PackOptions // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "pack DIR --out FILE.tar.zst",
		Short: "Archive a built cache folder (a vision model's two folders together; tar + zstd, manifest first), checking every file's hash against the manifest",
		Example: `  ckpt cache pack /data/tt-cache -o cache.tar.zst
  ckpt cache pack /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2 -o bfp8-1x2.tar.zst`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			var err error
			req, err = o.options()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runCachePack(cmd.Context(), o, req)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Out, "archive to write (FILE.tar.zst)")
	deprecatedAlias(f, "output", "", "out")
	f.IntVar(&o.Workers, "workers", 0, "zstd encoder concurrency (default: all cores)")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	addSelectFlags(f, &o.Select, "when DIR is a cache root with several cache folders: pack the one for this mesh",
		"when DIR is a cache root with several cache folders: pack the one with this tag",
		"when DIR is a cache root with several cache folders: pack the one for this device")
	return cmd
}

type cacheUnpackOptions struct {
	File, Dir string
	Progress  string
}

// newCacheUnpackCmd is ckpt cache unpack; runF, when set, runs instead of the workflow
// (tests of the option parsing).
func (a *App) newCacheUnpackCmd(runF func(context.Context, *cacheUnpackOptions) error) *cobra.Command {
	o := &cacheUnpackOptions{}
	var req archive.UnpackOptions // built once, in PreRunE
	cmd := &cobra.Command{
		Use: "unpack FILE.tar.zst -o DIR",
		Short: "Extract a packed cache folder (or a vision model's two) into DIR (a cache root, or that folder), " +
			"checking every entry against the manifest, and swap it in whole",
		Example: `  ckpt cache unpack cache.tar.zst -o /data/tt-cache
  ckpt cache unpack cache.tar.zst -o /data/tt-cache/P300/tensor_cache_bfp8_mesh1x2`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.File = args[0]
			var err error
			req, err = o.options()
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runCacheUnpack(cmd.Context(), o, req)
		},
	}
	f := cmd.Flags()
	addOutFlag(f, &o.Dir, "cache root to extract into (the archive's folder under it), or the cache folder itself (the archive must hold it)")
	deprecatedAlias(f, "directory", "C", "out")
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr: {}")
	return cmd
}

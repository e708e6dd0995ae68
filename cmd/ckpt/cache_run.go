package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/list"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
)

// The cache commands: each runs its library workflow (build.Run,
// check.Run, list.Run, archive.Pack, archive.Unpack) with
// the progress renderer on stderr, and renders its result
// (cache_render.go).

// request is the library request of the options.
func (o *cacheBuildOptions) request(a *App) build.Options {
	return build.Options{Source: o.Source, Openers: a.Openers, Plan: o.planOptions(a.Getenv), Out: o.Out, DeviceDRAM: o.DeviceDRAM,
		WriteOptions: build.WriteOptions{Workers: o.Workers, Tool: "ckpt", ToolVersion: Version, Force: o.Force, AllowNonFinite: o.AllowNonFinite, NaN: o.NaN,
			NoSync: !o.Fsync, NoSpaceCheck: o.NoSpaceCheck}}
}

// request is the library request of the options.
func (o *cacheVerifyOptions) request(a *App) check.Options {
	return check.Options{Dir: o.Dir, Source: o.Source, Variant: o.Variant, Openers: a.Openers, Rules: o.Rules, Set: o.Set, Ignore: o.Ignore, Select: o.Select, MinMem: o.MinMem,
		MemInfo: o.MemInfo, ReadData: o.ReadData, Strict: o.Strict, FilesOptions: check.FilesOptions{Workers: o.Workers, Rehash: o.Rehash}}
}

// request is the library request of the options.
func (o *cacheLsOptions) request() list.Options {
	return list.Options{Dir: o.Dir, Select: o.Select}
}

// check holds cache pack's rules of the command line.
func (o *cachePackOptions) check() error {
	if o.Out == "" {
		return &ckpt.UsageError{Reason: "cache pack needs -o/--out FILE.tar.zst"}
	}
	return nil
}

// options checks the command line (check) and is the workflow's options.
func (o *cachePackOptions) options() (archive.PackOptions, error) {
	if err := o.check(); err != nil {
		return archive.PackOptions{}, err
	}
	return archive.PackOptions{Dir: o.Dir, Out: o.Out, WriteOptions: archive.WriteOptions{Workers: o.Workers, Select: o.Select}}, nil
}

// check holds cache unpack's rules of the command line.
func (o *cacheUnpackOptions) check() error {
	if o.Dir == "" {
		return &ckpt.UsageError{Reason: "cache unpack needs -o/--out DIR"}
	}
	return nil
}

// options checks the command line (check) and is the workflow's options.
func (o *cacheUnpackOptions) options() (archive.UnpackOptions, error) {
	if err := o.check(); err != nil {
		return archive.UnpackOptions{}, err
	}
	return archive.UnpackOptions{File: o.File, Dir: o.Dir}, nil
}

func (a *App) runCacheBuild(ctx context.Context, o *cacheBuildOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheBuildFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	req := o.request(a)
	if a.Getenv("GOMEMLIMIT") == "" {
		// Keep the heap (bands read ahead, tile staging, the staged
		// images of durable builds) inside the 512 MiB budget.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(448 << 20))
	}
	prog, stop, err := a.startProgress(o.Progress, "cache build")
	if err != nil {
		return err
	}
	req.Progress = prog
	rep, err := build.Run(ctx, req)
	stop()
	if rep != nil {
		a.warn(rep.Warnings...)
	}
	if err != nil {
		return err
	}
	if pe := rep.Problems; pe != nil {
		printProblems(a.Out, pe.Problems, output.EscapeTerm)
		fmt.Fprintf(a.Out, "the %s plan of %s on mesh %s has %d problem(s) (see ckpt map)\n", rep.Plan.Profile.Name, o.Source, rep.Plan.Mesh, len(pe.Problems))
		return silentExit(exitFailed)
	}
	// Warnings and notes are not the result: stderr, prefixed (-q drops
	// them); the JSON document keeps them in warnings.
	a.warn(rep.PlanWarnings...)
	a.note(rep.Notes...)
	return printBuild(a.Out, format, rep)
}

func (a *App) runCacheVerify(ctx context.Context, o *cacheVerifyOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheVerifyFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	req := o.request(a)
	prog, stop, err := a.startProgress(o.Progress, "cache verify")
	if err != nil {
		return err
	}
	req.Progress = prog
	res, err := check.Run(ctx, req)
	stop()
	if err != nil {
		return err
	}
	for _, f := range res.Folders {
		if f.SourceFromManifest {
			a.note(fmt.Sprintf("%s: checking against the source its manifest names, %s (--source SRC names another)", f.Dir, ckpt.EscapeName(f.Source)))
		}
	}
	if one := res.Single(); one != nil {
		err = printCheck(a.Out, format, one)
	} else {
		err = printCheckAll(a.Out, format, res)
	}
	if err != nil {
		return err
	}
	if !res.OK {
		return silentExit(exitFailed)
	}
	return nil
}

func (a *App) runCacheLs(ctx context.Context, o *cacheLsOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheLsFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	res, err := list.Run(ctx, o.request())
	if err != nil {
		return err
	}
	if err := printList(a.Out, format, res); err != nil {
		return err
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

func (a *App) runCachePack(ctx context.Context, o *cachePackOptions, req archive.PackOptions) error {
	prog, stop, err := a.startProgress(o.Progress, "cache pack")
	if err != nil {
		return err
	}
	req.Progress = prog
	res, err := archive.Pack(ctx, req)
	stop()
	if err != nil {
		return err
	}
	a.warn(res.Warnings...)
	esc := output.EscapeTerm // the folders' and the archive's paths, copied
	if res.Companion != nil {
		// A vision model: both folders, one archive.
		fmt.Fprintf(a.Out, "packed %d files (%s) of %s and %d files (%s) of its vision folder %s into %s (%s): one model, one archive\n",
			len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Folder.Path()), len(res.Companion.Files), output.Bytes(res.CompanionBytes), esc(res.CompanionFolder.Path()),
			esc(res.Out), output.Bytes(res.ArchiveBytes))
		return nil
	}
	fmt.Fprintf(a.Out, "packed %d files (%s) into %s (%s)\n", len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Out), output.Bytes(res.ArchiveBytes))
	return nil
}

func (a *App) runCacheUnpack(ctx context.Context, o *cacheUnpackOptions, req archive.UnpackOptions) error {
	prog, stop, err := a.startProgress(o.Progress, "cache unpack")
	if err != nil {
		return err
	}
	req.Progress = prog
	res, err := archive.Unpack(ctx, req)
	stop()
	if err != nil {
		return err
	}
	a.warn(res.Warnings...)
	esc := output.EscapeTerm // the folders' paths: the user's and the archive's names
	if res.Companion != nil {
		fmt.Fprintf(a.Out, "unpacked %d files (%s) into %s and %d files (%s) into its vision folder %s: all match the archive's manifests; their data was not compared with any source (cache verify --source SRC --read-data does)\n",
			len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Dir), len(res.Companion.Manifest.Files), output.Bytes(res.CompanionBytes), esc(res.CompanionDir))
	} else {
		fmt.Fprintf(a.Out, "unpacked %d files (%s) into %s: all match the archive's manifest; their data was not compared with any source (cache verify --source SRC --read-data does)\n",
			len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Dir))
	}
	if res.Replaced {
		fmt.Fprintf(a.Out, "replaced the folder's earlier contents (%d files that the archive does not hold are gone)\n", len(res.Dropped))
	}
	if c := res.Companion; c != nil && c.Replaced {
		fmt.Fprintf(a.Out, "replaced the vision folder's earlier contents (%d files that the archive does not hold are gone)\n", len(c.Dropped))
	}
	if res.Missing != "" {
		a.note(fmt.Sprintf("the archive holds %s alone: the model's other folder %s, which its manifest names, is not in it (left as it is)", res.Dir, res.Missing))
	}
	return nil
}

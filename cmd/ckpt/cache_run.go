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

// check holds cache build's rules of the command line, in their order;
// the first broken one is the error. The plan flags' own errors (--mesh,
// --set, --ignore) come later, where the plan is made (runCacheBuild).
func (o *cacheBuildOptions) check(v *cacheBuildValues) error {
	if o.Out == "" {
		return &ckpt.UsageError{Reason: "cache build needs -o/--out DIR (or $TT_CACHE_PATH)"}
	}
	if _, err := build.NaN(o.NaN).Bits(); err != nil {
		return &ckpt.UsageError{Option: "--nan", Reason: err.Error()}
	}
	_, err := deviceDRAM(&v.deviceDRAM)
	return err
}

// options checks the command line (check) and is the workflow's options.
func (o *cacheBuildOptions) options(a *App, v *cacheBuildValues) (build.Options, error) {
	if err := o.check(v); err != nil {
		return build.Options{}, err
	}
	dram, _ := deviceDRAM(&v.deviceDRAM) // checked
	return build.Options{Source: o.Source, Openers: a.Openers, Plan: o.planOptions(a.Getenv, &v.plan), Out: o.Out, DeviceDRAM: dram,
		WriteOptions: build.WriteOptions{Workers: o.Workers, Tool: "ckpt", ToolVersion: Version, Force: o.Force,
			AllowNonFinite: o.AllowNonFinite, NaN: build.NaN(o.NaN), NoSync: !o.Fsync, NoSpaceCheck: o.NoSpaceCheck, Words: flagWords()}}, nil
}

// check holds cache verify's rules of the command line. The errors of
// --set and --ignore come later, where the plan is made (planStopped).
func (o *cacheVerifyOptions) check(v *cacheVerifyValues) error {
	if o.MinMem != "" {
		if _, err := v.minMem.Size(); err != nil {
			return &ckpt.UsageError{Option: "--min-mem", Reason: err.Error()}
		}
	}
	return nil
}

// options checks the command line (check) and is the workflow's options.
func (o *cacheVerifyOptions) options(a *App, v *cacheVerifyValues) (check.Options, error) {
	if err := o.check(v); err != nil {
		return check.Options{}, err
	}
	minMem, _ := v.minMem.Size() // checked
	// Their errors are reported where the plan is made (planStopped).
	ignore, ignoreErr := ignores(&v.ignore)
	set, setErr := v.set.settings()
	return check.Options{Dir: o.Dir, Source: o.Source, Variant: o.Variant, Openers: a.Openers, Rules: o.Rules, Set: set, Ignore: ignore,
		Select: o.Select, MinMem: minMem, MemInfo: o.MemInfo, ReadData: o.ReadData, Strict: o.Strict, StopAtPlan: ignoreErr != nil || setErr != nil,
		FilesOptions: check.FilesOptions{Workers: o.Workers, Rehash: o.Rehash}, Words: flagWords()}, nil
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
	return archive.UnpackOptions{File: o.File, Dir: o.Dir, Words: flagWords()}, nil
}

func (a *App) runCacheBuild(ctx context.Context, o *cacheBuildOptions, v *cacheBuildValues, req build.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheBuildFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	if a.Getenv("GOMEMLIMIT") == "" {
		// Keep the heap (bands read ahead, tile staging, the staged
		// images of durable builds) inside the 512 MiB budget.
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(448 << 20))
	}
	prog, stop, err := a.startProgress(o.Progress, "cache build")
	if err != nil {
		return err
	}
	if err := v.plan.err(req.Plan); err != nil {
		stop()
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

func (a *App) runCacheVerify(ctx context.Context, o *cacheVerifyOptions, v *cacheVerifyValues, req check.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, cacheVerifyFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	prog, stop, err := a.startProgress(o.Progress, "cache verify")
	if err != nil {
		return err
	}
	req.Progress = prog
	res, err := check.Run(ctx, req)
	stop()
	if ps := (*check.PlanStopError)(nil); errors.As(err, &ps) {
		return reword(err, ps, planStopped(ps, v).Error())
	}
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

// planStopped is the error where check stopped before the plan (a
// *check.PlanStopError: --set or --ignore did not parse), in the order
// mapping.Resolve gives the errors of the plan: --ignore's, the mesh the
// manifest records, --set's.
func planStopped(ps *check.PlanStopError, v *cacheVerifyValues) error {
	if _, err := ignores(&v.ignore); err != nil {
		return err
	}
	if ps.Mesh != nil {
		return ps.Mesh
	}
	if _, err := v.set.settings(); err != nil {
		return err
	}
	return ps
}

// rewordedError is a library error in the CLI's words: its message is the
// library's with the words of one error of its chain replaced (the folder
// a wrapper names stays); errors.Is and errors.As, hence the exit code,
// still see the library's chain.
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

// reword is err with the message of inner, an error of its chain, worded
// as words.
func reword(err, inner error, words string) error {
	return &rewordedError{msg: strings.Replace(err.Error(), inner.Error(), words, 1), err: err}
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
			len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Folder.Path()),
			len(res.Companion.Files), output.Bytes(res.CompanionBytes), esc(res.CompanionFolder.Path()),
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
		fmt.Fprintf(a.Out, "unpacked %d files (%s) into %s and %d files (%s) into its vision folder %s: all match the archive's manifests; "+
			"their data was not compared with any source (cache verify --source SRC --read-data does)\n",
			len(res.Manifest.Files), output.Bytes(res.Bytes), esc(res.Dir),
			len(res.Companion.Manifest.Files), output.Bytes(res.CompanionBytes), esc(res.CompanionDir))
	} else {
		fmt.Fprintf(a.Out, "unpacked %d files (%s) into %s: all match the archive's manifest; "+
			"their data was not compared with any source (cache verify --source SRC --read-data does)\n",
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

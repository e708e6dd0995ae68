package build

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// Options is what `ckpt cache build` asks for: the cache of the plan of
// Source (Plan: profile or rules file, mesh, device, tag, --set,
// MESH_DEVICE; made by mapping.Resolve) written under the cache root Out.
type Options struct {
	Source  string
	Openers []ckpt.SourceOpener
	Plan    mapping.PlanOptions
	// Out is the cache root (TT_CACHE_PATH).
	Out string
	// DeviceDRAM is the DRAM of one device in bytes (0 for the board's).
	DeviceDRAM int64
	// WriteOptions tune the build (Write); WriteOptions.Progress counts its work.
	WriteOptions
}

// Result is the outcome of Run: the plan and, when it has no
// problems, the build's JSON document (Document).
type Result struct {
	Plan *mapping.Plan
	// Problems is set when the plan has problems: nothing was built, Document
	// is nil, and the command fails (exit 1).
	Problems *mapping.PlanError
	// Warnings are the messages of the source's warning issues.
	Warnings []string
	// PlanWarnings are the plan's warnings (mapping.Plan.Warnings: the
	// declared-dtype rule, ...), then its per-target warnings grouped by
	// rule (mapping.Plan.GroupedWarnings); Notes the build's (a stale lock
	// taken over, tensors kept with NaN/Inf, ...; the vision part's with
	// "vision part: " before them); both are in Document.Warnings too.
	PlanWarnings, Notes []string
	// Document is the cache build JSON document, with the DRAM per device.
	Document *Document
}

// Run is the workflow of `ckpt cache build`: it refuses an empty Out or a
// negative DeviceDRAM (*ckpt.OptionError, before any work), makes the plan of the source (mapping.Resolve, the one way
// plans are made), builds it (Write) and returns its document with the
// memory each device holds under the plan. A plan with problems is not
// built: the report has the plan and its Problems, and no error. When the
// build fails, the report (its Warnings) comes with the error. The
// checkpoint is closed when Run returns.
func Run(ctx context.Context, req Options) (*Result, error) {
	if req.Out == "" {
		return nil, &ckpt.OptionError{Field: "Out", Reason: "is empty: want the cache root"}
	}
	if req.DeviceDRAM < 0 {
		return nil, &ckpt.OptionError{Field: "DeviceDRAM", Reason: fmt.Sprintf("is %d bytes; want a positive size, or 0 for the board's", req.DeviceDRAM)}
	}
	start := time.Now()
	c, plan, err := mapping.Resolve(ctx, req.Source, req.Plan, req.Openers...)
	var pe *mapping.PlanError
	if errors.As(err, &pe) {
		c.Close()
		return &Result{Plan: plan, Problems: pe}, nil
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rep := &Result{Plan: plan, Warnings: c.Warnings()}
	// Both parts of a vision model are opened (locked, and what to build
	// decided) before either writes a file, so that the output policy and
	// the free space, counted for both folders together, refuse the build
	// before anything is written.
	mb, err := open(ctx, c, plan, req.Out, req.WriteOptions)
	if err != nil {
		return rep, err
	}
	defer mb.close()
	parts := []*builder{mb}
	var vb *builder
	if vp := plan.Vision; vp != nil {
		if vb, err = open(ctx, c, vp, req.Out, req.WriteOptions); err != nil {
			return rep, fmt.Errorf("vision part (%s): %w", vp.CacheDir, err)
		}
		defer vb.close()
		parts = append(parts, vb)
	}
	if err := checkSpace(mb.opt, parts...); err != nil {
		return rep, err
	}
	res, err := mb.run(ctx)
	if err != nil {
		return rep, err
	}
	sum := res.document(req.Out, plan, time.Since(start).Seconds())
	// Then the vision part, into its own folder.
	var vnotes []string
	if vp := plan.Vision; vp != nil {
		vres, err := vb.run(ctx)
		if err != nil {
			return rep, fmt.Errorf("vision part (%s): %w", vp.CacheDir, err)
		}
		vs := vres.document(req.Out, vp, time.Since(start).Seconds())
		sum.Vision = &vs
		sum.Warnings = append(sum.Warnings, vs.Warnings...)
		for _, n := range vres.notes() {
			vnotes = append(vnotes, "vision part: "+n)
		}
	}
	mem, err := plan.Memory(req.DeviceDRAM)
	if err != nil {
		return rep, err
	}
	sum.PerDevice, sum.Memory = mem.PerDevice, &mem
	rep.Document = &sum
	rep.PlanWarnings, rep.Notes = append(append([]string(nil), plan.Warnings...), plan.GroupedWarnings()...), append(res.notes(), vnotes...)
	if vp := plan.Vision; vp != nil {
		rep.PlanWarnings = append(append(rep.PlanWarnings, vp.Warnings...), vp.GroupedWarnings()...)
	}
	return rep, nil
}

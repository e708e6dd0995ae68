package extract

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what the extract workflow writes: the tensors of Source that
// Select selects (nil: all), to Out (FILE.safetensors or a directory), in
// DType (Keep, BF16, F16 or F32, any case; "" is Keep), split at
// MaxShardSize bytes (0 for one file).
type Options struct {
	Source         string
	Openers        []ckpt.SourceOpener
	Out            string
	Select         *ckpt.Matcher
	DType          string
	WithScales     bool
	AllowNonFinite bool
	MaxShardSize   int64
	// ChunkBytes bounds each streaming buffer (default 8 MiB):
	// a tuning of memory against read sizes (PlanOptions.ChunkBytes).
	ChunkBytes int64
	// Progress, if set, counts output bytes and finished tensors.
	Progress *ckpt.Progress
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for these options in the warnings
	// (PlanOptions.Words).
	Words ckpt.Words
}

// ShardedFileError is an output of Shards shards (at MaxShardSize) asked
// of Out, a file: a sharded output needs a directory. It matches
// ckpt.ErrUsage.
type ShardedFileError struct {
	Shards       int
	MaxShardSize int64
	Out          string
}

// Error is the message of the ShardedFileError.
func (e *ShardedFileError) Error() string {
	return fmt.Sprintf("the output is %d shards at a maximum shard size of %d bytes: Out must be a directory, not %s", e.Shards, e.MaxShardSize, e.Out)
}

// Is makes errors.Is(err, ckpt.ErrUsage) true.
func (e *ShardedFileError) Is(target error) bool { return target == ckpt.ErrUsage }

// Run is the extract workflow: it opens the source (tensors of unknown
// dtypes are left to the plan), refuses an Out that is one of its files,
// plans (NewPlan: a DType, WithScales or MaxShardSize it cannot use is its
// error), refuses a sharded output to a file (*ShardedFileError) and
// writes (Plan.Write). An empty Out, or WithScales with a float DType,
// is a *ckpt.OptionError. The result is
// returned once the source is open, with an error too: its Shown warnings
// (of opening, then of the plan) are to be shown whatever happened next;
// the rest of it only without an error.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if opt.Out == "" {
		return nil, &ckpt.OptionError{Field: "Out", Reason: "is empty"}
	}
	dtype := strings.ToLower(opt.DType)
	if opt.WithScales && dtype != Keep && dtype != "" {
		return nil, &ckpt.OptionError{Field: "WithScales", Reason: "applies only to DType Keep"}
	}
	c, err := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Variant: opt.Variant, Words: opt.Words}, opt.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if err := ckpt.CheckOutput(OutOption, opt.Out, c); err != nil {
		return nil, err
	}
	res := &Result{Source: c.Source, Shown: c.Warnings()}
	sel := opt.Select
	if sel == nil {
		sel = ckpt.MatcherOf(nil, nil)
	}
	plan, err := NewPlan(c, PlanOptions{Select: sel, DType: dtype, WithScales: opt.WithScales,
		MaxShardSize: opt.MaxShardSize, ChunkBytes: opt.ChunkBytes, Progress: opt.Progress, AllowNonFinite: opt.AllowNonFinite, Words: opt.Words})
	if err != nil {
		return res, err
	}
	if plan.Sharded && !isDirTarget(opt.Out) {
		return res, &ShardedFileError{Shards: len(plan.Shards), MaxShardSize: opt.MaxShardSize, Out: opt.Out}
	}
	res.Shown = append(res.Shown, plan.Warnings...)
	w, err := plan.Write(ctx, opt.Out)
	if err != nil {
		return res, err
	}
	out := plan.result(w)
	out.Shown = res.Shown
	return &out, nil
}

// SummaryRecord is the last JSON Lines record of extract: what was
// written, and the counts.
type SummaryRecord struct {
	Source  string `json:"source"`
	Out     string `json:"out"`
	DType   string `json:"dtype"`
	Sharded bool   `json:"sharded"`
	Index   string `json:"index,omitempty"`
	ReportCounts
}

// SummaryRecord is the result's JSON Lines summary record.
func (r *Result) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Source, r.Out, r.DType, r.Sharded, r.Index, r.Summary}
}

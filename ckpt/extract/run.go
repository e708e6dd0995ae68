package extract

import (
	"context"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what the extract workflow writes: the tensors of Source that
// the globs select, to Out (FILE.safetensors or a directory), in DType
// (Keep, BF16, F16 or F32, any case), split at MaxShardSize (a size such
// as "5G"; "" for one file).
type Options struct {
	Source         string
	Openers        []ckpt.SourceOpener
	Out            string
	Match, Exclude []string
	DType          string
	WithScales     bool
	AllowNonFinite bool
	MaxShardSize   string
	// ChunkBytes bounds each streaming buffer (default DefaultChunkBytes):
	// a tuning of memory against read sizes (PlanOptions.ChunkBytes).
	ChunkBytes int64
	// Progress, if set, counts output bytes and finished tensors.
	Progress *ckpt.Progress
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate checks the options before any work; wrong options are a
// *ckpt.UsageError.
func (r Options) Validate() error {
	_, err := r.maxShardSize()
	return err
}

// maxShardSize validates the options and returns MaxShardSize in bytes
// (0 for none).
func (r Options) maxShardSize() (int64, error) {
	if r.Out == "" {
		return 0, ckpt.Usagef("extract needs -o/--out FILE.safetensors or -o/--out DIR")
	}
	if len(r.Match) == 0 {
		return 0, ckpt.Usagef("extract needs --match GLOB (use --match '**' to extract everything)")
	}
	dtype := strings.ToLower(r.DType)
	if _, err := TargetDType(dtype); err != nil {
		return 0, &ckpt.UsageError{Option: "--dtype", Reason: err.Error()}
	}
	if r.WithScales && dtype != Keep {
		return 0, ckpt.Usagef("--with-scales only applies to --dtype keep: float dtypes dequantise FP8 weights and drop their scales")
	}
	var maxShard int64
	if r.MaxShardSize != "" {
		var err error
		if maxShard, err = ckpt.ParseSize(r.MaxShardSize); err != nil {
			return 0, &ckpt.UsageError{Option: "--max-shard-size", Reason: err.Error()}
		}
		if maxShard < 1 {
			return 0, ckpt.Usagef("--max-shard-size: invalid size %q: must be at least 1 byte", r.MaxShardSize)
		}
	}
	if _, err := ckpt.CheckGlobs(r.Match, r.Exclude); err != nil {
		return 0, err
	}
	return maxShard, nil
}

// Run is the extract workflow: it validates the options, opens the source
// (tensors of unknown dtypes are left to the plan), refuses an Out that is
// one of its files, plans (NewPlan), refuses a sharded output to a file and
// writes (Plan.Write). The result is returned once the source is open, with
// an error too: its Shown warnings (of opening, then of the plan) are to be
// shown whatever happened next; the rest of it only without an error.
func Run(ctx context.Context, opt Options) (*Result, error) {
	maxShard, err := opt.maxShardSize()
	if err != nil {
		return nil, err
	}
	dtype := strings.ToLower(opt.DType)
	c, err := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Variant: opt.Variant}, opt.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if err := ckpt.CheckOutput("--out", opt.Out, c); err != nil {
		return nil, err
	}
	res := &Result{Source: c.Source, Shown: c.Warnings()}
	plan, err := NewPlan(c, PlanOptions{Match: opt.Match, Exclude: opt.Exclude, DType: dtype, WithScales: opt.WithScales,
		MaxShardSize: maxShard, ChunkBytes: opt.ChunkBytes, Progress: opt.Progress, AllowNonFinite: opt.AllowNonFinite})
	if err != nil {
		return res, err
	}
	if plan.Sharded && !IsDirTarget(opt.Out) {
		return res, ckpt.Usagef("the output is %d shards at --max-shard-size %s: --out must be a directory, not %s", len(plan.Shards), opt.MaxShardSize, opt.Out)
	}
	res.Shown = append(res.Shown, plan.Warnings...)
	w, err := plan.Write(ctx, opt.Out)
	if err != nil {
		return res, err
	}
	out := plan.Result(w)
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

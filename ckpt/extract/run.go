package extract

import (
	"context"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Request is what the extract workflow writes: the tensors of Source that
// the globs select, to Out (FILE.safetensors or a directory), in DType
// (Keep, BF16, F16 or F32, any case), split at MaxShardSize (a size such
// as "5G"; "" for one file).
type Request struct {
	Source         string
	Openers        []ckpt.SourceOpener
	Out            string
	Match, Exclude []string
	DType          string
	WithScales     bool
	AllowNonFinite bool
	MaxShardSize   string
	// ChunkBytes bounds each streaming buffer (default DefaultChunkBytes).
	ChunkBytes int64
	// Progress, if set, counts output bytes and finished tensors.
	Progress *ckpt.Progress
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate checks the request before any work; a wrong request is a
// *ckpt.UsageError.
func (r Request) Validate() error {
	_, err := r.maxShardSize()
	return err
}

// maxShardSize validates the request and returns MaxShardSize in bytes
// (0 for none).
func (r Request) maxShardSize() (int64, error) {
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

// Run is the extract workflow: it validates the request, opens the source
// (tensors of unknown dtypes are left to the plan), refuses an Out that is
// one of its files, plans (NewPlan), refuses a sharded output to a file and
// writes (Plan.Write). The report is returned once the source is open, with
// an error too: its Shown warnings (of opening, then of the plan) are to be
// shown whatever happened next; the rest of it only without an error.
func Run(ctx context.Context, req Request) (*Report, error) {
	maxShard, err := req.maxShardSize()
	if err != nil {
		return nil, err
	}
	dtype := strings.ToLower(req.DType)
	c, err := ckpt.OpenAllowingUnknown(ctx, req.Source, ckpt.Options{Variant: req.Variant}, req.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if err := ckpt.CheckOutput("--out", req.Out, c); err != nil {
		return nil, err
	}
	rep := &Report{Source: c.Source, Shown: c.Warnings()}
	plan, err := NewPlan(c, Options{Match: req.Match, Exclude: req.Exclude, DType: dtype, WithScales: req.WithScales,
		MaxShardSize: maxShard, ChunkBytes: req.ChunkBytes, Progress: req.Progress, AllowNonFinite: req.AllowNonFinite})
	if err != nil {
		return rep, err
	}
	if plan.Sharded && !IsDirTarget(req.Out) {
		return rep, ckpt.Usagef("the output is %d shards at --max-shard-size %s: --out must be a directory, not %s", len(plan.Shards), req.MaxShardSize, req.Out)
	}
	rep.Shown = append(rep.Shown, plan.Warnings...)
	res, err := plan.Write(ctx, req.Out)
	if err != nil {
		return rep, err
	}
	out := plan.Report(res)
	out.Shown = rep.Shown
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

// SummaryRecord is the report's JSON Lines summary record.
func (r *Report) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Source, r.Out, r.DType, r.Sharded, r.Index, r.Summary}
}

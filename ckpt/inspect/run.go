package inspect

import (
	"context"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what inspect lists: the tensors of Source that the globs
// select (all without globs), reading Workers headers at once.
type Options struct {
	Source         string
	Openers        []ckpt.SourceOpener
	Match, Exclude []string
	Workers        int
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate checks the options before any work: globs, workers.
func (o Options) Validate() error {
	if _, err := ckpt.CheckGlobs(o.Match, o.Exclude); err != nil {
		return err
	}
	if o.Workers < 1 {
		return ckpt.Usagef("--workers must be at least 1, got %d", o.Workers)
	}
	return nil
}

// Run is the inspect workflow: it validates the options (a
// *ckpt.UsageError), opens the source, checks that every glob selects
// tensors and lists them (Of). When some tensors have unknown dtypes, the
// result of what could be read is returned together with the
// *ckpt.UnknownDTypeError.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	m, _ := ckpt.CheckGlobs(opt.Match, opt.Exclude)
	c, openErr := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Workers: opt.Workers, Variant: opt.Variant}, opt.Openers...)
	if c == nil {
		return nil, openErr
	}
	defer c.Close()
	if err := ckpt.CheckSelection(opt.Match, opt.Exclude, c.Source, c.Names()); err != nil {
		return nil, err
	}
	res := Of(c, m)
	return &res, openErr
}

// SummaryRecord is the last JSON Lines record of inspect: the source and
// its summary.
type SummaryRecord struct {
	Source  string `json:"source"`
	Sharded bool   `json:"sharded"`
	ckpt.Summary
	Quantization *Quant `json:"quantization,omitempty"`
}

// SummaryRecord is the result's JSON Lines summary record.
func (r *Result) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Source, r.Sharded, r.Summary, r.Quantization}
}

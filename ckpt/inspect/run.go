package inspect

import (
	"context"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what inspect lists: the tensors of Source that Select
// selects (nil: all), reading Workers headers at once (0: ckpt.Options'
// default).
type Options struct {
	Source  string
	Openers []ckpt.SourceOpener
	Select  *ckpt.Matcher
	Workers int
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for the options its messages name
	// (ckpt.Options.Words: "Variant").
	Words ckpt.Words
}

// Run is the inspect workflow: it opens the source, checks that every
// glob of Select selects tensors and lists them (Of). When some tensors
// have unknown dtypes, the result of what could be read is returned
// together with the *ckpt.UnknownDTypeError.
func Run(ctx context.Context, opt Options) (*Result, error) {
	c, openErr := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Workers: opt.Workers, Variant: opt.Variant, Words: opt.Words}, opt.Openers...)
	if c == nil {
		return nil, openErr
	}
	defer c.Close()
	if err := opt.Select.CheckSelection(c.Source, c.Names()); err != nil {
		return nil, err
	}
	res := Of(c, opt.Select)
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

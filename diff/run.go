package diff

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options are what the diff workflow compares: the checkpoints at Base and
// FT, compared by Compare with the CompareOptions (Match selects the
// tensors; each of its globs must select some of either side).
type Options struct {
	Base, FT string
	Openers  []ckpt.SourceOpener
	// Variant selects a variant of each directory side (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for the options its messages name
	// (ckpt.Options.Words: "Variant").
	Words ckpt.Words
	// Out is the report's path (-o), "" for stdout: Run refuses one that
	// is a file of either side (ckpt.CheckOutput).
	Out string
	// CompareOptions are Compare's; their Workers also open the sides, and
	// their Progress, if set, counts the tensor bytes of both sides.
	CompareOptions
}

// Run is the diff workflow: it opens both sides (tensors of unknown
// dtypes are compared as bytes), refuses an Out that is a file of either
// side, checks that every glob of Match selects tensors of either side
// (ckpt.Matcher.CheckSelection) and compares them (Compare). A negative
// Sample or Workers is a *ckpt.OptionError, before any work.
//
// Once a side is open, the result is returned even with an error: its
// Warnings (of opening, in order) are to be shown whatever happened next.
// When a side has tensors of unknown dtypes, the complete result comes
// with that side's *ckpt.UnknownDTypeError (the input is not entirely
// readable: exit 2 after the report).
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Sample < 0 {
		return nil, &ckpt.OptionError{Field: "Sample", Reason: "is negative"}
	}
	if opts.Workers < 0 {
		return nil, &ckpt.OptionError{Field: "Workers", Reason: "is negative"}
	}
	var cks [2]*ckpt.Checkpoint
	var warnings []string
	var unknownErr error
	for i, src := range []string{opts.Base, opts.FT} {
		c, err := ckpt.OpenAllowingUnknown(ctx, src, ckpt.Options{Workers: opts.Workers, Variant: opts.Variant, Words: opts.Words}, opts.Openers...)
		if c == nil {
			return failedRun(warnings), err
		}
		defer c.Close()
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%v (compared as bytes)", err))
			unknownErr = err
		}
		warnings = append(warnings, c.Warnings()...)
		cks[i] = c
	}
	if err := ckpt.CheckOutput("-o", opts.Out, cks[0], cks[1]); err != nil {
		return failedRun(warnings), err
	}
	if err := opts.Match.CheckSelection(cks[0].Source+" or "+cks[1].Source, cks[0].Names(), cks[1].Names()); err != nil {
		return failedRun(warnings), err
	}
	res, err := Compare(ctx, cks[0], cks[1], opts.CompareOptions)
	if err != nil {
		return failedRun(warnings), err
	}
	res.Warnings = warnings
	return res, unknownErr
}

// failedRun is the result of a Run that failed: its warnings only (nil
// before any).
func failedRun(warnings []string) *Result {
	if warnings == nil {
		return nil
	}
	return &Result{Warnings: warnings}
}

// SummaryRecord is the last JSON Lines record of diff: the counts per
// relation, the verdict and (sampled) what was read.
type SummaryRecord struct {
	Base    string      `json:"base"`
	FT      string      `json:"ft"`
	Mode    Mode        `json:"mode"`
	Differs bool        `json:"differs"`
	Keys    Keys        `json:"keys"`
	Sample  *SampleInfo `json:"sample,omitempty"`
	Summary
}

// SummaryRecord is the result's JSON Lines summary record.
func (r *Result) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Base, r.FT, r.Mode, r.Differs(), r.Keys, r.Sample, r.Summary}
}

// ArrayChange is the set difference of a config change between two arrays
// (ok false for any other change): the elements of the fine-tune's array
// the base's lacks (added) and those of the base's the fine-tune's lacks
// (removed), elements being equal when their JSON is.
func ArrayChange(c ckpt.ConfigChange) (added, removed []any, ok bool) {
	if c.Change == string(OnlyInBase) || c.Change == string(OnlyInFT) {
		return nil, nil, false
	}
	ba, okB := c.Base.([]any)
	fa, okF := c.FT.([]any)
	if !okB || !okF {
		return nil, nil, false
	}
	return missingFrom(fa, ba), missingFrom(ba, fa), true
}

// missingFrom lists the elements of a that b lacks.
func missingFrom(a, b []any) []any {
	in := map[string]bool{}
	for _, x := range b {
		in[jsonKey(x)] = true
	}
	var out []any
	for _, x := range a {
		if !in[jsonKey(x)] {
			out = append(out, x)
		}
	}
	return out
}

// jsonKey is x as JSON, its identity in a set difference.
func jsonKey(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

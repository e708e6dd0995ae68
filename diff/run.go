package diff

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options are what the diff workflow compares: the checkpoints at Base and
// FT, with the options of Compare given as the command line gives them
// (Mode a string, sample sizes such as "64KiB"; "" for none).
type Options struct {
	Base, FT       string
	Openers        []ckpt.SourceOpener
	Mode           string
	Match, Exclude []string
	Sample         int
	Seed           uint64
	Workers        int
	SampleBytes    string
	SampleBudget   string
	SampleSeed     uint64
	ByLayer        bool
	// Progress, if set, counts the tensor bytes of both sides.
	Progress *ckpt.Progress
	// Variant selects a variant of each directory side (ckpt.Options.Variant).
	Variant string
	// Out is the report's path (-o), "" for stdout: Run refuses one that
	// is a file of either side (ckpt.CheckOutput).
	Out string
}

// Validate checks the options before any work; wrong options are a
// *ckpt.UsageError.
func (r Options) Validate() error {
	_, err := r.compareOptions()
	return err
}

// compareOptions validates the options and returns Compare's options
// (Match still unset).
func (r Options) compareOptions() (CompareOptions, error) {
	mode, ok := ParseMode(r.Mode)
	if !ok {
		return CompareOptions{}, ckpt.Usagef("unknown --mode %q (want header, bytes or values)", r.Mode)
	}
	if r.Sample < 0 || r.Workers < 0 {
		return CompareOptions{}, ckpt.Usagef("--sample and --workers must not be negative")
	}
	opt := CompareOptions{Mode: mode, Sample: r.Sample, Seed: r.Seed, Workers: r.Workers, Progress: r.Progress, SampleSeed: r.SampleSeed, ByLayer: r.ByLayer}
	var err error
	if r.SampleBytes != "" {
		if opt.SampleBytes, err = ckpt.ParseSize(r.SampleBytes); err != nil {
			return CompareOptions{}, &ckpt.UsageError{Option: "--sample-bytes", Reason: err.Error()}
		}
		if opt.SampleBytes <= 0 {
			return CompareOptions{}, ckpt.Usagef("--sample-bytes must be positive, not %s", r.SampleBytes)
		}
		if mode != ModeValues {
			return CompareOptions{}, ckpt.Usagef("--sample-bytes needs --mode values, not %s", mode)
		}
	}
	if r.SampleBudget != "" {
		if r.SampleBytes != "" {
			return CompareOptions{}, ckpt.Usagef("--sample-bytes and --sample-budget exclude each other")
		}
		if opt.SampleBudget, err = ckpt.ParseSize(r.SampleBudget); err != nil {
			return CompareOptions{}, &ckpt.UsageError{Option: "--sample-budget", Reason: err.Error()}
		}
		if opt.SampleBudget <= 0 {
			return CompareOptions{}, ckpt.Usagef("--sample-budget must be positive, not %s", r.SampleBudget)
		}
		if mode != ModeValues {
			return CompareOptions{}, ckpt.Usagef("--sample-budget needs --mode values, not %s", mode)
		}
	}
	// A seed without what it seeds would be silently ignored: the user
	// meant a sampled comparison.
	if r.SampleSeed != 0 && r.SampleBytes == "" && r.SampleBudget == "" {
		return CompareOptions{}, ckpt.Usagef("--sample-seed seeds --sample-bytes or --sample-budget; give one of them")
	}
	if r.Seed != 0 && r.Sample == 0 {
		return CompareOptions{}, ckpt.Usagef("--seed seeds --sample N; give it")
	}
	if opt.Match, err = ckpt.CheckGlobs(r.Match, r.Exclude); err != nil {
		return CompareOptions{}, err
	}
	return opt, nil
}

// Run is the diff workflow: it validates the options, opens both sides
// (tensors of unknown dtypes are compared as bytes), refuses an Out that
// is a file of either side, checks that every
// glob selects tensors of either side and compares them (Compare).
//
// Once a side is open, the result is returned even with an error: its
// Warnings (of opening, in order) are to be shown whatever happened next.
// When a side has tensors of unknown dtypes, the complete result comes
// with that side's *ckpt.UnknownDTypeError (the input is not entirely
// readable: exit 2 after the report).
func Run(ctx context.Context, opts Options) (*Result, error) {
	opt, err := opts.compareOptions()
	if err != nil {
		return nil, err
	}
	var cks [2]*ckpt.Checkpoint
	var warnings []string
	var unknownErr error
	for i, src := range []string{opts.Base, opts.FT} {
		c, err := ckpt.OpenAllowingUnknown(ctx, src, ckpt.Options{Workers: opts.Workers, Variant: opts.Variant}, opts.Openers...)
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
	if err := ckpt.CheckSelection(opts.Match, opts.Exclude, cks[0].Source+" or "+cks[1].Source, cks[0].Names(), cks[1].Names()); err != nil {
		return failedRun(warnings), err
	}
	res, err := Compare(ctx, cks[0], cks[1], opt)
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
func ArrayChange(c ConfigChange) (added, removed []any, ok bool) {
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

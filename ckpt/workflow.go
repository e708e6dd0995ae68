package ckpt

import (
	"context"
	"errors"
	"fmt"
)

// Usagef returns a *UsageError whose message is the formatted reason (no
// option prefix): the messages of the command line's usage errors.
func Usagef(format string, args ...any) *UsageError {
	return &UsageError{Reason: fmt.Sprintf(format, args...)}
}

// CheckGlobs returns NewMatcher's error for invalid globs as a
// *UsageError (its message unchanged).
func CheckGlobs(match, exclude []string) (*Matcher, error) {
	m, err := NewMatcher(match, exclude)
	if err != nil {
		return nil, &UsageError{Reason: err.Error()}
	}
	return m, nil
}

// OpenAllowingUnknown opens src; a checkpoint with tensors of unknown
// dtypes is returned with its *UnknownDTypeError (what could be read is
// there), any other open error alone (the checkpoint closed).
func OpenAllowingUnknown(ctx context.Context, src string, opt Options, openers ...SourceOpener) (*Checkpoint, error) {
	c, err := Open(ctx, src, opt, openers...)
	var unknown *UnknownDTypeError
	if err != nil && !(c != nil && errors.As(err, &unknown)) {
		if c != nil {
			c.Close()
		}
		return nil, err
	}
	return c, err
}

// Warnings are the messages of the issues of opening that only warn (an
// index naming a single file, byte-identical duplicates, tensors the index
// does not list), for the reports that have no place for them.
func (c *Checkpoint) Warnings() []string {
	var out []string
	for _, is := range c.Issues {
		if is.Status == Warn {
			out = append(out, is.Message)
		}
	}
	return out
}

// InspectRequest is what inspect lists: the tensors of Source that the
// globs select (all without globs), reading Workers headers at once.
type InspectRequest struct {
	Source         string
	Openers        []SourceOpener
	Match, Exclude []string
	Workers        int
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate checks the request before any work: globs, workers.
func (r InspectRequest) Validate() error {
	if _, err := CheckGlobs(r.Match, r.Exclude); err != nil {
		return err
	}
	if r.Workers < 1 {
		return Usagef("--workers must be at least 1, got %d", r.Workers)
	}
	return nil
}

// InspectSource is the inspect workflow: it validates the request (a
// *UsageError), opens the source, checks that every glob selects tensors
// and lists them (Inspect). When some tensors have unknown dtypes, the
// result of what could be read is returned together with the
// *UnknownDTypeError.
func InspectSource(ctx context.Context, req InspectRequest) (*InspectResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	m, _ := CheckGlobs(req.Match, req.Exclude)
	c, openErr := OpenAllowingUnknown(ctx, req.Source, Options{Workers: req.Workers, Variant: req.Variant}, req.Openers...)
	if c == nil {
		return nil, openErr
	}
	defer c.Close()
	if err := CheckSelection(req.Match, req.Exclude, c.Source, c.Names()); err != nil {
		return nil, err
	}
	res := Inspect(c, m)
	return &res, openErr
}

// InspectSummaryRecord is the last JSON Lines record of inspect: the
// source and its summary.
type InspectSummaryRecord struct {
	Source  string `json:"source"`
	Sharded bool   `json:"sharded"`
	Summary
	Quantization *InspectQuant `json:"quantization,omitempty"`
}

// SummaryRecord is the result's JSON Lines summary record.
func (r *InspectResult) SummaryRecord() InspectSummaryRecord {
	return InspectSummaryRecord{r.Source, r.Sharded, r.Summary, r.Quantization}
}

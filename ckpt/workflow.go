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

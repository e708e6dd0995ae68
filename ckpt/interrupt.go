package ckpt

import "fmt"

// InterruptedError says a long operation stopped because its context was
// cancelled (Ctrl-C, SIGTERM), and how far it got. It wraps the context's
// error.
type InterruptedError struct {
	Done, Total int    // items finished and planned
	Unit        string // what the items are ("files", "tensors")
	// Resumable: running the same command again continues from Done.
	Resumable bool
	Err       error
}

// Error is the message of the InterruptedError.
func (e *InterruptedError) Error() string {
	msg := "interrupted"
	if e.Total > 0 {
		msg = fmt.Sprintf("interrupted: %d of %d %s done", e.Done, e.Total, e.Unit)
	}
	if e.Resumable {
		msg += "; rerun to resume"
	}
	return msg
}

// Unwrap returns the error that stopped the work, for errors.Is and errors.As.
func (e *InterruptedError) Unwrap() error { return e.Err }

package main

import (
	"errors"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
)

// isCacheBusy reports a cache folder locked by another process (exit 2).
func isCacheBusy(err error) bool {
	var le *cache.LockedError
	return errors.As(err, &le)
}

// buildError maps a cache build error to its exit code: NaN/Inf in a
// source tensor is a failed check (1); a busy folder, unreadable input and
// everything else 2.
func buildError(err error) error {
	var nf *ckpt.NonFiniteError
	if errors.As(err, &nf) {
		return &exitError{code: 1, err: err}
	}
	return err
}

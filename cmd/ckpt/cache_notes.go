package main

import (
	"errors"
	"fmt"

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
	return inputError(err)
}

// nonFiniteNote summarises tensors built or extracted with NaN/Inf.
func nonFiniteNote(nf []ckpt.NonFinite) string {
	if len(nf) == 0 {
		return ""
	}
	var first string
	for i, c := range nf {
		if i == 3 {
			first += fmt.Sprintf(", and %d more", len(nf)-3)
			break
		}
		if i > 0 {
			first += ", "
		}
		first += fmt.Sprintf("%s (%d NaN, %d Inf)", ckpt.EscapeName(c.Tensor), c.NaN, c.Inf)
	}
	return fmt.Sprintf("%d source tensor(s) hold NaN or Inf, kept as they are (--allow-nonfinite): %s", len(nf), first)
}

// buildNotes are the notes of a cache build: a stale lock taken over, an
// earlier build of another source replaced, unknown files left alone.
func buildNotes(res *cache.BuildResult) []string {
	var out []string
	if l := res.StaleLock; l != nil {
		out = append(out, fmt.Sprintf("took over the lock of a build that no longer runs (%s)", l))
	}
	if res.Replaced != "" {
		out = append(out, fmt.Sprintf("the cache folder held a build of %s; it now holds this source's", ckpt.EscapeName(res.Replaced)))
	}
	if s := nonFiniteNote(res.NonFinite); s != "" {
		out = append(out, s+"; recorded in the manifest")
	}
	if n := len(res.Unknown); n > 0 {
		out = append(out, fmt.Sprintf("%d file(s) in the cache folder are not from a ckpt build and were left alone (first: %s)", n, ckpt.EscapeName(res.Unknown[0])))
	}
	return out
}

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
	if n := len(res.Unknown); n > 0 {
		out = append(out, fmt.Sprintf("%d file(s) in the cache folder are not from a ckpt build and were left alone (first: %s)", n, ckpt.EscapeName(res.Unknown[0])))
	}
	return out
}

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The small frictions of issue #36 ("the first hour"), each a test that
// failed before its fix.

// TestWorkersAtLeastOne: --workers 0 or -1 is a usage error (exit 2) on
// every command that has the flag; leaving it out picks the default.
func TestWorkersAtLeastOne(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"cache", "build", missing, "-o", t.TempDir()},
		{"cache", "verify", missing, "--source", missing},
		{"cache", "pack", missing, "-o", "x.tar.zst"},
		{"cache", "compare", missing, missing},
		{"cache", "identify", missing},
		{"contract", missing},
		{"verify", missing},
		{"diff", missing, missing},
		{"inspect", missing},
	} {
		for _, n := range []string{"0", "-1"} {
			code, _, stderr := runApp(t, append(args, "--workers", n)...)
			assert.Equal(t, exitUnreadable, code, "%v --workers %s: %s", args, n, stderr)
			assert.Equal(t, "ckpt: --workers must be at least 1, got "+n+"\n", stderr, "%v", args)
		}
	}
}

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

// TestUnknownSubcommandBeforeFlags: a mistyped subcommand followed by its
// flags gets the did-you-mean it gets without them, not "unknown
// shorthand flag".
func TestUnknownSubcommandBeforeFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cache", "biuld", missing, "-o", "x"}, `ckpt: unknown command "biuld" for "ckpt cache"; did you mean build? (see ckpt cache --help)` + "\n"},
		{[]string{"cache", "biuld", missing}, `ckpt: unknown command "biuld" for "ckpt cache"; did you mean build? (see ckpt cache --help)` + "\n"},
		{[]string{"cache", "verfy", missing, "--source", missing}, `ckpt: unknown command "verfy" for "ckpt cache"; did you mean verify? (see ckpt cache --help)` + "\n"},
		{[]string{"inspcet", missing, "--format", "json"}, `ckpt: unknown command "inspcet" for "ckpt"; did you mean inspect? (see ckpt --help)` + "\n"},
		// a flag the group does not know, with no subcommand: the flag error
		{[]string{"cache", "--bogus"}, "ckpt: unknown flag: --bogus (see ckpt cache --help)\n"},
	} {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, "%v", tc.args)
		assert.Equal(t, tc.want, stderr, "%v", tc.args)
	}
}

package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestErrorPrecedence pins which mistake a command line reports when it
// holds several: two wrong flag values and a missing argument, then the
// same two flags with the arguments given. Moving a check (a flag value
// that parses itself, a rule out of a library) must not change which
// message comes first, its words or the exit code; the golden holds them.
func TestErrorPrecedence(t *testing.T) {
	cases := [][]string{
		{"inspect", "--format", "bogus", "--workers", "-1"},
		{"verify", "--arch", "bogus", "--format", "bad"},
		{"verify", "--match", "[", "--allow-finding", "nope"},
		{"contract", "--progress", "bogus", "--workers", "-2"},
		{"diff", "--mode", "bogus", "--sample-bytes", "12Q"},
		{"diff", "--sample-budget", "1Q", "--by", "nothing"},
		{"diff", "--mode", "header", "--sample-bytes", "4KiB"},
		{"extract", "--dtype", "bogus", "--max-shard-size", "1Q"},
		{"map", "--mesh", "9", "--device-dram", "x"},
		{"map", "--set", "nokey", "--format", "bogus"},
		{"cache", "build", "--nan", "bogus", "--device-dram", "3Q"},
		{"cache", "build", "--mesh", "0x0", "--progress", "bogus"},
		{"cache", "verify", "--min-mem", "1Q", "--format", "bogus"},
		{"cache", "verify", "--ignore", "[", "--mesh", "1y2"},
		{"cache", "ls", "--format", "bogus", "--mesh", "1y2"},
		{"cache", "pack", "--workers", "-3", "--mesh", "0x0"},
		{"cache", "unpack", "--progress", "bogus"},
		{"cache", "compare", "--format", "bogus", "--workers", "x"},
		{"cache", "identify", "--nan", "bogus", "--format", "bad"},
	}
	// the arguments each command takes, for the second run of each line
	args := map[string][]string{
		"inspect": {"a"}, "verify": {"a"}, "contract": {"a"}, "diff": {"a", "b"}, "extract": {"a"},
		"map": {"a"}, "cache build": {"a"}, "cache verify": {"a"}, "cache ls": {"a"}, "cache pack": {"a"},
		"cache unpack": {"a"}, "cache compare": {"a", "b"}, "cache identify": {"a"},
	}
	var b strings.Builder
	for _, c := range cases {
		name := c[0]
		if c[0] == "cache" {
			name += " " + c[1]
		}
		with := append(append([]string{}, c...), args[name]...)
		for _, line := range [][]string{c, with} {
			code, stdout, stderr := runApp(t, line...)
			fmt.Fprintf(&b, "$ ckpt %s\nexit %d\n%s%s\n", strings.Join(line, " "), code, stdout, stderr)
		}
	}
	golden(t, "precedence.golden", b.String())
}

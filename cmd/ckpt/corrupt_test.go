package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInspectCorrupt: every corrupt variant exits 2 with a message on
// stderr that names the file, in every output format, without a panic.
func TestInspectCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	variants := append(ckpttest.CorruptFiles(), ckpttest.CorruptDirs()...)
	for _, c := range variants {
		src, file, err := c.Write(dir)
		require.NoError(t, err)
		for _, format := range []string{"text", "json"} {
			t.Run(c.Name+"/"+format, func(t *testing.T) {
				code, stdout, stderr := runApp(t, "inspect", src, "--format", format)
				assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
				assert.NotContains(t, stderr, "internal error")
				assert.NotContains(t, stderr, "goroutine")
				assert.True(t, strings.HasPrefix(stderr, "ckpt: "), "stderr: %q", stderr)
				assert.Contains(t, stderr, file)
				for _, w := range c.Want {
					assert.Contains(t, stderr, w)
				}
				assert.NotContains(t, stderr+stdout, "\x1b", "control characters must be escaped")
				if c.Kind == ckpttest.UnknownDType {
					// What could be read is listed before the exit.
					require.NotEmpty(t, c.Listed)
					for _, l := range c.Listed {
						assert.Contains(t, stdout, l)
					}
				} else {
					assert.Empty(t, stdout)
				}
			})
		}
	}
}

// TestEveryCommandCorrupt: every command that reads a checkpoint ends a
// corrupt variant with a message and exit 2 (verify may instead report a
// failed check, and cache verify a missing cache, exit 1) — never a panic,
// never exit 0.
func TestEveryCommandCorrupt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, err := filepath.Abs(filepath.Join(dir, "good"))
	require.NoError(t, err)
	require.NoError(t, synth.Write(good, synth.Small()))
	variants := append(ckpttest.CorruptFiles(), ckpttest.CorruptDirs()...)
	for _, c := range variants {
		src, _, err := c.Write(dir)
		require.NoError(t, err)
		out := filepath.Join(dir, c.Name+"-out")
		commands := map[string][]string{
			"verify":       {"verify", src, "--format", "json", "--progress", "none"},
			"verify-data":  {"verify", src, "--read-data", "--format", "json", "--progress", "none"},
			"contract":     {"contract", src},
			"diff-base":    {"diff", src, good, "--progress", "none"},
			"diff-ft":      {"diff", good, src, "--mode", "bytes", "--progress", "none"},
			"map":          {"map", src},
			"extract":      {"extract", src, "--match", "**", "--out", out + ".safetensors", "--progress", "none"},
			"cache-build":  {"cache", "build", src, "--out", out, "--progress", "none"},
			"cache-verify": {"cache", "verify", out, "--source", src},
		}
		for name, args := range commands {
			t.Run(c.Name+"/"+name, func(t *testing.T) {
				code, stdout, stderr := runApp(t, args...)
				assert.NotContains(t, stderr, "internal error")
				assert.NotContains(t, stderr, "goroutine")
				if strings.HasPrefix(name, "verify") && code == 1 {
					assert.Contains(t, stdout, `"fail"`, "a failed verify names its failed check")
					return
				}
				if name == "cache-verify" && code == 1 { // no cache was built: fail-closed
					assert.NotEmpty(t, stdout+stderr)
					return
				}
				assert.Equal(t, 2, code, "stdout: %s\nstderr: %s", stdout, stderr)
				assert.True(t, strings.HasPrefix(stderr, "ckpt: "), "stderr: %q", stderr)
			})
		}
	}
}

package main

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
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

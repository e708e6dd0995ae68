package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCachePackUnpackEscapesNames: the lines of cache pack and unpack
// (both folders of a vision model, the archive, the folders written) show
// the control and bidirectional characters of the paths they copy
// escaped, as every other cache command does. (Before: the stdout lines
// printed them raw: a right-to-left override and an OSC sequence reached
// the terminal.)
func TestCachePackUnpackEscapesNames(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), hostileSegment)
	_, root, _ := packedCache(t, dir)
	arch := filepath.Join(dir, "again "+hostileSegment+".tar.zst")
	code, stdout, stderr := runApp(t, "cache", "pack", root, "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.NotRegexp(t, rawControls, stdout, "pack: stdout")
	assert.Contains(t, stdout, `evil\u202egnp`, "pack: the hostile name, escaped")
	code, stdout, stderr = runApp(t, "cache", "unpack", arch, "-o", filepath.Join(dir, "shipped"), "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.NotRegexp(t, rawControls, stdout, "unpack: stdout")
	assert.NotRegexp(t, rawControls, stderr, "unpack: stderr")
	assert.Contains(t, stdout, `evil\u202egnp`, "unpack: the hostile name, escaped")
	assert.Contains(t, stdout, "into its vision folder", "both folders")
}

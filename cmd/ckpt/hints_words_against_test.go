package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// TestAgainstHintWords holds byte for byte the hint that a file given as
// something else is a ckpt contract, on the paths that are not a checkpoint
// source (sources_named_test.go holds that one): cache unpack of a contract,
// and verify --against a contract cut short. The libraries spell the
// option through the caller's words (ckpt.DescribeBytes).
func TestAgainstHintWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	k := filepath.Join(dir, "k.json")
	code, _, stderr := runApp(t, "contract", src, "-o", k)
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(k)
	require.NoError(t, err)
	cut := filepath.Join(dir, "cut.json")
	require.NoError(t, os.WriteFile(cut, b[:200], 0o644))

	code, _, stderr = runApp(t, "cache", "unpack", k, "-o", filepath.Join(dir, "out"))
	assert.Equal(t, 2, code)
	assert.Equal(t, "ckpt: unpacking "+k+": not a cache archive (a zstd-compressed tar, as ckpt cache pack writes it): "+
		"it looks like a ckpt contract: use it with verify --against\n", stderr)
	code, _, stderr = runApp(t, "verify", src, "--against", cut)
	assert.Equal(t, 2, code)
	assert.Equal(t, "ckpt: "+cut+" is not a ckpt contract (it looks like a ckpt contract: use it with verify --against); "+
		"write one with `ckpt contract SRC -o FILE`\n", stderr)
}

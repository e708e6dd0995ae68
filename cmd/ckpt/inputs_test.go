package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// extract and contract refuse an output path that is one of the files of
// the checkpoint they read (a shard, its index, its config.json, directly
// or through a link): exit 2, the input untouched.
func TestOutputOverInputRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	shards, err := filepath.Glob(filepath.Join(src, "*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	link := filepath.Join(dir, "link.safetensors")
	require.NoError(t, os.Symlink(shards[0], link))
	before, err := os.ReadFile(shards[0])
	require.NoError(t, err)
	for _, args := range [][]string{
		{"extract", src, "--match", "mtp.**", "--out", shards[0]},
		{"extract", src, "--match", "mtp.**", "--out", link},
		{"contract", src, "-o", shards[0]},
		{"contract", src, "-o", filepath.Join(src, "config.json")},
		{"contract", src, "-o", filepath.Join(src, "model.safetensors.index.json")},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, "a file of the checkpoint being read: refusing to write over an input", "%v", args)
	}
	after, err := os.ReadFile(shards[0])
	require.NoError(t, err)
	assert.Equal(t, before, after, "the shard is untouched")
	// A new file beside the checkpoint is fine.
	code, _, stderr := runApp(t, "extract", src, "--match", "mtp.**", "--out", filepath.Join(dir, "mtp.safetensors"), "--progress", "none")
	assert.Equal(t, 0, code, stderr)
}

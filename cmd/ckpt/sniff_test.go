package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// TestLFSPointerNamed: a clone without git-lfs (shards are pointers) is
// named as such by every command, exit 2.
func TestLFSPointerNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "clone")
	require.NoError(t, synth.Write(src, synth.Small()))
	shards, err := filepath.Glob(filepath.Join(src, "*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	for _, s := range shards {
		ptr := "version https://git-lfs.github.com/spec/v1\noid sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\nsize 123456\n"
		require.NoError(t, os.WriteFile(s, []byte(ptr), 0o644))
	}
	for _, args := range [][]string{
		{"inspect", shards[0]},
		{"inspect", src},
		{"diff", src, src},
		{"cache", "build", src, "--out", filepath.Join(dir, "cache")},
		{"verify", src},
	} {
		code, stdout, stderr := runApp(t, args...)
		require.Equal(t, 2, code, "%v: %s%s", args, stdout, stderr)
		require.Contains(t, stderr, "this is a Git LFS pointer, not the weights", args)
		require.Contains(t, stderr, "run `git lfs pull`", args)
		require.False(t, strings.Contains(stderr, "header too large"), args)
	}
}

// TestAgainstNotAContract: --against config.json names the file for what
// it is.
func TestAgainstNotAContract(t *testing.T) {
	t.Parallel()
	_, base, ft := small(t)
	code, _, stderr := runApp(t, "verify", ft, "--against", filepath.Join(base, "config.json"))
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "config.json is not a ckpt contract (it looks like a config.json)")
	require.NotContains(t, stderr, "contract_version is 0")
}

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryErrorWords holds, byte for byte, the stderr of library errors
// the CLI words with its flag names (words.go): the variant of a source,
// the cache folder of a root with several.
func TestLibraryErrorWords(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "variants")
	o := bf16Save()
	o.Variant = "fp16"
	require.NoError(t, synth.Write(dir, o))
	plain := filepath.Join(tmp, "plain")
	require.NoError(t, synth.Write(plain, synth.Small()))
	cacheOut := filepath.Join(tmp, "cache")
	buildSmall(t, plain, cacheOut, "1x2")
	buildSmall(t, plain, cacheOut, "1x1")
	shard := filepath.Join(dir, "model.fp16-00001-of-00003.safetensors")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"variant name", []string{"inspect", dir, "--variant", "../x"},
			`ckpt: --variant: "../x" is not a variant name (model.NAME.safetensors, model.safetensors.index.NAME.json)` + "\n"},
		{"variant of a file", []string{"inspect", shard, "--variant", "fp16"},
			"ckpt: --variant: fp16 selects model.fp16.safetensors or model.safetensors.index.fp16.json of a checkpoint directory, but the source names the file " +
				shard + "\n"},
		{"two cache folders", []string{"cache", "pack", cacheOut, "-o", filepath.Join(tmp, "c.tar.zst"), "--progress", "none"},
			"ckpt: " + cacheOut + " holds 2 cache folders (P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2): " +
				"pass one of them, or choose with --mesh, --tag or --device\n"},
		{"two cache folders, ls", []string{"cache", "ls", cacheOut, "--tag", "bfp8"},
			"ckpt: " + cacheOut + " holds 2 cache folders (P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2): " +
				"pass one of them, or choose with --mesh, --tag or --device\n"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, tc.name)
		assert.Empty(t, strings.TrimSpace(stdout), tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

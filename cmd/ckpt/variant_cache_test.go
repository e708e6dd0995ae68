package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCacheOfVariant: a cache built from one variant of a directory
// holding two records the directory and the variant in its manifest, so
// that cache verify without --source (the source its manifest names)
// checks the files against the variant they were built from (it failed,
// exit 2: "ambiguous checkpoint directory ... pass --variant NAME").
func TestCacheOfVariant(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "model")
	o := bf16Save()
	o.DType, o.Variant = numfmt.F16, "fp16"
	require.NoError(t, synth.Write(dir, o))
	o2 := bf16Save()
	o2.Variant = "bf16"
	require.NoError(t, synth.Write(dir, o2))
	out := filepath.Join(t.TempDir(), "cache")
	code, _, errs := runApp(t, "cache", "build", dir, "--variant", "fp16", "--out", out, "--progress", "none")
	require.Equal(t, 0, code, errs)
	folders, err := filepath.Glob(filepath.Join(out, "*", "tensor_cache_*", cache.ManifestName))
	require.NoError(t, err)
	require.NotEmpty(t, folders)
	for _, mp := range folders {
		data, err := os.ReadFile(mp)
		require.NoError(t, err)
		var m cache.Manifest
		require.NoError(t, json.Unmarshal(data, &m))
		assert.Equal(t, dir, m.Source, mp)
		assert.Equal(t, "fp16", m.Variant, mp)
	}
	code, stdout, errs := runApp(t, "cache", "verify", out, "--read-data", "--progress", "none")
	assert.Equal(t, 0, code, stdout+errs)
	// A --variant given overrides the manifest's: the bf16 variant's
	// values are not those the cache was built from.
	code, stdout, errs = runApp(t, "cache", "verify", out, "--read-data", "--progress", "none", "--variant", "bf16")
	assert.Equal(t, 1, code, stdout+errs)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runAppEnv is runApp with an environment of its own.
func runAppEnv(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }}
	code := app.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

// TestMapDeviceBoard (#36 D4): the device folder's board bounds what the
// plan can claim. A mesh of more devices than the board has chips does
// not open there: a device problem, and the fit is not judged. A board of
// another architecture than the profile's runs another line of the model:
// a device problem. A profile of that architecture plans there.
func TestMapDeviceBoard(t *testing.T) {
	t.Parallel()
	dir := fullScale(t, "fp8")
	n300 := map[string]string{"MESH_DEVICE": "N300"}

	code, out, stderr := runAppEnv(t, n300, "map", dir, "--mesh", "1x4", "--summary")
	assert.Equal(t, 1, code, stderr)
	assert.NotContains(t, out, "fits:")
	assert.Contains(t, out, "problem (device): device folder N300 is a Wormhole board with 2 chip(s): a 1x4 mesh of 4 devices does not open on it")
	assert.Regexp(t, `fit not judged: [0-9.]+ GiB per device, but a 1x4 mesh has 4 devices, and N300 has 2 chip\(s\)\n`, out)
	code, out, _ = runAppEnv(t, n300, "map", dir, "--mesh", "1x4", "--format", "json")
	assert.Equal(t, 1, code)
	var doc mapping.Document
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.NotNil(t, doc.Memory)
	assert.Nil(t, doc.Memory.Fits)
	assert.Equal(t, "a 1x4 mesh has 4 devices, and N300 has 2 chip(s)", doc.Memory.NotJudged)

	// The 1x2 mesh an N300 opens, but the profile is Blackhole's.
	code, out, _ = runAppEnv(t, n300, "map", dir, "--summary")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "problem (device): device folder N300 is a Wormhole board, and profile qwen36-mtp@pr55548 plans for Blackhole: on Wormhole the serving stack runs another line of the model")
	// ... and cache build refuses it before writing anything.
	cacheDir := filepath.Join(t.TempDir(), "cache")
	code, out, _ = runAppEnv(t, n300, "cache", "build", dir, "-o", cacheDir, "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "problem (device): device folder N300 is a Wormhole board")
	assert.NoDirExists(t, filepath.Join(cacheDir, "N300"))

	// A Blackhole board that holds the mesh: no problem, the fit judged.
	code, out, stderr = runAppEnv(t, map[string]string{"MESH_DEVICE": "P300"}, "map", dir, "--summary")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "fits: ")
	// A profile of the Wormhole architecture plans on an N300.
	code, dump, _ := runApp(t, "map", "--dump")
	require.Equal(t, 0, code)
	rules := filepath.Join(t.TempDir(), "wormhole.json")
	require.NoError(t, os.WriteFile(rules, []byte(strings.Replace(dump, `"arch": "blackhole"`, `"arch": "wormhole_b0"`, 1)), 0o644))
	code, out, stderr = runAppEnv(t, n300, "map", dir, "--rules", rules, "--summary")
	assert.Equal(t, 0, code, out+stderr)
	assert.NotContains(t, out, "problem (device)")
}

// identifyFixture builds the small base's cache and returns its cache
// folder; the base is returned too.
func identifyFixture(t *testing.T) (base, folder string) {
	t.Helper()
	base = smallBase(t)
	out := filepath.Join(t.TempDir(), "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "-o", out, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	return base, filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
}

// TestIdentifyNamesOnlyWords (#36 D4): without a source, a cache that
// lacks its last decoder layer and its MTP head matches by its names and
// headers, and the verdict does not say "exactly": the layer count and
// the config-dependent parts are named as not known without the source.
func TestIdentifyNamesOnlyWords(t *testing.T) {
	t.Parallel()
	_, folder := identifyFixture(t)
	entries, err := os.ReadDir(folder)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "layers.3") || e.Name() == "mtp" || e.Name() == "manifest.json" {
			require.NoError(t, os.RemoveAll(filepath.Join(folder, e.Name())))
		}
	}
	code, out, stderr := runApp(t, "cache", "identify", folder)
	require.Equal(t, 0, code, out+stderr)
	assert.NotContains(t, out, "exactly")
	assert.Contains(t, out, "): qwen36-mtp@pr55548 plans these names and headers for the decoder layers and parts the names show, by names and headers alone (no source); not known without the source:\n")
	assert.Contains(t, out, "  decoder layers not known without the source: the names show layers 0 to 2, the last a linear_attention layer; a cache that lacks its last layers reads the same\n")
	assert.Contains(t, out, "  config not known without the source: the cache has no file of the rules of profile qwen36-mtp@pr55548 that apply when mtp_num_hidden_layers gt 0 (e.g. mtp/fc, ")
	code, out, _ = runApp(t, "cache", "identify", folder, "--format", "json")
	require.Equal(t, 0, code)
	var doc identify.Result
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	assert.True(t, doc.NamesOnly)
	assert.Contains(t, strings.Join(doc.NotCompared, "\n"), "decoder layers not known without the source: the names show layers 0 to 2")
}

// TestIdentifySourceRanking (#36 D4): with --source, the closest
// candidate's data differences are its own column, apart from the name
// and header differences every candidate is ranked by: the table is in
// the order of its differences column, and the verdict names both.
func TestIdentifySourceRanking(t *testing.T) {
	t.Parallel()
	base, folder := identifyFixture(t)
	require.NoError(t, os.Remove(filepath.Join(folder, "manifest.json")))
	// The source it was built from: exact, data compared.
	code, out, stderr := runApp(t, "cache", "identify", folder, "--source", base, "--progress", "none")
	require.Equal(t, 0, code, out+stderr)
	assert.Contains(t, out, ": exactly qwen36-mtp@pr55548, by names, headers and data")
	// Its fine-tune: the same files, some with other data.
	_, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	code, out, stderr = runApp(t, "cache", "identify", folder, "--source", ft, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code, out+stderr)
	var doc identify.Result
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	require.Greater(t, len(doc.Candidates), 2)
	best := doc.Candidates[0]
	assert.Equal(t, 0, best.Differences)
	assert.True(t, best.DataCompared)
	assert.Positive(t, best.Data)
	for i := 1; i < len(doc.Candidates); i++ {
		c := doc.Candidates[i]
		assert.False(t, c.DataCompared)
		if c.Problem == "" {
			assert.LessOrEqual(t, doc.Candidates[i-1].Differences, c.Differences, "candidates in the order of their differences")
		}
	}
	assert.False(t, doc.Exact)
	code, out, _ = runApp(t, "cache", "identify", folder, "--source", ft, "--progress", "none")
	require.Equal(t, 1, code)
	assert.Regexp(t, `(?m)^qwen36-mtp@pr55548 +\(defaults\) +0, data [1-9][0-9]* +0 +0 +0\n+qwen36-mtp@pr55548 +mlp_gateup_agmm_enabled=false +5 +0 +5 +0$`, out)
	assert.Contains(t, out, "closest qwen36-mtp@pr55548 with 0 name or header difference(s) and ")
	assert.Contains(t, out, " data difference(s) (the data of the others not compared)")
}

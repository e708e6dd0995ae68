package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stackCache builds the small fixture's cache twice: "ours" and a copy
// standing for the one the serving stack wrote, damaged by
// cachetest.Inject. It returns the source, both cache roots, the damaged
// cache directory and what was injected.
func stackCache(t *testing.T) (src, ours, stack, stackDir string, inj cachetest.Injected) {
	t.Helper()
	dir := t.TempDir()
	src = filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	ours, stack = filepath.Join(dir, "ours"), filepath.Join(dir, "stack")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", ours, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, cachetest.CopyTree(ours, stack))
	stackDir = filepath.Join(stack, "P300", "tensor_cache_bfp8_mesh1x2")
	_, plan := cachetest.OpenPlan(t, src)
	inj, err := cachetest.Inject(stackDir, plan)
	require.NoError(t, err)
	return src, ours, stack, stackDir, inj
}

func decodeCompare(t *testing.T, out string) compare.Document {
	t.Helper()
	var res compare.Document
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	return res
}

// diffFields lists each file's differences as kind:field.
func diffFields(res compare.Document) map[string][]string {
	got := map[string][]string{}
	for _, d := range res.Diffs {
		got[d.File] = append(got[d.File], string(d.Kind)+":"+d.Field)
	}
	return got
}

func TestCacheCompareCommand(t *testing.T) {
	t.Parallel()
	_, ours, _, stackDir, inj := stackCache(t)
	oursDir := filepath.Join(ours, "P300", "tensor_cache_bfp8_mesh1x2")

	// A cache compared with itself: exit 0.
	code, stdout, stderr := runApp(t, "cache", "compare", oursDir, oursDir, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "82 in both, 82 identical")
	assert.Contains(t, stdout, ": identical")

	// Every injected difference is named; exit 1. Text output is golden.
	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "text")
	require.Equal(t, 1, code)
	golden(t, "cache_compare_damaged.golden", strings.NewReplacer(oursDir, "$OURS", stackDir, "$STACK").Replace(stdout))

	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code)
	res := decodeCompare(t, stdout)
	assert.False(t, res.Same)
	got := diffFields(res)
	for _, d := range res.Diffs {
		if d.Kind == compare.DiffData {
			require.NotNil(t, d.Tile)
			assert.Equal(t, int64(inj.FlippedTile), *d.Tile)
			assert.Equal(t, []uint32{0, 1}, d.Device)
			require.NotNil(t, d.MaxAbsDiff)
			assert.Positive(t, *d.MaxAbsDiff)
		}
	}
	assert.Equal(t, inj.Want(true), got)

	// JSON Lines: a record per difference, then the summary counting them.
	code, stdout, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none", "--format", "jsonl")
	require.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, len(res.Diffs)+1)
	var sum map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	assert.Equal(t, "summary", sum["type"])
	assert.EqualValues(t, len(res.Diffs), sum["differences"])
	assert.Equal(t, false, sum["same"])
	assert.True(t, strings.HasPrefix(lines[0], `{"type":"difference","kind":`), lines[0])

	// Unreadable: a file that is not a tensorbin, or a directory that does not exist: exit 2.
	require.NoError(t, os.WriteFile(filepath.Join(stackDir, strings.TrimSuffix(inj.DType, "")), []byte("junk"), 0o644))
	code, _, _ = runApp(t, "cache", "compare", oursDir, stackDir, "--progress", "none")
	assert.Equal(t, 2, code)
	code, _, stderr = runApp(t, "cache", "compare", oursDir, filepath.Join(stackDir, "absent"), "--progress", "none")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "absent")
	code, _, _ = runApp(t, "cache", "compare", oursDir)
	assert.Equal(t, 2, code)
}

func TestMapAgainstCache(t *testing.T) {
	t.Parallel()
	src, ours, stack, _, inj := stackCache(t)

	// Our plan against our own build (the root or the cache directory): exit 0;
	// the vision folder beside it is held against the plan's vision part.
	vision := filepath.Join(ours, "P300", "tensor_cache_bfp8")
	for _, dir := range []string{ours, filepath.Join(ours, "P300", "tensor_cache_bfp8_mesh1x2")} {
		code, stdout, stderr := runApp(t, "map", src, "--against-cache", dir)
		require.Equal(t, 0, code, stdout+stderr)
		assert.Contains(t, stdout, "82 identical")
		assert.Contains(t, stdout, "plan P300/tensor_cache_bfp8 (21 files) vs cache "+vision+" (21 files): 21 in both, 21 identical")
	}
	// The vision folder alone: the vision part only.
	code, stdout, stderr := runApp(t, "map", src, "--against-cache", vision)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "21 identical")
	assert.NotContains(t, stdout, "82 identical", "no text folder's files (the temporary path may hold any digits)")
	assert.NotContains(t, stdout, "mesh1x2")
	// A model without its vision folder: every vision file missing, exit 1;
	// JSON has the vision report under vision, and same covers both.
	noVision := filepath.Join(t.TempDir(), "c")
	require.NoError(t, os.CopyFS(noVision, os.DirFS(ours)))
	require.NoError(t, os.RemoveAll(filepath.Join(noVision, "P300", "tensor_cache_bfp8")))
	code, stdout, _ = runApp(t, "map", src, "--against-cache", noVision, "--format", "json")
	require.Equal(t, 1, code, stdout)
	var doc struct {
		Same   bool `json:"same"`
		Vision struct {
			Same        bool              `json:"same"`
			Differences []json.RawMessage `json:"differences"`
		} `json:"vision"`
		Differences []json.RawMessage `json:"differences"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.False(t, doc.Same)
	assert.Empty(t, doc.Differences, "the text folder is the plan's")
	assert.Len(t, doc.Vision.Differences, 21, "every vision file missing")
	// JSON Lines: one stream, the vision files named from the text folder.
	code, stdout, _ = runApp(t, "map", src, "--against-cache", noVision, "--format", "jsonl")
	require.Equal(t, 1, code, stdout)
	assert.Equal(t, 21, strings.Count(stdout, `"file":"../tensor_cache_bfp8/visual.`), stdout)
	assert.Equal(t, 1, strings.Count(stdout, `"type":"summary"`), stdout)

	// Against the damaged stack cache: names the rename (with its planned
	// twin), the topology, dtype and memory config; exit 1. The flipped data
	// byte is not seen: no data is read.
	code, stdout, _ = runApp(t, "map", src, "--against-cache", stack, "--format", "json")
	require.Equal(t, 1, code)
	assert.Equal(t, inj.Want(false), diffFields(decodeCompare(t, stdout)))
	code, stdout, _ = runApp(t, "map", src, "--against-cache", stack, "--format", "text")
	require.Equal(t, 1, code)
	golden(t, "map_against_cache.golden", strings.ReplaceAll(stdout, stack, "$STACK"))

	// With --set proj_1d_decode=false the plan has the .dramshard name of
	// the renamed file, and names the memory config its header still has
	// (a rename alone does not make a DRAM-width-sharded file).
	code, stdout, _ = runApp(t, "map", src, "--against-cache", stack, "--set", "proj_1d_decode=false", "--format", "json")
	require.Equal(t, 1, code)
	assert.Equal(t, []string{"header:memory_config"}, diffFields(decodeCompare(t, stdout))[inj.RenamedTo])

	code, _, stderr = runApp(t, "map", src, "--against-cache", filepath.Join(stack, "absent"))
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "absent")
}

func TestSetFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))

	code, stdout, _ := runApp(t, "map", src, "--set", "mlp_1d_decode=false", "--set", "proj_1d_decode=false", "--format", "json")
	require.Equal(t, 0, code)
	var m mapping.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &m))
	assert.Equal(t, false, m.Settings["proj_1d_decode"])
	var names []string
	for _, e := range m.Entries {
		names = append(names, e.Target)
	}
	assert.Contains(t, names, "layers.0/tp/qkvzab.dramshard")
	assert.Contains(t, names, "layers.1/mlp.gate_proj.weight.dramshard.tp")
	assert.NotContains(t, names, "layers.0/tp/qkvzab.il")

	for _, bad := range [][]string{
		{"map", src, "--set", "nope=true"},
		{"map", src, "--set", "proj_1d_decode=maybe"},
		{"map", src, "--set", "rope_permuted_enabled=true"},
		{"cache", "build", src, "--out", filepath.Join(dir, "x"), "--set", "nope=1"},
	} {
		code, _, stderr := runApp(t, bad...)
		assert.Equal(t, 2, code, "%v: %s", bad, stderr)
		assert.Contains(t, stderr, "--set", "%v", bad)
	}

	// cache build records the settings; verify uses them, and --set on
	// verify checks the cache against another plan.
	out := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", out, "--set", "mlp_gateup_agmm_enabled=false", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	man, err := cache.ReadManifest(filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"))
	require.NoError(t, err)
	assert.Equal(t, false, man.Settings["mlp_gateup_agmm_enabled"])
	assert.Len(t, man.Files, 82-5, "no fused-SwiGLU files")
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--progress", "none")
	assert.Equal(t, 0, code, stdout)
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--set", "mlp_gateup_agmm_enabled=true", "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "mlp_gateup_agmm_enabled=false")
}

// TestCacheBuildNoFsync: --fsync=false writes the same cache, which
// verifies.
func TestCacheBuildNoFsync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", a, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runApp(t, "cache", "build", src, "--out", b, "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, stderr)
	sub := filepath.Join("P300", "tensor_cache_bfp8_mesh1x2")
	code, out, stderr := runApp(t, "cache", "compare", filepath.Join(a, sub), filepath.Join(b, sub))
	require.Equal(t, 0, code, out+stderr)
	code, out, stderr = runApp(t, "cache", "verify", b, "--source", src)
	require.Equal(t, 0, code, out+stderr)
}

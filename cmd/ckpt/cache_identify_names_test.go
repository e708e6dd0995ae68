package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// identifyDoc is the part of the cache identify JSON document the
// names-only tests read.
type identifyDoc struct {
	Source      string   `json:"source"`
	Files       int      `json:"files"`
	NamesOnly   bool     `json:"names_only"`
	NotCompared []string `json:"not_compared"`
	Exact       bool     `json:"exact"`
	Ties        []string `json:"ties"`
	Best        struct {
		Profile     string   `json:"profile"`
		Overrides   []string `json:"overrides"`
		Differences int      `json:"differences"`
		Missing     int      `json:"missing"`
		Extra       int      `json:"extra"`
		Headers     int      `json:"header_differences"`
	} `json:"best"`
	Candidates []json.RawMessage `json:"candidates"`
	Report     struct {
		Differences []struct {
			Kind    string `json:"kind"`
			File    string `json:"file"`
			Field   string `json:"field"`
			A       string `json:"a"`
			B       string `json:"b"`
			Message string `json:"message"`
		} `json:"differences"`
	} `json:"report"`
}

func identifyJSON(t *testing.T, args ...string) (int, identifyDoc) {
	t.Helper()
	code, stdout, stderr := runApp(t, append([]string{"cache", "identify", "--format", "json"}, args...)...)
	var doc identifyDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout+stderr)
	return code, doc
}

// manifestlessCache builds the small fixture's cache with args and removes the
// ckpt manifest, so that it looks like a cache the serving stack wrote:
// it returns the cache root and its folder.
func manifestlessCache(t *testing.T, src, out string, args ...string) (string, string) {
	t.Helper()
	code, _, stderr := runApp(t, append([]string{"cache", "build", src, "--out", out, "--progress", "none", "--fsync=false"}, args...)...)
	require.Equal(t, 0, code, stderr)
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.Remove(filepath.Join(folder, cache.ManifestName)))
	return out, folder
}

// Without --source and without a ckpt manifest, cache identify names the
// profile and switches a cache was built with from its file names and
// headers alone (exit 0), says so and what it could not compare.
func TestCacheIdentifyNamesOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	for _, tc := range []struct {
		name      string
		args      []string
		profile   string
		overrides []string
		files     int
	}{
		{"mtp", nil, mapping.ProfileMTP, []string{}, 82},
		{"main", []string{"--profile", mapping.ProfileMain}, mapping.ProfileMain, []string{}, 74},
		{"proj", []string{"--set", "proj_1d_decode=false"}, mapping.ProfileMTP, []string{"proj_1d_decode=false"}, 82},
		{"mainmlp", []string{"--profile", mapping.ProfileMain, "--set", "mlp_1d_decode=false"}, mapping.ProfileMain, []string{"mlp_1d_decode=false"}, 74},
		// main with the fused GDN decode off (QWEN36_GDN_FUSED_DECODE=0): no dt_bias_fp32 / neg_exp_A_fp32
		{"mainnofused", []string{"--profile", mapping.ProfileMain, "--set", "gdn_fused_decode_enabled=false"}, mapping.ProfileMain,
			[]string{"gdn_fused_decode_enabled=false"}, 68},
		{"noagmm", []string{"--set", "mlp_gateup_agmm_enabled=false", "--set", "proj_1d_decode=false"}, mapping.ProfileMTP,
			[]string{"mlp_gateup_agmm_enabled=false", "proj_1d_decode=false"}, 77},
	} {
		out, _ := manifestlessCache(t, src, filepath.Join(dir, tc.name), tc.args...)
		code, stdout, stderr := runApp(t, "cache", "identify", out)
		require.Equal(t, 0, code, "%s: %s%s", tc.name, stdout, stderr)
		want := tc.profile
		if len(tc.overrides) > 0 {
			want += " with " + strings.Join(tc.overrides, ", ")
		}
		assert.Contains(t, stdout, fmt.Sprintf("(%d files, mesh 1x2): ", tc.files)+want+" plans these names and headers for the decoder layers and parts the names show, by names and headers alone (no source); not known without the source:\n", tc.name)
		set := ""
		for _, o := range tc.overrides {
			set += " --set " + o
		}
		assert.Contains(t, stdout, "reproduce it with: ckpt cache build SRC --out "+filepath.Join(dir, tc.name)+" --profile "+tc.profile+" --mesh 1x2 --device P300"+set+"\n", tc.name)
		assert.Contains(t, stdout, "\n  shapes not compared: no source (")
		assert.Contains(t, stdout, "\n  data not compared: no source\n")
		assert.NotContains(t, stdout, "as close", "no other candidate explains every file")

		code, doc := identifyJSON(t, out)
		require.Equal(t, 0, code)
		assert.True(t, doc.Exact)
		assert.True(t, doc.NamesOnly)
		assert.Empty(t, doc.Source)
		assert.Equal(t, tc.profile, doc.Best.Profile)
		assert.Equal(t, tc.overrides, doc.Best.Overrides)
		assert.Empty(t, doc.Ties)
		assert.Len(t, doc.Candidates, 16, "8 settings of the MTP line's 3 switches, 8 of main's 3")
		require.NotEmpty(t, doc.NotCompared)
		assert.Contains(t, doc.NotCompared[0], "shapes not compared: no source")
		assert.Contains(t, doc.NotCompared, "data not compared: no source")
		assert.Equal(t, tc.files, doc.Files)
		code, stdout, _ = runApp(t, "cache", "identify", out, "--format", "jsonl")
		require.Equal(t, 0, code)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		require.Len(t, lines, 17)
		var sum struct {
			Type       string   `json:"type"`
			Exact      bool     `json:"exact"`
			Profile    string   `json:"profile"`
			Overrides  []string `json:"overrides"`
			Candidates int      `json:"candidates"`
		}
		require.NoError(t, json.Unmarshal([]byte(lines[16]), &sum))
		assert.True(t, sum.Exact)
		assert.Equal(t, tc.profile, sum.Profile)
		assert.Equal(t, tc.overrides, sum.Overrides)
		assert.Equal(t, 16, sum.Candidates)
	}
}

// A stack-written cache that no candidate explains: the closest one with
// its remaining differences, in map --against-cache's vocabulary (exit
// 1); a folder that is not a readable cache exits 2.
func TestCacheIdentifyNamesOnlyClosest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))

	// One file removed.
	out, folder := manifestlessCache(t, src, filepath.Join(dir, "removed"), "--profile", mapping.ProfileMain)
	removed := "layers.0/tp/out.colpar_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	require.NoError(t, os.Remove(filepath.Join(folder, filepath.FromSlash(removed))))
	code, stdout, _ := runApp(t, "cache", "identify", out)
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "(73 files, mesh 1x2): no candidate reproduces its names and headers alone (no source); closest qwen36@main-2026-10 with 1 difference(s)")
	assert.Contains(t, stdout, removed)
	code, doc := identifyJSON(t, out)
	assert.Equal(t, 1, code)
	assert.False(t, doc.Exact)
	assert.Equal(t, mapping.ProfileMain, doc.Best.Profile)
	assert.Equal(t, 1, doc.Best.Missing)
	require.Len(t, doc.Report.Differences, 1)
	assert.Equal(t, "missing", doc.Report.Differences[0].Kind)
	assert.Equal(t, removed, doc.Report.Differences[0].File)
	assert.Contains(t, doc.Report.Differences[0].Message, "planned (target layers.0/tp/out.colpar, rule gdn.out.colpar), not in the cache")

	// One file renamed: missing under its name, extra under the other,
	// which names the planned file it looks like.
	out, folder = manifestlessCache(t, src, filepath.Join(dir, "renamed"))
	il := "layers.0/tp/qkvzab.il_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	ds := "layers.0/tp/qkvzab.dramshard_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	require.NoError(t, os.Rename(filepath.Join(folder, filepath.FromSlash(il)), filepath.Join(folder, filepath.FromSlash(ds))))
	code, doc = identifyJSON(t, out)
	assert.Equal(t, 1, code)
	assert.Equal(t, mapping.ProfileMTP, doc.Best.Profile)
	assert.Equal(t, []string{}, doc.Best.Overrides)
	assert.Equal(t, []int{2, 1, 1}, []int{doc.Best.Differences, doc.Best.Missing, doc.Best.Extra})
	kinds := map[string]string{}
	for _, d := range doc.Report.Differences {
		kinds[d.File] = d.Kind + ": " + d.Message
	}
	assert.Equal(t, map[string]string{
		il: "missing: planned (target layers.0/tp/qkvzab.il, rule gdn.qkvzab.il), not in the cache",
		ds: "extra: in the cache, not produced by the plan; the plan has " + il,
	}, kinds)

	// One header changed (an interleaved file recorded as DRAM
	// width-sharded): a header difference of that file.
	out, folder = manifestlessCache(t, src, filepath.Join(dir, "header"))
	wo := "layers.3/tp/wo_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	require.NoError(t, cachetest.RewriteHeader(filepath.Join(folder, filepath.FromSlash(wo)), func(h *tensorbin.Header) {
		h.Spec.Memory = tensorbin.WidthShardedConfig(int(h.Spec.Shape[0]), int(h.Spec.Shape[1]))
	}))
	code, doc = identifyJSON(t, out)
	assert.Equal(t, 1, code)
	assert.Equal(t, mapping.ProfileMTP, doc.Best.Profile)
	assert.Equal(t, 1, doc.Best.Headers)
	require.Len(t, doc.Report.Differences, 1)
	d := doc.Report.Differences[0]
	assert.Equal(t, []string{"header", wo, "memory_config"}, []string{d.Kind, d.File, d.Field})
	assert.Equal(t, "DRAM Interleaved", d.A)
	assert.Contains(t, d.B, "DRAM WidthSharded shard [")

	// Unreadable: a cache folder without a .tensorbin file, no such
	// directory, a directory that is not a cache.
	empty := filepath.Join(dir, "empty", "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.MkdirAll(empty, 0o755))
	code, _, stderr := runApp(t, "cache", "identify", empty)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "holds no .tensorbin file: nothing to identify")
	code, _, _ = runApp(t, "cache", "identify", filepath.Join(dir, "nothing"))
	assert.Equal(t, 2, code)
	code, _, stderr = runApp(t, "cache", "identify", src)
	assert.Equal(t, 2, code, stderr)
}

// writeHeaders writes the files of plan under root with their headers
// only: the data region is a hole (the file is sparse), so the 27B's
// cache costs its ~1000 headers.
func writeHeaders(t *testing.T, plan *mapping.Plan, root string) {
	t.Helper()
	for _, e := range plan.Entries {
		h, err := cache.HeaderFor(e)
		require.NoError(t, err)
		b, err := tensorbin.EncodeHeader(h)
		require.NoError(t, err)
		p := filepath.Join(root, filepath.FromSlash(e.File))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		require.NoError(t, os.Truncate(p, h.FileSize()))
	}
}

// At the 27B's scale (its embedded layout, planned by each built-in
// profile, written as headers only): names and headers alone name the
// profile and switches.
func TestCacheIdentifyNamesOnly27B(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "27b")
	_, err := synth.WriteInventoryEdited(src, "fp8", nil)
	require.NoError(t, err)
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	for i, tc := range []struct {
		profile string
		set     mapping.Settings
		cols    int
		files   int
		folder  string
		want    string
	}{
		{mapping.ProfileMTP, nil, 2, 997, "/P300/tensor_cache_bfp8_mesh1x2", "qwen36-mtp@pr55548 plans these names and headers for the decoder layers and parts the names show, by"},
		// main: no mtp/ (17), out.colpar (48) and the fused decode's two fp32 files (96)
		{mapping.ProfileMain, nil, 2, 997 - 17 + 48 + 96, "/P300/tensor_cache_bfp8_mesh1x2", "qwen36@main-2026-10 plans these names and headers for the decoder layers and parts the names show, by"},
		{mapping.ProfileMTP, mapping.Settings{mapping.VarProj1DDecode: false}, 2, 997, "/P300/tensor_cache_bfp8_mesh1x2",
			"qwen36-mtp@pr55548 with proj_1d_decode=false plans these names and headers for the decoder layers and parts the names show, by"},
		{mapping.ProfileMain, nil, 4, 997 - 17 + 48 + 96, "/P150x4/tensor_cache_bfp8_mesh1x4", "qwen36@main-2026-10 plans these names and headers for the decoder layers and parts the names show, by"},
		{mapping.ProfileMain, mapping.Settings{mapping.VarGDNFusedDecode: false}, 2, 997 - 17 + 48, "/P300/tensor_cache_bfp8_mesh1x2",
			"qwen36@main-2026-10 with gdn_fused_decode_enabled=false plans these names and headers for the decoder layers and parts the names show, by"},
	} {
		p, err := mapping.Builtin(tc.profile)
		require.NoError(t, err)
		mesh := mapping.Mesh{Rows: 1, Cols: tc.cols}
		plan, err := mapping.BuildWith(c, p, mesh, tc.set, nil)
		require.NoError(t, err)
		require.Len(t, plan.Entries, tc.files)
		root := filepath.Join(dir, "cache", string(rune('a'+i)))
		writeHeaders(t, plan, root)
		code, stdout, stderr := runApp(t, "cache", "identify", root)
		require.Equal(t, 0, code, stdout+stderr)
		assert.Contains(t, stdout, tc.folder+" ("+strconv.Itoa(tc.files)+" files, mesh "+mesh.String()+"): "+tc.want+" names and headers alone (no source); not known without the source:\n")
		assert.Contains(t, stdout, "reproduce it with: ckpt cache build SRC --out "+root+" --profile "+tc.profile+" --mesh "+mesh.String()+" --device "+
			strings.Split(tc.folder, "/")[1])
	}
}

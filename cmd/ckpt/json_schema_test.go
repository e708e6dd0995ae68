package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSONDocuments: every JSON document starts with schema_version, has
// no null where a list belongs (no key holds null except the nullable
// numbers of diff), and uses one vocabulary (bytes, findings); every JSON
// Lines output ends with a summary record.
func TestJSONDocuments(t *testing.T) {
	t.Parallel()
	f := newSurfaceFixture(t)
	dir, base, ft, small, cacheRoot, folder := f.dir, f.base, f.ft, f.small, f.cacheRoot, f.folder
	contract := filepath.Join(dir, "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)

	docs := [][]string{
		{"inspect", base, "--format", "json"},
		{"inspect", base, "--match", "mtp.**", "--format", "json"},
		{"verify", base, "--format", "json"},
		{"verify", ft, "--against", contract, "--format", "json"},
		{"contract", base},
		{"diff", base, ft, "--format", "json", "--progress", "none"},
		{"diff", base, base, "--mode", "header", "--format", "json"},
		{"map", small, "--format", "json"},
		{"map", small, "--against-cache", cacheRoot, "--format", "json"},
		{"extract", base, "--match", "mtp.**", "-o", filepath.Join(dir, "mtp.safetensors"), "--format", "json", "--progress", "none"},
		{"cache", "build", small, "-o", cacheRoot, "--format", "json", "--progress", "none"},
		{"cache", "verify", cacheRoot, "--source", small, "--format", "json", "--progress", "none"},
		{"cache", "ls", folder, "--format", "json"},
		{"cache", "compare", folder, folder, "--format", "json", "--progress", "none"},
		{"version", "--format", "json"},
	}
	for _, args := range docs {
		code, out, stderr := runApp(t, args...)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
		assert.True(t, strings.HasPrefix(out, fmt.Sprintf("{\n  \"schema_version\": %d,\n", ckpt.SchemaVersion)), "%v: schema_version is not the first key:\n%.200s", args, out)
		var doc any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), args)
		for _, p := range nulls(doc, "") {
			assert.True(t, nullableNumber(p), "%v: %s is null", args, p)
		}
		assert.NotContains(t, out, `"nbytes"`, args)
		assert.NotContains(t, out, `"checks"`, args)
	}

	lines := [][]string{
		{"inspect", base, "--format", "jsonl"},
		{"cache", "ls", t.TempDir(), "--format", "jsonl"}, // no file: the summary alone
		{"diff", base, ft, "--format", "jsonl", "--progress", "none"},
		{"diff", base, ft, "--format", "jsonl", "--by", "layer", "--progress", "none"},
		{"cache", "ls", folder, "--format", "jsonl"},
		{"verify", base, "--format", "jsonl"},
		{"verify", base, "--format", "jsonl", "--only-failed"},
		{"map", small, "--format", "jsonl", "--match", "mtp.**"},
		{"cache", "verify", cacheRoot, "--source", small, "--format", "jsonl", "--progress", "none"},
		{"extract", base, "--match", "mtp.**", "-o", filepath.Join(dir, "mtp2.safetensors"), "--format", "jsonl", "--progress", "none"},
		{"cache", "compare", folder, folder, "--format", "jsonl", "--progress", "none"},
		{"map", small, "--against-cache", cacheRoot, "--format", "jsonl"},
	}
	for _, args := range lines {
		code, out, stderr := runApp(t, args...)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, stderr)
		recs := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, recs)
		for i, l := range recs {
			var m map[string]any
			d := json.NewDecoder(bytes.NewReader([]byte(l)))
			require.NoError(t, d.Decode(&m), args)
			if i == len(recs)-1 {
				assert.Equal(t, "summary", m["type"], args)
				assert.EqualValues(t, ckpt.SchemaVersion, m["schema_version"], args)
			} else {
				assert.NotEqual(t, "summary", m["type"], args)
				assert.NotEmpty(t, m["type"], args)
			}
		}
	}
}

// surfaceFixture is the fixture pair, the small checkpoint and a cache
// built from it (one cache folder), in a test's own directory.
type surfaceFixture struct {
	dir, base, ft, small, cacheRoot, folder string
}

func newSurfaceFixture(t *testing.T) surfaceFixture {
	t.Helper()
	f := surfaceFixture{dir: t.TempDir()}
	f.base, f.ft = fixturePair(t)
	f.small = filepath.Join(f.dir, "small")
	require.NoError(t, synth.Write(f.small, synth.Small()))
	f.cacheRoot = filepath.Join(f.dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", f.small, "-o", f.cacheRoot, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	f.folder = filepath.Join(f.cacheRoot, "P300", "tensor_cache_bfp8_mesh1x2")
	return f
}

// nulls lists the JSON paths holding null.
func nulls(v any, path string) []string {
	var out []string
	switch x := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		for k, e := range x {
			out = append(out, nulls(e, path+"."+k)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, nulls(e, path+"[]")...)
		}
	}
	return out
}

// nullableNumber: the statistics of a diff row are null when they do not
// apply (header or bytes mode, a tensor on one side only), as documented
// in docs/cli.md; so are config values that one side lacks.
func nullableNumber(path string) bool {
	for _, k := range []string{"changed_elems", "max_abs_diff", "rel_l2", "cosine", "numel", ".base", ".ft", "mean_rel_l2", "changed_fraction_range"} {
		if strings.HasSuffix(path, k) {
			return true
		}
	}
	return false
}

// TestJSONVocabulary: the commands' JSON documents name the same things
// the same way (schema_version 3): inspect's groups are diff's (text_layers,
// mtp, visual, other) with inspect's label as pattern; cache ls writes a
// file's placement, memory config and per-device shape as map writes them
// for the entry that made the file; diff's JSON has the differs verdict of
// its JSON Lines summary record.
func TestJSONVocabulary(t *testing.T) {
	t.Parallel()
	f := newSurfaceFixture(t)
	run := func(want int, args ...string) map[string]any {
		t.Helper()
		code, out, stderr := runApp(t, args...)
		require.Equal(t, want, code, "%v: %s", args, stderr)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), args)
		return doc
	}
	list := func(doc map[string]any, key string) []map[string]any {
		t.Helper()
		raw, ok := doc[key].([]any)
		require.True(t, ok, "%s is not a list", key)
		var out []map[string]any
		for _, r := range raw {
			out = append(out, r.(map[string]any))
		}
		return out
	}

	// Groups: inspect and diff use the same names.
	groupsOf := func(rows []map[string]any) []string {
		var gs []string
		for _, r := range rows {
			gs = append(gs, r["group"].(string))
		}
		return gs
	}
	ins := run(0, "inspect", f.base, "--format", "json")
	byGroup := list(ins["summary"].(map[string]any), "by_group")
	assert.Equal(t, []string{ckpt.GroupText, ckpt.GroupMTP, ckpt.GroupVisual, ckpt.GroupOther}, groupsOf(byGroup))
	assert.Equal(t, "model.language_model.layers.{0..3}", byGroup[0]["pattern"])
	assert.Equal(t, "mtp.*", byGroup[1]["pattern"])
	dj := run(1, "diff", f.base, f.ft, "--format", "json", "--progress", "none")
	assert.Subset(t, groupsOf(byGroup), groupsOf(list(dj, "groups")))

	// Verdict: diff's JSON says differs like its JSON Lines summary and exit status.
	assert.Equal(t, true, dj["differs"])
	assert.Equal(t, false, run(0, "diff", f.base, f.base, "--mode", "header", "--format", "json")["differs"])
	code, out, stderr := runApp(t, "diff", f.base, f.ft, "--format", "jsonl", "--progress", "none")
	require.Equal(t, 1, code, stderr)
	recs := strings.Split(strings.TrimSpace(out), "\n")
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(recs[len(recs)-1]), &last))
	assert.Equal(t, dj["differs"], last["differs"])

	// Placement, memory config, per-device shape: cache ls as map.
	mj := run(0, "map", f.small, "--format", "json")
	byFile := map[string]map[string]any{}
	for _, e := range list(mj, "entries") {
		byFile[e["file"].(string)] = e
	}
	if v, ok := mj["vision"].(map[string]any); ok { // the vision part's folder
		for _, e := range list(v, "entries") {
			byFile[e["file"].(string)] = e
		}
	}
	lj := run(0, "cache", "ls", f.cacheRoot, "--format", "json")
	files := list(lj, "files")
	require.NotEmpty(t, files)
	sharded := 0
	for _, fe := range files {
		e := byFile[fe["path"].(string)]
		require.NotNil(t, e, "%s is not a map entry", fe["path"])
		assert.Equal(t, e["memory_config"], fe["memory_config"], fe["path"])
		assert.Equal(t, e["device_shape"], fe["device_shape"], fe["path"])
		mp, lp := e["placement"].(map[string]any), fe["placement"].(map[string]any)
		for _, k := range []string{"kind", "dim", "mesh_axes"} {
			assert.Equal(t, mp[k], lp[k], "%s: placement %s", fe["path"], k)
		}
		if lp["kind"] == "shard" {
			sharded++
		}
		assert.NotContains(t, fe, "shard_shape")
		assert.NotContains(t, fe, "memory")
	}
	assert.Positive(t, sharded, "the fixture's cache has sharded files")
}

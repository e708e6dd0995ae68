package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The small frictions of issue #36 ("the first hour"), each a test that
// failed before its fix.

// TestWorkersAtLeastOne: --workers 0 or -1 is a usage error (exit 2) on
// every command that has the flag; leaving it out picks the default.
func TestWorkersAtLeastOne(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"cache", "build", missing, "-o", t.TempDir()},
		{"cache", "verify", missing, "--source", missing},
		{"cache", "pack", missing, "-o", "x.tar.zst"},
		{"cache", "compare", missing, missing},
		{"cache", "identify", missing},
		{"contract", missing},
		{"verify", missing},
		{"diff", missing, missing},
		{"inspect", missing},
	} {
		for _, n := range []string{"0", "-1"} {
			code, _, stderr := runApp(t, append(args, "--workers", n)...)
			assert.Equal(t, exitUnreadable, code, "%v --workers %s: %s", args, n, stderr)
			assert.Equal(t, "ckpt: --workers must be at least 1, got "+n+"\n", stderr, "%v", args)
		}
	}
}

// TestUnknownSubcommandBeforeFlags: a mistyped subcommand followed by its
// flags gets the did-you-mean it gets without them, not "unknown
// shorthand flag".
func TestUnknownSubcommandBeforeFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cache", "biuld", missing, "-o", "x"}, `ckpt: unknown command "biuld" for "ckpt cache"; did you mean build? (see ckpt cache --help)` + "\n"},
		{[]string{"cache", "biuld", missing}, `ckpt: unknown command "biuld" for "ckpt cache"; did you mean build? (see ckpt cache --help)` + "\n"},
		{[]string{"cache", "verfy", missing, "--source", missing}, `ckpt: unknown command "verfy" for "ckpt cache"; did you mean verify? (see ckpt cache --help)` + "\n"},
		{[]string{"inspcet", missing, "--format", "json"}, `ckpt: unknown command "inspcet" for "ckpt"; did you mean inspect? (see ckpt --help)` + "\n"},
		// a flag the group does not know, with no subcommand: the flag error
		{[]string{"cache", "--bogus"}, "ckpt: unknown flag: --bogus (see ckpt cache --help)\n"},
	} {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, "%v", tc.args)
		assert.Equal(t, tc.want, stderr, "%v", tc.args)
	}
}

// TestTagOneFolder: a --tag that is not one folder-name part (x/y, ..)
// would build a folder cache verify cannot find: refused before any work.
func TestTagOneFolder(t *testing.T) {
	t.Parallel()
	base, _, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	for _, tag := range []string{"x/y", "..", "a b", "/abs"} {
		out := filepath.Join(t.TempDir(), "cache")
		code, _, stderr := runApp(t, "cache", "build", base, "-o", out, "--tag", tag, "--progress", "none")
		assert.Equal(t, exitUnreadable, code, "--tag %q: %s", tag, stderr)
		assert.Contains(t, stderr, "cache tag "+strconv.Quote(tag)+": want one folder-name part", tag)
		assert.NoDirExists(t, out, "nothing is built")
		code, _, stderr = runApp(t, "map", base, "--tag", tag)
		assert.Equal(t, exitUnreadable, code, "map --tag %q: %s", tag, stderr)
	}
	// a tag of one part builds a folder cache verify finds
	out := filepath.Join(t.TempDir(), "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "-o", out, "--tag", "bf16.v2", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	code, stdout, stderr := runApp(t, "cache", "verify", out, "--source", base, "--progress", "none")
	assert.Equal(t, 0, code, stdout+stderr)
	assert.DirExists(t, filepath.Join(out, "P300", "tensor_cache_bf16.v2_mesh1x2"))
}

// TestAllowConfigBelowALeaf: --allow-config under a key that holds a value
// (text_config.hidden_size.x) names no key: refused (exit 2) before any
// data is read; an element of an array key is a key.
func TestAllowConfigBelowALeaf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	contract := filepath.Join(dir, "base.contract.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	for _, p := range []string{"text_config.hidden_size.x", "text_config.layer_types.full"} {
		code, stdout, stderr := runApp(t, "verify", ft, "--against", contract, "--allow-config", p)
		assert.Equal(t, exitUnreadable, code, "%s: %s", p, stdout+stderr)
		assert.Contains(t, stderr, "--allow-config "+strconv.Quote(p)+" names no config key of the contract or of the checkpoint", p)
		assert.Empty(t, stdout)
	}
	for _, p := range []string{"text_config.hidden_size", "text_config", "text_config.layer_types[1]"} {
		code, stdout, stderr := runApp(t, "verify", ft, "--against", contract, "--allow-config", p)
		assert.Equal(t, exitFailed, code, "%s: the fine-tune still differs: %s", p, stderr)
		assert.NotContains(t, stderr, "names no config key", p)
		assert.NotEmpty(t, stdout)
	}
}

// TestBuildOutFromTTCachePath: without -o/--out, cache build writes under
// $TT_CACHE_PATH (the cache root the serving stack reads, as the help
// says), and says so; -o wins over it.
func TestBuildOutFromTTCachePath(t *testing.T) {
	t.Parallel()
	base, _, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(t.TempDir(), "tt-cache")
	env := map[string]string{"TT_CACHE_PATH": root}
	var out, errb bytes.Buffer
	app := &App{Out: &out, Err: &errb, Getenv: func(k string) string { return env[k] }}
	code := app.Run(context.Background(), []string{"cache", "build", base, "--progress", "none"})
	require.Equal(t, 0, code, errb.String())
	assert.Contains(t, errb.String(), "ckpt: note: no -o/--out: building under $TT_CACHE_PATH ("+root+")\n")
	assert.FileExists(t, filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))

	other := filepath.Join(t.TempDir(), "other")
	out.Reset()
	errb.Reset()
	code = app.Run(context.Background(), []string{"cache", "build", base, "-o", other, "--progress", "none"})
	require.Equal(t, 0, code, errb.String())
	assert.NotContains(t, errb.String(), "TT_CACHE_PATH")
	assert.FileExists(t, filepath.Join(other, "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))

	// neither: the usage error names both
	app = &App{Out: &out, Err: &errb, Getenv: func(string) string { return "" }}
	errb.Reset()
	assert.Equal(t, exitUnreadable, app.Run(context.Background(), []string{"cache", "build", base}))
	assert.Equal(t, "ckpt: cache build needs -o/--out DIR (or $TT_CACHE_PATH)\n", errb.String())
}

// TestBareRepoIDHint: a source that does not exist locally and is written
// like a repository id (as hf takes it) is named as one, with hf: and
// hf:// and whether the local cache holds it; still exit 2.
func TestBareRepoIDHint(t *testing.T) {
	t.Parallel()
	hub := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(hub, "models--Qwen--Cached-27B", "snapshots"), 0o755))
	env := map[string]string{"HF_HUB_CACHE": hub}
	for _, tc := range []struct {
		src, cache string
	}{
		{"Qwen/Qwen3.5-27B-FP8", "the local Hugging Face cache (it does not hold this repository: hf download Qwen/Qwen3.5-27B-FP8 fetches it)"},
		{"Qwen/Cached-27B", "the local Hugging Face cache (it holds this repository)"},
		{"Qwen/Cached-27B@v1", "the local Hugging Face cache (it holds this repository)"},
	} {
		for _, args := range [][]string{{"inspect", tc.src}, {"verify", tc.src}, {"diff", tc.src, tc.src}, {"map", tc.src}} {
			code, stdout, stderr := runSources(t, env, source.Options{}, args...)
			assert.Equal(t, exitUnreadable, code, "%v", args)
			assert.Empty(t, stdout)
			assert.Equal(t, "ckpt: opening "+tc.src+": no such file or directory; it looks like a Hugging Face repository id: hf:"+tc.src+" reads "+
				tc.cache+", hf://"+tc.src+" reads the hub\n", stderr, "%v", args)
		}
	}
	// a path that is not written like an id keeps the plain message
	code, _, stderr := runSources(t, env, source.Options{}, "inspect", "./Qwen/none")
	assert.Equal(t, exitUnreadable, code)
	assert.Equal(t, "ckpt: opening ./Qwen/none: no such file or directory\n", stderr)
}

// TestCacheCommandsRefuseCheckpointDir: ls, pack, identify and verify of
// a checkpoint directory refuse it alike (exit 2, "not a cache: ... a
// checkpoint directory"); ls used to list "0 files, 0 B", exit 0, and
// verify to fail it as a cache (a manifest finding, exit 1).
func TestCacheCommandsRefuseCheckpointDir(t *testing.T) {
	t.Parallel()
	base, _, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	want := "ckpt: not a cache: " + base + " is a checkpoint directory (it holds model.safetensors.index.json); ckpt cache build " + base + " -o DIR builds a cache from it\n"
	for _, args := range [][]string{
		{"cache", "ls", base},
		{"cache", "ls", base, "--format", "json"},
		{"cache", "pack", base, "-o", filepath.Join(t.TempDir(), "c.tar.zst")},
		{"cache", "identify", base},
		{"cache", "verify", base},
		{"cache", "verify", base, "--format", "json", "--read-data"},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, exitUnreadable, code, "%v: %s", args, stdout)
		assert.Empty(t, stdout, "%v", args)
		assert.Equal(t, want, stderr, "%v", args)
	}
	// an empty directory is still an empty listing
	code, stdout, _ := runApp(t, "cache", "ls", t.TempDir())
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "0 files, 0 B")
}

// TestUnpackNamesWhatTheFileIs: cache unpack of a file that is not a
// cache archive names what it is (as a SRC that is not safetensors is
// named) and creates nothing under -o.
func TestUnpackNamesWhatTheFileIs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _, err := synth.Pair(dir)
	require.NoError(t, err)
	empty := filepath.Join(dir, "empty.tar.zst")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, tc := range []struct{ file, looks string }{
		{filepath.Join(base, "config.json"), ": it looks like a config.json"},
		{filepath.Join(base, "model-00001-of-00004.safetensors"), ": it is a safetensors file"},
		{empty, ": it is empty"},
	} {
		out := filepath.Join(t.TempDir(), "unpacked")
		code, stdout, stderr := runApp(t, "cache", "unpack", tc.file, "-o", out, "--progress", "none")
		assert.Equal(t, exitUnreadable, code, stdout)
		assert.Equal(t, "ckpt: unpacking "+tc.file+": not a cache archive (a zstd-compressed tar, as ckpt cache pack writes it)"+tc.looks+"\n", stderr)
		assert.NoDirExists(t, out, "nothing is created before the archive is recognised")
	}
}

// TestProblemsGrouped: the plan problems of one cause are one line with
// the count and examples (map, cache build); the JSON document keeps
// every problem.
func TestProblemsGrouped(t *testing.T) {
	t.Parallel()
	base, _, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	for _, args := range [][]string{
		{"map", base, "--mesh", "1x3", "--device", "P150x3"},
		{"cache", "build", base, "--mesh", "1x3", "--device", "P150x3", "-o", filepath.Join(t.TempDir(), "c"), "--progress", "none"},
	} {
		code, stdout, _ := runApp(t, args...)
		require.Equal(t, exitFailed, code, "%v", args)
		var lines []string
		for _, l := range strings.Split(stdout, "\n") {
			if strings.HasPrefix(l, "problem (") {
				lines = append(lines, l)
			}
		}
		norms := 0
		for _, l := range lines {
			if strings.Contains(l, "hidden_size/32 rows of 32 has 4 units") {
				norms++
				assert.Contains(t, l, "problem (indivisible): target layers.0.input_layernorm.weight_distributed: hidden_size/32 rows of 32")
				assert.Contains(t, l, "; the same for 13 more target(s): layers.0.post_attention_layernorm.weight_distributed, layers.1.input_layernorm.weight_distributed, layers.1.post_attention_layernorm.weight_distributed and 10 more")
			}
		}
		assert.Equal(t, 1, norms, "%v: one line for the 14 norms:\n%s", args, stdout)
		assert.Less(t, len(lines), 15, "%v: 65 problems in a few lines", args)
	}
	code, stdout, _ := runApp(t, "map", base, "--mesh", "1x3", "--device", "P150x3", "--format", "json")
	require.Equal(t, exitFailed, code)
	var doc struct {
		Problems []ckpt.Finding `json:"problems"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	// 65 of the text plan, 7 of its vision part (the tower's heads and
	// merger rows do not divide by 3 either)
	assert.Len(t, doc.Problems, 72, "the document lists every problem")
}

// TestIdentifyReproduceLineRuns: the reproduce line of cache identify
// names the real source (the manifest's, or --source) and the cache root,
// and run as printed it rebuilds the same folder (every file unchanged).
func TestIdentifyReproduceLineRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _, err := synth.Pair(dir)
	require.NoError(t, err)
	root := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "-o", root, "--tag", "bf16x", "--set", "proj_1d_decode=false", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	for _, args := range [][]string{
		{"cache", "identify", root},
		{"cache", "identify", root, "--source", base, "--headers-only"},
	} {
		code, stdout, stderr := runApp(t, args...)
		require.Equal(t, 0, code, stdout+stderr)
		_, line, ok := strings.Cut(stdout, "reproduce it with: ")
		require.True(t, ok, stdout)
		line, _, _ = strings.Cut(line, "\n")
		assert.Equal(t, "ckpt cache build "+base+" --out "+root+" --profile qwen36-mtp@pr55548 --mesh 1x2 --device P300 --tag bf16x --set proj_1d_decode=false", line)
		words := strings.Fields(line)
		require.Equal(t, "ckpt", words[0])
		code, stdout, stderr = runApp(t, append(words[1:], "--progress", "none")...)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stdout, ": 0 built, 82 unchanged, 0 removed\n", "the line rebuilds the same folder")
	}
}

// TestCacheVerifySourceFromManifest: without --source, cache verify checks
// against the source the manifest names and says so; a stale source is
// still found; --source still wins.
func TestCacheVerifySourceFromManifest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	root := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "-o", root, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	// The build writes the text folder and its vision companion: each is
	// checked against the source its own manifest names, and says so.
	folder := filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x2")
	vision := filepath.Join(root, "P300", "tensor_cache_bfp8")
	for _, d := range []string{root, folder} {
		code, stdout, stderr := runApp(t, "cache", "verify", d, "--progress", "none")
		assert.Equal(t, 0, code, stdout+stderr)
		assert.Contains(t, stdout, "match the plan of "+base+" and their manifest")
		for _, f := range []string{folder, vision} {
			assert.Contains(t, stderr, "ckpt: note: "+f+": checking against the source its manifest names, "+base+" (--source SRC names another)\n")
		}
	}
	code, stdout, stderr := runApp(t, "cache", "verify", root, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Folders []map[string]any `json:"folders"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	require.Len(t, doc.Folders, 2, stdout)
	for _, f := range doc.Folders {
		assert.Equal(t, base, f["source"])
		assert.Equal(t, true, f["source_from_manifest"])
	}
	// --source names another checkpoint: no note, and the fine-tune is stale
	code, stdout, stderr = runApp(t, "cache", "verify", root, "--source", ft, "--progress", "none")
	assert.Equal(t, exitFailed, code, stdout+stderr)
	assert.NotContains(t, stderr, "manifest names")
}

// TestBuildPerDeviceAsMap: on a terminal cache build's per-device block
// renders sizes as map's does (32.0 GiB, not 34358972160): one renderer.
func TestBuildPerDeviceAsMap(t *testing.T) {
	t.Parallel()
	base, _, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	env := map[string]string{"COLUMNS": "120", "NO_COLOR": "1"}
	code, built := runTerminal(t, env, "cache", "build", base, "-o", filepath.Join(t.TempDir(), "c"), "--progress", "none")
	require.Equal(t, 0, code, built)
	code, mapped := runTerminal(t, env, "map", base)
	require.Equal(t, 0, code, mapped)
	block := func(s string) string {
		_, b, ok := strings.Cut(s, "per device (DRAM)\n")
		require.True(t, ok, s)
		b, _, _ = strings.Cut(b, "\n\n")
		return b
	}
	assert.Equal(t, block(mapped), block(built))
	assert.Contains(t, block(built), "32.0 GiB")
	assert.NotContains(t, built, "34358972160")
	// piped, the text format keeps exact integers, as map's does
	code, piped, _ := runApp(t, "cache", "build", base, "-o", filepath.Join(t.TempDir(), "c"), "--progress", "none")
	require.Equal(t, 0, code)
	assert.Regexp(t, `\n0 +\[0,0\] +\d+ +\d+ +\S+ +\d+ +\d{11}\n`, piped, "bytes and headroom as exact integers")
}

// TestProseWrapsAtSpaces: on a terminal the lines of text around the
// tables fit its width, broken at spaces (a terminal used to cut them
// inside words: "shap/e_changed", "hea/droom"); JSON and text output are
// left as they are.
func TestProseWrapsAtSpaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	for _, width := range []int{80, 100} {
		env := map[string]string{"COLUMNS": strconv.Itoa(width), "NO_COLOR": "1"}
		for _, args := range [][]string{
			{"diff", base, ft, "--progress", "none"},
			{"diff", base, ft, "--progress", "none", "--by", "layer"},
			{"map", base},
			{"cache", "build", base, "-o", filepath.Join(t.TempDir(), "c"), "--progress", "none"},
		} {
			_, out := runTerminal(t, env, args...)
			for _, l := range strings.Split(out, "\n") {
				if twwidth.Width(l) > width {
					assert.NotContains(t, strings.TrimSpace(l), " ", "%v at %d: a line of words wider than the terminal: %q", args, width, l)
				}
			}
			assert.NotRegexp(t, `(?m)(shap|hea)$`, out)
		}
		_, out := runTerminal(t, env, "diff", base, ft, "--progress", "none")
		assert.Contains(t, out, "summary: 106 identical, 4 changed, 7 requant_identical, 0 dtype_changed, 0")
		_, out = runTerminal(t, env, "map", base)
		assert.Contains(t, out, "headroom 32.0 GiB")
		_, out = runTerminal(t, env, "map", base, "--format", "json")
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "JSON on a terminal is not wrapped")
		_, out = runTerminal(t, env, "diff", base, ft, "--progress", "none", "--format", "text")
		assert.Contains(t, out, "summary: 106 identical, 4 changed, 7 requant_identical, 0 dtype_changed, 0 shape_changed, 7 only_in_base, 0 only_in_ft; differences found\n", "text is for tools")
	}
}

// TestExtractedSubsetVerifies: a directory extract of a selection records
// the selection in its config.json (ckpt_subset), and verify of it passes,
// expecting only the selection's tensors; a full extract records none.
func TestExtractedSubsetVerifies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _, err := synth.Pair(dir)
	require.NoError(t, err)
	for _, extra := range [][]string{nil, {"--dtype", "bf16"}, {"--exclude", "mtp.fc.*"}} {
		out := filepath.Join(t.TempDir(), "mtp")
		code, _, stderr := runApp(t, append([]string{"extract", base, "--match", "mtp.**", "-o", out + "/", "--progress", "none"}, extra...)...)
		require.Equal(t, 0, code, stderr)
		data, err := os.ReadFile(filepath.Join(out, "config.json"))
		require.NoError(t, err)
		var cfg map[string]any
		require.NoError(t, json.Unmarshal(data, &cfg))
		assert.NotNil(t, cfg["ckpt_subset"], "%v", extra)
		code, stdout, stderr := runApp(t, "verify", out)
		assert.Equal(t, 0, code, "%v: %s%s", extra, stdout, stderr)
		assert.Contains(t, stdout, "the config implies within the subset the config records (--match mtp.**")
	}
	out := filepath.Join(t.TempDir(), "all")
	code, _, stderr := runApp(t, "extract", base, "--match", "**", "-o", out+"/", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(filepath.Join(out, "config.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "ckpt_subset")
	code, stdout, _ := runApp(t, "verify", out)
	assert.Equal(t, 0, code, stdout)
}

// TestReportsNameVersionAndTime: contracts and the diff reports (JSON,
// Markdown, HTML) name the ckpt version and the time they were written
// (the tests' clock is fixed, so goldens stay the same).
func TestReportsNameVersionAndTime(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	const when = "2026-12-01T12:00:00Z"
	contract := filepath.Join(dir, "c.json")
	code, _, stderr := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, stderr)
	var doc struct {
		GeneratedBy ckpt.Generator `json:"generated_by"`
	}
	data, err := os.ReadFile(contract)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &doc))
	assert.Equal(t, ckpt.Generator{Tool: "ckpt", Version: Version, Time: when}, doc.GeneratedBy)
	// a contract that names its generator is still read
	code, _, stderr = runApp(t, "verify", base, "--against", contract)
	assert.Equal(t, 0, code, stderr)

	code, stdout, _ := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
	require.Equal(t, exitFailed, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Equal(t, ckpt.Generator{Tool: "ckpt", Version: Version, Time: when}, doc.GeneratedBy)
	code, stdout, _ = runApp(t, "diff", base, ft, "--format", "markdown", "--progress", "none")
	require.Equal(t, exitFailed, code)
	assert.Contains(t, stdout, "\n- generated by ckpt "+Version+", "+when+"\n")
	page := filepath.Join(dir, "r.html")
	code, _, _ = runApp(t, "diff", base, ft, "--format", "html", "-o", page, "--progress", "none")
	require.Equal(t, exitFailed, code)
	data, err = os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(data), `<dt>generated by</dt><dd id="generated-by">ckpt `+Version+", "+when+"</dd>")
	// text for tools carries no date
	code, stdout, _ = runApp(t, "diff", base, ft, "--format", "text", "--progress", "none")
	require.Equal(t, exitFailed, code)
	assert.NotContains(t, stdout, when)
}

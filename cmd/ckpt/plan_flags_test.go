package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanFlagErrors pins the words, the exit code and the order of the
// errors of the mapping-plan flags (--mesh, --set, --ignore, --rules,
// --device-dram) and of map's combinations of flags: which one a command
// line with several mistakes reports, and where (after --format and
// --progress, after the profile's own errors, before the source is read;
// for cache verify, only once the manifest says there is a cache).
func TestPlanFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, out, none := filepath.Join(dir, "src"), filepath.Join(dir, "out"), filepath.Join(dir, "none")
	require.NoError(t, synth.Write(src, synth.Small()))
	code, _, stderr := runApp(t, "cache", "build", src, "-o", out, "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, stderr)
	cases := [][]string{
		{"cache", "build", "-o", filepath.Join(src, "config.json"), "--progress", "none", src},
		{"map", "--ignore", "x", "--dump"},
		{"map", "--ignore", "x", "--list-profiles"},
		{"map", "--match", "x", "--against-cache", out, src},
		{"map", "--list-profiles", "--against-cache", out},
		{"map", "--match", "[", "--device-dram", "x", src},
		{"map", "--exclude", "[", "--device-dram", "x", src},
		{"map", "--device-dram", "0", "--ignore", "x", "--dump"},
		{"map", "--mesh", "9", none},
		{"map", "--mesh", "0x0", none},
		{"map", "--set", "x=maybe", none},
		{"map", "--set", "a=1", "--set", "a=0", none},
		{"map", "--set", "nope=1", none},
		{"map", "--ignore", "[", none},
		{"map", "--ignore", "nothing.here", src},
		{"map", "--rules", none, "--mesh", "9", "--set", "x", "--ignore", "[", none},
		{"map", "--profile", "nope", "--mesh", "9", none},
		{"map", "--device", "../x", "--mesh", "9", none},
		{"map", "--mesh", "9", "--set", "x", "--ignore", "[", none},
		{"map", "--mesh", "9", "--set", "x", none},
		{"map", "--mesh", "1x3", "--set", "x", none},
		{"map", "--mesh", "", "--set", "x", none},
		{"map", "--mesh", "9", "--set", "x", "--dump"},
		{"map", "--mesh", "9", "--set", "x", "--list-profiles", "--format", "json"},
		{"map", "--set", "x", none},
		{"map", "--set", "proj_1d_decode=false", none},
		{"cache", "build", "--mesh", "9", "--nan", "bogus", none},
		{"cache", "build", "--mesh", "9", "-o", out, "--nan", "bogus", none},
		{"cache", "build", "--mesh", "9", "-o", out, "--device-dram", "x", none},
		{"cache", "build", "--mesh", "9", "-o", out, "--format", "bogus", none},
		{"cache", "build", "--mesh", "9", "-o", out, "--progress", "none", none},
		{"cache", "build", "--set", "x", "-o", out, "--progress", "none", none},
		{"cache", "build", "--set", "x", "--ignore", "[", "-o", out, "--progress", "none", none},
		{"cache", "build", "--set", "x", "--rules", none, "-o", out, "--progress", "none", none},
		{"cache", "build", "--set", "nope=1", "-o", out, "--progress", "none", none},
		{"cache", "build", "--ignore", "nothing.here", "-o", out, "--progress", "none", src},
		{"cache", "verify", "--set", "x", "--ignore", "[", "--progress", "none", none},
		{"cache", "verify", "--set", "x", "--progress", "none", out},
		{"cache", "verify", "--set", "x", "--ignore", "[", "--progress", "none", out},
		{"cache", "verify", "--set", "nope=1", "--progress", "none", out},
		{"cache", "verify", "--set", "x", "--rules", none, "--progress", "none", out},
		{"cache", "verify", "--set", "x", "--source", none, "--progress", "none", out},
		{"cache", "verify", "--source", none, "--progress", "none", out},
		{"cache", "verify", "--min-mem", "x", "--set", "x", "--format", "bogus", out},
	}
	var b strings.Builder
	for _, args := range cases {
		code, stdout, stderr := runApp(t, args...)
		first, _, _ := strings.Cut(stdout, "\n")
		if code != 0 {
			first, _, _ = strings.Cut(stderr, "\n")
		}
		fmt.Fprintf(&b, "$ ckpt %s\nexit %d\n%s\n", strings.Join(args, " "), code, first)
	}
	got := strings.ReplaceAll(b.String(), dir, "$D")
	if os.Getenv("PLAN_FLAGS_DUMP") != "" {
		fmt.Print(got)
	}
	assert.Equal(t, wantPlanFlagErrors, got)
}

// wantPlanFlagErrors is what TestPlanFlagErrors prints: each command line,
// its exit code and the first line of its stderr (of stdout on success).
const wantPlanFlagErrors = `$ ckpt cache build -o $D/src/config.json --progress none $D/src
exit 2
ckpt: --out $D/src/config.json is a regular file, not a directory: refusing to replace it
$ ckpt map --ignore x --dump
exit 2
ckpt: --ignore leaves tensors out of the plan of SRC; it does not apply to --dump or --list-profiles
$ ckpt map --ignore x --list-profiles
exit 2
ckpt: --ignore leaves tensors out of the plan of SRC; it does not apply to --dump or --list-profiles
$ ckpt map --match x --against-cache $D/out $D/src
exit 2
ckpt: --match and --exclude select the targets map lists; they do not apply to --dump or --against-cache
$ ckpt map --list-profiles --against-cache $D/out
exit 2
ckpt: --list-profiles takes no SRC, --dump, --against-cache, --match or --exclude
$ ckpt map --match [ --device-dram x $D/src
exit 2
ckpt: invalid --match glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt map --exclude [ --device-dram x $D/src
exit 2
ckpt: invalid --exclude glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt map --device-dram 0 --ignore x --dump
exit 2
ckpt: --device-dram: want a positive size, got "0"
$ ckpt map --mesh 9 $D/none
exit 2
ckpt: mesh "9": want ROWSxCOLS, e.g. 1x2
$ ckpt map --mesh 0x0 $D/none
exit 2
ckpt: mesh "0x0": want ROWSxCOLS with 1..64 devices each, e.g. 1x2
$ ckpt map --set x=maybe $D/none
exit 2
ckpt: --set: setting "x=maybe": value "maybe" is not a boolean (true/false)
$ ckpt map --set a=1 --set a=0 $D/none
exit 2
ckpt: --set: setting "a" is given twice
$ ckpt map --set nope=1 $D/none
exit 2
ckpt: --set: profile qwen36-mtp@pr55548 has no variable "nope" (it has: proj_1d_decode, mlp_1d_decode, mlp_gateup_agmm_enabled, rope_permuted_enabled)
$ ckpt map --ignore [ $D/none
exit 2
ckpt: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt map --ignore nothing.here $D/src
exit 2
ckpt: no tensor matches --ignore "nothing.here" in $D/src (124 tensors), so it ignores nothing (` + "`" + `*` + "`" + ` stays inside one dotted segment, ` + "`" + `**` + "`" + ` crosses segments); the names present start with lm_head.**, model.language_model.**, model.visual.**, mtp.**
$ ckpt map --rules $D/none --mesh 9 --set x --ignore [ $D/none
exit 2
ckpt: opening rules: open $D/none: no such file or directory
$ ckpt map --profile nope --mesh 9 $D/none
exit 2
ckpt: unknown profile "nope" (built-in: qwen36-mtp@pr55548, qwen36@main-2026-10)
$ ckpt map --device ../x --mesh 9 $D/none
exit 2
ckpt: device folder "../x": want one path element such as P300 or P150x4
$ ckpt map --mesh 9 --set x --ignore [ $D/none
exit 2
ckpt: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt map --mesh 9 --set x $D/none
exit 2
ckpt: mesh "9": want ROWSxCOLS, e.g. 1x2
$ ckpt map --mesh 1x3 --set x $D/none
exit 2
ckpt: --set: setting "x": want NAME=VALUE
$ ckpt map --mesh  --set x $D/none
exit 2
ckpt: --set: setting "x": want NAME=VALUE
$ ckpt map --mesh 9 --set x --dump
exit 0
{
$ ckpt map --mesh 9 --set x --list-profiles --format json
exit 0
{
$ ckpt map --set x $D/none
exit 2
ckpt: --set: setting "x": want NAME=VALUE
$ ckpt map --set proj_1d_decode=false $D/none
exit 2
ckpt: opening $D/none: no such file or directory
$ ckpt cache build --mesh 9 --nan bogus $D/none
exit 2
ckpt: --nan: NaN style "bogus": want vector or scalar
$ ckpt cache build --mesh 9 -o $D/out --nan bogus $D/none
exit 2
ckpt: --nan: NaN style "bogus": want vector or scalar
$ ckpt cache build --mesh 9 -o $D/out --device-dram x $D/none
exit 2
ckpt: --device-dram: invalid size "x" (want a number of bytes with an optional unit: K, M, G, T are powers of 1000, Ki, Mi, Gi, Ti powers of 1024, e.g. 4G or 500MiB)
$ ckpt cache build --mesh 9 -o $D/out --format bogus $D/none
exit 2
ckpt: unknown --format "bogus" (want one of auto, table, text, json)
$ ckpt cache build --mesh 9 -o $D/out --progress none $D/none
exit 2
ckpt: mesh "9": want ROWSxCOLS, e.g. 1x2
$ ckpt cache build --set x -o $D/out --progress none $D/none
exit 2
ckpt: --set: setting "x": want NAME=VALUE
$ ckpt cache build --set x --ignore [ -o $D/out --progress none $D/none
exit 2
ckpt: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt cache build --set x --rules $D/none -o $D/out --progress none $D/none
exit 2
ckpt: opening rules: open $D/none: no such file or directory
$ ckpt cache build --set nope=1 -o $D/out --progress none $D/none
exit 2
ckpt: --set: profile qwen36-mtp@pr55548 has no variable "nope" (it has: proj_1d_decode, mlp_1d_decode, mlp_gateup_agmm_enabled, rope_permuted_enabled)
$ ckpt cache build --ignore nothing.here -o $D/out --progress none $D/src
exit 2
ckpt: no tensor matches --ignore "nothing.here" in $D/src (124 tensors), so it ignores nothing (` + "`" + `*` + "`" + ` stays inside one dotted segment, ` + "`" + `**` + "`" + ` crosses segments); the names present start with lm_head.**, model.language_model.**, model.visual.**, mtp.**
$ ckpt cache verify --set x --ignore [ --progress none $D/none
exit 1

$ ckpt cache verify --set x --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: --set: setting "x": want NAME=VALUE
$ ckpt cache verify --set x --ignore [ --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt cache verify --set nope=1 --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: --set: profile qwen36-mtp@pr55548 has no variable "nope" (it has: proj_1d_decode, mlp_1d_decode, mlp_gateup_agmm_enabled, rope_permuted_enabled)
$ ckpt cache verify --set x --rules $D/none --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: opening rules: open $D/none: no such file or directory
$ ckpt cache verify --set x --source $D/none --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: --set: setting "x": want NAME=VALUE
$ ckpt cache verify --source $D/none --progress none $D/out
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: opening $D/none: no such file or directory
$ ckpt cache verify --min-mem x --set x --format bogus $D/out
exit 2
ckpt: unknown --format "bogus" (want one of auto, table, text, json, jsonl, markdown)
`

// TestVerifyManifestErrors pins the errors of cache verify that name a
// flag for a manifest that lacks what the check needs: no source (pass
// --source), a profile that is not built in (pass --rules); for a cache
// folder and for the root holding it.
func TestVerifyManifestErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	edit := func(name string, change func(m map[string]any)) string {
		out := filepath.Join(dir, name)
		code, _, stderr := runApp(t, "cache", "build", src, "-o", out, "--progress", "none", "--fsync=false")
		require.Equal(t, 0, code, stderr)
		folders, err := filepath.Glob(filepath.Join(out, "*", "tensor_cache_*"))
		require.NoError(t, err)
		require.NotEmpty(t, folders)
		for _, f := range folders {
			p := filepath.Join(f, "manifest.json")
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			change(m)
			b, err = json.Marshal(m)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}
		return out
	}
	nosrc := edit("nosrc", func(m map[string]any) { delete(m, "source") })
	noprof := edit("noprof", func(m map[string]any) { m["profile"] = "nope" })
	var b strings.Builder
	for _, args := range [][]string{
		{"cache", "verify", nosrc},
		{"cache", "verify", nosrc + "/P300/tensor_cache_bfp8_mesh1x2"},
		{"cache", "verify", noprof},
		{"cache", "verify", noprof + "/P300/tensor_cache_bfp8_mesh1x2"},
	} {
		code, _, stderr := runApp(t, args...)
		fmt.Fprintf(&b, "$ ckpt %s\nexit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	assert.Equal(t, `$ ckpt cache verify $D/nosrc
exit 2
ckpt: $D/nosrc/P300/tensor_cache_bfp8: the manifest of $D/nosrc/P300/tensor_cache_bfp8 names no source: pass --source SRC (the checkpoint the cache is for)
$ ckpt cache verify $D/nosrc/P300/tensor_cache_bfp8_mesh1x2
exit 2
ckpt: $D/nosrc/P300/tensor_cache_bfp8_mesh1x2: the manifest of $D/nosrc/P300/tensor_cache_bfp8_mesh1x2 names no source: pass --source SRC (the checkpoint the cache is for)
$ ckpt cache verify $D/noprof
exit 2
ckpt: $D/noprof/P300/tensor_cache_bfp8: the manifest names profile "nope", which is not built in: pass the profile with --rules
$ ckpt cache verify $D/noprof/P300/tensor_cache_bfp8_mesh1x2
exit 2
ckpt: $D/noprof/P300/tensor_cache_bfp8_mesh1x2: the manifest names profile "nope", which is not built in: pass the profile with --rules
`, strings.ReplaceAll(b.String(), dir, "$D"))
}

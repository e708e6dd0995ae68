package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// TestVerifyPlanErrorOrder pins the order of cache verify's errors where
// the plan is made, as mapping.Resolve gave them before the plan flags
// were parsed at the edge (4ede590^): the profile's, then --ignore's,
// then the manifest's mesh, then --set's.
func TestVerifyPlanErrorOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "out")
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
		m["mesh"] = "bogus"
		b, err = json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	text := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	var b strings.Builder
	for _, args := range [][]string{
		{"cache", "verify", text, "--source", src},
		{"cache", "verify", text, "--source", src, "--set", "x"},
		{"cache", "verify", text, "--source", src, "--ignore", "["},
		{"cache", "verify", text, "--source", src, "--set", "x", "--ignore", "["},
		{"cache", "verify", text, "--source", src, "--set", "x", "--rules", filepath.Join(dir, "none.json")},
		{"cache", "verify", out, "--source", src, "--set", "x"},
	} {
		code, _, stderr := runApp(t, append(args, "--progress", "none")...)
		fmt.Fprintf(&b, "$ ckpt %s\nexit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	got := strings.ReplaceAll(b.String(), dir, "$D")
	if os.Getenv("ORDER_DUMP") != "" {
		fmt.Print(got)
	}
	assert.Equal(t, wantVerifyPlanErrorOrder, got)
}

// wantVerifyPlanErrorOrder is what TestVerifyPlanErrorOrder prints (the
// output of 4ede590^, before PlanErr).
const wantVerifyPlanErrorOrder = `$ ckpt cache verify $D/out/P300/tensor_cache_bfp8_mesh1x2 --source $D/src
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8_mesh1x2: mesh "bogus": want ROWSxCOLS, e.g. 1x2
$ ckpt cache verify $D/out/P300/tensor_cache_bfp8_mesh1x2 --source $D/src --set x
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8_mesh1x2: mesh "bogus": want ROWSxCOLS, e.g. 1x2
$ ckpt cache verify $D/out/P300/tensor_cache_bfp8_mesh1x2 --source $D/src --ignore [
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8_mesh1x2: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt cache verify $D/out/P300/tensor_cache_bfp8_mesh1x2 --source $D/src --set x --ignore [
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8_mesh1x2: invalid --ignore glob "[": glob: syntax error at 1: unexpected end of input
$ ckpt cache verify $D/out/P300/tensor_cache_bfp8_mesh1x2 --source $D/src --set x --rules $D/none.json
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8_mesh1x2: opening rules: open $D/none.json: no such file or directory
$ ckpt cache verify $D/out --source $D/src --set x
exit 2
ckpt: $D/out/P300/tensor_cache_bfp8: mesh "bogus": want ROWSxCOLS, e.g. 1x2
`

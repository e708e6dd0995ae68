package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTerminalTableGoldensMore renders the tables of the remaining
// commands at 80, 100 and 160 columns, as TestTerminalTableGoldens does:
// cache compare of two caches that differ (a data difference among them),
// cache verify of a damaged cache, cache identify of an exact match with a
// switch set and of a closest-only cache, extract, map --against-cache with
// differences and plain verify with findings. Each line fits its width,
// nothing is cut and the output is testdata/term/<command>_<width>.golden.
func TestTerminalTableGoldensMore(t *testing.T) {
	t.Parallel()
	// Paths appear in the tables (and wrap there): every file is under a
	// directory whose name has the same length on every run.
	dir := fixedTempDir(t)
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	build := func(name string, args ...string) string {
		out := filepath.Join(dir, name)
		code, _, stderr := runApp(t, append([]string{"cache", "build", src, "--out", out, "--progress", "none", "--fsync=false"}, args...)...)
		require.Equal(t, 0, code, stderr)
		return out
	}
	ours, stack := build("ours"), filepath.Join(dir, "stack")
	require.NoError(t, cachetest.CopyTree(ours, stack))
	oursDir := filepath.Join(ours, "P300", "tensor_cache_bfp8_mesh1x2")
	stackDir := filepath.Join(stack, "P300", "tensor_cache_bfp8_mesh1x2")
	_, plan := cachetest.OpenPlan(t, src)
	_, err := cachetest.Inject(stackDir, plan)
	require.NoError(t, err)
	proj := build("proj", "--set", "proj_1d_decode=false")
	closest := build("closest", "--profile", "qwen36@main-2026-10")
	folder := filepath.Join(closest, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.Remove(filepath.Join(folder, "manifest.json")))
	files, err := filepath.Glob(filepath.Join(folder, "layers.0", "tp", "out.colpar_*.tensorbin"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.NoError(t, os.Remove(files[0]))

	// A checkpoint with findings: FP8 NaN codes, a negative scale, an Inf.
	bad := filepath.Join(dir, "bad")
	require.NoError(t, synth.Write(bad, synth.Small()))
	editTensor(t, bad, downProj, func(mt *ckpt.MemTensor) { mt.Data[5], mt.Data[1000] = 0x7f, 0xff })
	editTensor(t, bad, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) { copy(mt.Data, bf16Bits(-0.5)) })
	editTensor(t, bad, lm+"layers.2.post_attention_layernorm.weight", func(mt *ckpt.MemTensor) { copy(mt.Data[6:], bf16Bits(float32(math.Inf(1)))) })

	same := os.TempDir() == "/tmp" // the goldens' paths wrap where /tmp/ckpt-term-XXXXXXXX/ does
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"cache_compare", []string{"cache", "compare", oursDir, stackDir, "--progress", "none"}, 1},
		{"cache_verify", []string{"cache", "verify", stack, "--source", src, "--progress", "none"}, 1},
		{"cache_identify", []string{"cache", "identify", proj, "--source", src, "--progress", "none"}, 0},
		{"cache_identify_closest", []string{"cache", "identify", closest, "--source", src, "--progress", "none"}, 1},
		{"extract", []string{"extract", src, "--match", "mtp.**", "--dtype", "bf16", "--out", filepath.Join(dir, "mtp.safetensors"), "--progress", "none"}, 0},
		{"map_against_cache", []string{"map", src, "--against-cache", stack}, 1},
		{"verify_plain", []string{"verify", bad, "--read-data", "--progress", "none"}, 1},
	} {
		for _, width := range []int{80, 100, 160} {
			name := fmt.Sprintf("%s_%d", c.name, width)
			if c.name == "extract" {
				require.NoError(t, os.RemoveAll(filepath.Join(dir, "mtp.safetensors")))
			}
			code, out := runTerminal(t, map[string]string{"COLUMNS": fmt.Sprint(width), "NO_COLOR": "1"}, c.args...)
			require.Equal(t, c.code, code, "%s:\n%s", name, out)
			lines := tableLines(out)
			require.NotEmpty(t, lines, name)
			for _, l := range lines {
				assert.LessOrEqual(t, twwidth.Width(l), width, "%s: %q", name, l)
			}
			assert.NotContains(t, out, "…", "%s: nothing is cut", name)
			if same {
				golden(t, filepath.Join("term", name+".golden"), tempName.ReplaceAllString(out, "ckpt-term-XXXXXXXX"))
			}
		}
	}
}

// tempName is the name of a fixedTempDir, wherever a table wraps a path.
var tempName = regexp.MustCompile(`ckpt-term-[0-9a-f]{8}`)

// fixedTempDir makes a directory /tmp/ckpt-term-XXXXXXXX (8 hex digits;
// under $TMPDIR when set) removed when the test ends.
func fixedTempDir(t *testing.T) string {
	t.Helper()
	for {
		d := filepath.Join(os.TempDir(), fmt.Sprintf("ckpt-term-%08x", rand.Uint32()))
		err := os.Mkdir(d, 0o755)
		if os.IsExist(err) {
			continue
		}
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
}

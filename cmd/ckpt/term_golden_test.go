package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTerminalTableGoldens renders every table of diff, inspect, map,
// cache ls and verify on the demo pair at 80, 100 and 160 columns (the
// table format of a terminal, without colour): each fits its width, no
// tensor name is cut (no "…" anywhere), rows are grouped under their
// layer, and the output is the golden testdata/term/<command>_<width>.
func TestTerminalTableGoldens(t *testing.T) {
	t.Parallel()
	// A path of a fixed length (prose lines wrap at the width), shown as DIR.
	dir := fixedTempDir(t)
	same := os.TempDir() == "/tmp"
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	cacheDir := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "--out", cacheDir, "--mesh", "1x2", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	contract := filepath.Join(dir, "base.contract.json")
	code, _, stderr = runApp(t, "contract", base, "--out", contract)
	require.Equal(t, 0, code, stderr)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"diff", []string{"diff", base, ft, "--progress", "none"}, 1},
		{"diff_layer", []string{"diff", base, ft, "--progress", "none", "--by", "layer"}, 1},
		{"inspect", []string{"inspect", base}, 0},
		{"map", []string{"map", base, "--mesh", "1x2"}, 0},
		{"cache_ls", []string{"cache", "ls", cacheDir}, 0},
		{"verify", []string{"verify", ft, "--against", contract}, 1},
	} {
		for _, width := range []int{80, 100, 160} {
			name := fmt.Sprintf("%s_%d", c.name, width)
			code, out := runTerminal(t, map[string]string{"COLUMNS": fmt.Sprint(width), "NO_COLOR": "1"}, c.args...)
			require.Equal(t, c.code, code, "%s:\n%s", name, out)
			out = strings.ReplaceAll(out, dir, "DIR")
			lines := tableLines(out)
			require.NotEmpty(t, lines, name)
			for _, l := range lines {
				assert.LessOrEqual(t, twwidth.Width(l), width, "%s: %q", name, l)
			}
			assert.NotContains(t, out, "…", "%s: nothing is cut", name)
			if same {
				golden(t, filepath.Join("term", name+".golden"), out)
			}
		}
	}
}

// TestDiffTableNamesWhole is issue #25's "done when": at 100 and 160
// columns the demo diff fits and its rows show what distinguishes each
// tensor under its layer heading.
func TestDiffTableNamesWhole(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	for _, width := range []int{100, 160} {
		_, out := runTerminal(t, map[string]string{"COLUMNS": fmt.Sprint(width), "NO_COLOR": "1"}, "diff", base, ft, "--progress", "none")
		for _, l := range tableLines(out) {
			assert.LessOrEqual(t, twwidth.Width(l), width, "%q", l)
		}
		assert.NotContains(t, out, "…")
		assert.Regexp(t, `(?m)^│ model\.language_model\.layers\.1\. +│$`, out, "a layer heading spans the table")
		assert.Regexp(t, `(?m)^│ mlp\.down_proj\.weight_scale_inv +│ changed `, out, "the row shows the rest of the name")
		assert.Regexp(t, `(?m)^│ mtp\.layers\.0\. +│$`, out)
		assert.Regexp(t, `(?m)^│ self_attn\.k_proj\.weight_scale_inv +│ only_in_base `, out)
	}
	_, out := runTerminal(t, map[string]string{"COLUMNS": "100", "NO_COLOR": "1"}, "diff", base, ft, "--progress", "none")
	assert.Contains(t, out, "(not shown at 100 columns: changed, max_abs_diff, cosine, note;", "dropped columns are named: the mostly empty note first, not base and ft")
	_, out = runTerminal(t, map[string]string{"COLUMNS": "160", "NO_COLOR": "1"}, "diff", base, ft, "--progress", "none")
	assert.NotContains(t, out, "not shown", "at 160 columns every column fits")
	assert.Contains(t, out, "│ max_abs_diff │")
}

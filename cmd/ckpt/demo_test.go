package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runApp(t, "demo", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "==> The MTP head of the base")
	assert.Contains(t, stdout, "mtp.layers.0.self_attn.q_proj.weight")
	assert.Contains(t, stdout, "F8_E4M3")
	assert.Contains(t, stdout, "mtp.*")
	assert.NotContains(t, stdout, "(exit 2)")
	for _, p := range []string{"base/config.json", "ft/model.safetensors.index.json"} {
		_, err := os.Stat(filepath.Join(dir, p))
		assert.NoError(t, err, p)
	}
}

// TestDemoKeepsFiles runs the demo as a process: its directory outlives
// it, every printed command works when pasted into a shell afterwards,
// and the last lines say how to remove it; --clean removes it.
func TestDemoKeepsFiles(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	bin := ckptBinary(t)
	env := []string{"TMPDIR=" + tmp}
	code, stdout, stderr := runBin(t, env, "demo")
	require.Equal(t, 0, code, stderr)
	dirs, err := filepath.Glob(filepath.Join(tmp, "ckpt-demo-*"))
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	require.Contains(t, stdout, "The demo files stay in "+dirs[0])
	require.Contains(t, stdout, "rm -rf '"+dirs[0]+"'")
	var cmds []string
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "$ ckpt "); ok {
			cmds = append(cmds, rest)
		}
	}
	require.GreaterOrEqual(t, len(cmds), 10)
	want := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^\$ ckpt (.*)\n(?:.*\n)*?\(exit (\d)\)$`).FindAllStringSubmatch(stdout, -1) {
		want[m[1]], _ = strconv.Atoi(m[2])
	}
	for _, c := range cmds {
		// Steps that write (contract -o, extract, cache build) are
		// re-runnable too; run each through a shell as a user would.
		require.Contains(t, want, c)
		sh := exec.Command("sh", "-c", "'"+bin+"' "+c)
		out, err := sh.CombinedOutput()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, want[c], got, "after the demo: ckpt %s\n%s", c, out)
	}

	clean := t.TempDir()
	code, stdout, stderr = runBin(t, []string{"TMPDIR=" + clean}, "demo", "--clean")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "(--clean)")
	left, err := os.ReadDir(clean)
	require.NoError(t, err)
	require.Empty(t, left)
	code, _, _ = runBin(t, nil, "demo", "--clean", "--dir", clean)
	require.Equal(t, 2, code)
}

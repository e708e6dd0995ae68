package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runTerminal runs the command line as if stdout were a terminal, with the
// given environment.
func runTerminal(t *testing.T, env map[string]string, args ...string) (code int, stdout string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &App{Out: &out, Err: &errb, Terminal: true, Getenv: func(k string) string { return env[k] }, Now: fixedNow}
	code = app.Run(context.Background(), args)
	return code, out.String()
}

// tableLines returns the lines of the tables in s, without colour codes.
func tableLines(s string) []string {
	s = regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(s, "")
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(l, "│") || strings.HasPrefix(l, "┌") || strings.HasPrefix(l, "└") {
			out = append(out, l)
		}
	}
	return out
}

func TestTerminalTables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	warned := copyDir(t, ft) // one warning: fp8.config
	editJSON(t, filepath.Join(warned, "config.json"), func(m map[string]any) {
		m["quantization_config"].(map[string]any)["activation_scheme"] = "static"
	})
	for _, c := range []struct {
		args  []string
		width string
		color string // a coloured word expected
	}{
		{[]string{"verify", base}, "100", "\x1b[32mpass\x1b[0m"},
		{[]string{"verify", warned}, "80", "\x1b[33mwarn\x1b[0m"},
		{[]string{"diff", base, ft, "--progress", "none"}, "160", "\x1b[36mrequant_identical\x1b[0m"},
		{[]string{"map", base, "--mesh", "1x2"}, "160", ""},
		{[]string{"inspect", base}, "120", ""},
	} {
		name := c.args[0] + "@" + c.width
		code, out := runTerminal(t, map[string]string{"COLUMNS": c.width}, c.args...)
		assert.Contains(t, []int{0, 1}, code, name)
		width, err := strconv.Atoi(c.width)
		require.NoError(t, err)
		lines := tableLines(out)
		require.NotEmpty(t, lines, name)
		for _, l := range lines {
			assert.LessOrEqual(t, twwidth.Width(l), width, "%s: %q", name, l)
		}
		if c.color != "" {
			assert.Contains(t, out, c.color, name)
		}
		_, plain := runTerminal(t, map[string]string{"COLUMNS": c.width, "NO_COLOR": "1"}, c.args...)
		assert.NotContains(t, plain, "\x1b", "%s with NO_COLOR", name)
	}
	// Sizes in binary units in a terminal table, exact digits when piped.
	_, out := runTerminal(t, map[string]string{"COLUMNS": "200"}, "inspect", base, "--summary")
	assert.Regexp(t, `│ +[0-9.]+ KiB │`, out)
	code, piped, _ := runApp(t, "inspect", base, "--summary")
	require.Equal(t, 0, code)
	assert.NotContains(t, piped, "KiB │")
	assert.NotContains(t, piped, "\x1b")
}

// TestPaletteCoversVocabulary keeps the colours in step with the statuses
// and relations the libraries define.
func TestPaletteCoversVocabulary(t *testing.T) {
	t.Parallel()
	g := &output.Grid{Header: []string{"word"}, Color: map[int]bool{0: true}}
	for _, s := range []ckpt.Status{ckpt.Pass, ckpt.Warn, ckpt.Fail, ckpt.Skip} {
		g.Rows = append(g.Rows, []string{string(s)})
	}
	for _, r := range []diff.Relation{diff.Identical, diff.SameHeader, diff.Changed, diff.RequantIdentical, diff.DTypeChanged, diff.ShapeChanged, diff.OnlyInBase, diff.OnlyInFT} {
		g.Rows = append(g.Rows, []string{string(r)})
	}
	var b bytes.Buffer
	require.NoError(t, g.Render(&output.Term{Writer: &b, Color: true}, output.Table))
	for _, r := range g.Rows {
		assert.Regexp(t, `\x1b\[[0-9;]+m`+r[0]+`\x1b\[0m`, b.String(), "%s has a colour", r[0])
	}
}

// TestPipedTextIsMachineFriendly checks what awk, cut and sort -n see.
func TestPipedTextIsMachineFriendly(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	grouped := regexp.MustCompile(`(?m)(^|[ (])\d{1,3}(,\d{3})+([ )]|$)`) // not inside a shape
	spacedShape := regexp.MustCompile(`\[\d+, \d+`)
	for _, args := range [][]string{
		{"inspect", base},
		{"diff", base, ft, "--progress", "none"},
		{"map", base, "--mesh", "1x2"},
	} {
		_, out, _ := runApp(t, args...)
		require.NotEmpty(t, out, args[0])
		assert.NotRegexp(t, grouped, out, "%s: no thousands separators", args[0])
		assert.NotRegexp(t, spacedShape, tableRowsOnly(out), "%s: shapes are one field", args[0])
		assert.NotContains(t, out, "\x1b", args[0])
		assert.NotContains(t, out, "│", args[0])
	}
	_, out, _ := runApp(t, "inspect", base, "--match", "model.language_model.embed_tokens.weight")
	fields := strings.Fields(strings.Split(out, "\n")[1])
	require.Len(t, fields, 6, "one field per column: %q", out)
	assert.Regexp(t, `^\[\d+,\d+\]$`, fields[2])
	assert.Regexp(t, `^\d+$`, fields[3])
	assert.Regexp(t, `^\d+$`, fields[4])
}

// tableRowsOnly drops the free-text lines (config differences quote
// library messages) and keeps the tabular ones.
func tableRowsOnly(s string) string {
	var keep []string
	for l := range strings.SplitSeq(s, "\n") {
		if !strings.HasPrefix(l, "  ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

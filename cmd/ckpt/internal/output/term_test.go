package output

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestForTerminal(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	assert.Same(t, &b, ForTerminal(&b, false, env("COLUMNS", "100")), "not a terminal: unchanged")
	for _, c := range []struct {
		name  string
		env   func(string) string
		width int
		color bool
	}{
		{"defaults", env(), 80, true},
		{"COLUMNS", env("COLUMNS", "160"), 160, true},
		{"bad COLUMNS", env("COLUMNS", "wide"), 80, true},
		{"NO_COLOR", env("NO_COLOR", "1"), 80, false},
		{"empty NO_COLOR", env("NO_COLOR", ""), 80, true},
		{"dumb terminal", env("TERM", "dumb", "COLUMNS", "40"), 40, false},
		{"nil getenv", nil, 80, true},
	} {
		tm := TermOf(ForTerminal(&b, true, c.env))
		require.NotNil(t, tm, c.name)
		assert.Equal(t, c.width, tm.Width, c.name)
		assert.Equal(t, c.color, tm.Color, c.name)
		assert.Same(t, tm, ForTerminal(tm, true, env("COLUMNS", "10")), "already a terminal: kept")
	}
	assert.Nil(t, TermOf(&b))
}

// verifyGrid looks like verify's findings: short statuses, ids, long
// messages.
func verifyGrid() *Grid {
	g := &Grid{Header: []string{"status", "check", "message"}, Color: map[int]bool{0: true}}
	for i, st := range []string{"pass", "fail", "warn", "skip"} {
		g.Rows = append(g.Rows, []string{st, fmt.Sprintf("fp8.scale_shape.%d", i),
			"tensor model.language_model.layers.12.linear_attn.in_proj_qkvz.weight_scale_inv has shape [48,40], expected [48,41] from quantization_config.weight_block_size [128,128] and the weight's shape [6144,5120]"})
	}
	return g
}

// mapGrid looks like map's plan: long names, short columns, a prose list.
func mapGrid() *Grid {
	g := &Grid{Header: []string{"target", "dtype", "layout", "placement", "shape", "per device", "memory", "sources"}}
	for l := range 3 {
		g.Rows = append(g.Rows, []string{
			fmt.Sprintf("layers.%d/tp/qkvzab.dramshard.model.language_model.layers.%d.linear_attn", l, l), "bfloat8_b", "TILE", "shard 1", "[5120,16384]", "[5120,8192]",
			"dram width-sharded [5120,128]",
			fmt.Sprintf("model.language_model.layers.%d.linear_attn.in_proj_qkv.weight + model.language_model.layers.%d.linear_attn.in_proj_z.weight (+2 scales)", l, l),
		})
	}
	return g
}

func render(t *testing.T, g *Grid, w *Term, format string) string {
	t.Helper()
	var b bytes.Buffer
	w.Writer = &b
	require.NoError(t, g.Render(w, format))
	return b.String()
}

func maxLineWidth(s string) int {
	m := 0
	for l := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		m = max(m, twwidth.Width(l))
	}
	return m
}

func TestTableFitsWidth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		g      *Grid
		widths []int
	}{
		{verifyGrid(), []int{50, 80, 100, 160}},
		{mapGrid(), []int{120, 160, 200}}, // eight columns: below 120 their minimums do not fit
	} {
		for _, width := range c.widths {
			out := render(t, c.g, &Term{Width: width}, Table)
			assert.LessOrEqual(t, maxLineWidth(out), width, "%s at %d columns:\n%s", c.g.Header[0], width, out)
			assert.GreaterOrEqual(t, maxLineWidth(out), width*9/10, "the width is used, not wasted (wrapping at spaces may leave a little)")
		}
	}
	narrow := render(t, mapGrid(), &Term{Width: 60}, Table)
	assert.Contains(t, narrow, "[5120,16384]", "too narrow: columns at their minimums, numbers and shapes whole")
	// Messages wrap inside their cell: every word is still there.
	out := render(t, verifyGrid(), &Term{Width: 80}, Table)
	for _, word := range strings.Fields(verifyGrid().Rows[0][2]) {
		if len(word) < 30 {
			assert.Contains(t, out, word)
		}
	}
	assert.Contains(t, out, "fp8.scale_shape.1", "short ids are not shortened")
	// Long names keep their start and end around an ellipsis.
	out = render(t, mapGrid(), &Term{Width: 160}, Table)
	assert.Contains(t, out, "layers.1/tp/qkvz")
	assert.Contains(t, out, "…")
	assert.Contains(t, out, "s.1.linear_attn")
	assert.Contains(t, out, "bfloat8_b")
	assert.Contains(t, out, "[5120,16384]", "shapes are never cut")
	// A table that fits is left alone, and text is never fitted.
	g := &Grid{Header: []string{"a", "b"}, Rows: [][]string{{"x y", "1"}}}
	assert.Equal(t, render(t, g, &Term{}, Table), render(t, g, &Term{Width: 200}, Table))
	text := render(t, verifyGrid(), &Term{Width: 40}, Text)
	assert.Contains(t, text, verifyGrid().Rows[0][2], "text keeps whole messages")
}

func TestTableNumbersForPeople(t *testing.T) {
	t.Parallel()
	g := &Grid{Header: []string{"dtype", "tensors", "bytes"}, Right: map[int]bool{1: true, 2: true}, Sizes: map[int]bool{2: true},
		Rows: [][]string{{"F8_E4M3", Int(1606), Int(30866663264)}, {"BF16", "-", Int(512)}}}
	out := render(t, g, &Term{Width: 80}, Table)
	assert.Contains(t, out, "1,606")
	assert.Contains(t, out, "28.7 GiB")
	assert.Contains(t, out, "512 B")
	assert.Contains(t, out, " - ")
	for _, f := range []string{Text, CSV, Markdown} {
		out := render(t, g, &Term{Width: 80}, f)
		assert.Contains(t, out, "30866663264", f)
		assert.Contains(t, out, "1606", f)
		assert.NotContains(t, out, "GiB", f)
		assert.NotContains(t, out, "1,606", f)
	}
}

func TestTableColour(t *testing.T) {
	t.Parallel()
	out := render(t, verifyGrid(), &Term{Width: 200, Color: true}, Table)
	assert.Contains(t, out, "\x1b[1;31mfail\x1b[0m")
	assert.Contains(t, out, "\x1b[32mpass\x1b[0m")
	assert.Contains(t, out, "\x1b[33mwarn\x1b[0m")
	assert.Contains(t, out, "\x1b[2mskip\x1b[0m")
	assert.Equal(t, 1, strings.Count(out, "\x1b[1;31m"), "only the status column is coloured")
	assert.Equal(t, maxLineWidth(render(t, verifyGrid(), &Term{Width: 200}, Table)), maxLineWidth(out), "colour codes take no columns")

	d := &Grid{Header: []string{"name", "relation"}, Color: map[int]bool{1: true},
		Rows: [][]string{{"a", "changed"}, {"b", "only_in_base"}, {"c", "requant_identical"}, {"d", "unknown_word"}}}
	out = render(t, d, &Term{Color: true}, Table)
	assert.Contains(t, out, "\x1b[33mchanged\x1b[0m")
	assert.Contains(t, out, "\x1b[31monly_in_base\x1b[0m")
	assert.Contains(t, out, "\x1b[36mrequant_identical\x1b[0m")
	assert.Contains(t, out, " unknown_word ")

	for name, out := range map[string]string{
		"no colour": render(t, verifyGrid(), &Term{Width: 200}, Table),
		"text":      render(t, verifyGrid(), &Term{Width: 200, Color: true}, Text),
		"csv":       render(t, verifyGrid(), &Term{Width: 200, Color: true}, CSV),
		"markdown":  render(t, verifyGrid(), &Term{Width: 200, Color: true}, Markdown),
		"not terminal": func() string {
			var b bytes.Buffer
			require.NoError(t, verifyGrid().Render(&b, Table))
			return b.String()
		}(),
	} {
		assert.NotContains(t, out, "\x1b", name)
	}
}

func TestEllipsizeWrap(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"model.language_model.layers.12.mlp.down_proj.weight", 20, "model.lan…roj.weight"},
		{"short", 20, "short"},
		{"abcdef", 1, "…"},
		{"abcdef", 2, "…f"},
	} {
		got := ellipsize(c.in, c.w)
		assert.Equal(t, c.want, got)
		assert.LessOrEqual(t, twwidth.Width(got), max(c.w, 1))
	}
	assert.Equal(t, "one two\nthree\nfour", wrap("one two three four", 7))
	assert.Equal(t, "abcd\nefgh\nij k", wrap("abcdefghij k", 4), "long words are cut")
	assert.Equal(t, "tensor\nmodel.language_model.\nlayers.3.mlp.down_proj.\nweight (+1 scales)",
		wrap("tensor model.language_model.layers.3.mlp.down_proj.weight (+1 scales)", 24), "names break after dots and underscores")
	assert.Equal(t, "a.\nbcdefgh\nij", wrap("a.bcdefghij", 7), "a part longer than the line is cut")
	assert.Equal(t, "a\nb", wrap("a\nb", 10), "line breaks kept")
}

func TestShrink(t *testing.T) {
	t.Parallel()
	w := []int{4, 30, 100}
	shrink(w, []int{1, 2}, []int{0, 10, 10}, 64)
	assert.Equal(t, []int{4, 30, 30}, w, "the widest column shrinks first")
	w = []int{4, 30, 100}
	shrink(w, []int{1, 2}, []int{0, 10, 10}, 20)
	assert.Equal(t, []int{4, 10, 10}, w, "not below the minimums")
	w = []int{4, 30, 100}
	shrink(w, []int{1, 2}, []int{0, 10, 10}, 65)
	assert.Equal(t, 65, w[0]+w[1]+w[2], "the cap's remainder is handed out")
}

package output

import (
	"bytes"
	"fmt"
	"io"
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
		{verifyGrid(), []int{60, 80, 100, 160}}, // below 60 the words of a message do not fit whole
		{mapGrid(), []int{120, 160, 200}},       // eight columns: below 120 their minimums do not fit
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
	// Long names are never cut: nothing loses its middle to an ellipsis.
	for _, width := range []int{60, 120, 160} {
		out = render(t, mapGrid(), &Term{Width: width}, Table)
		assert.NotContains(t, out, "…", width)
		assert.Contains(t, out, "│ layers.1/tp/", "%d: wrapped after its separators", width)
	}
	out = render(t, mapGrid(), &Term{Width: 160}, Table)
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

func TestWrap(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "one two\nthree\nfour", wrap("one two three four", 7))
	assert.Equal(t, "abcd\nefgh\nij k", wrap("abcdefghij k", 4), "long words are cut")
	assert.Equal(t, "tensor\nmodel.language_model.\nlayers.3.mlp.down_proj.\nweight (+1 scales)",
		wrap("tensor model.language_model.layers.3.mlp.down_proj.weight (+1 scales)", 24), "names break after dots and underscores")
	assert.Equal(t, "a.\nbcdefgh\nij", wrap("a.bcdefghij", 7), "a part longer than the line is cut")
	assert.Equal(t, "a\nb", wrap("a\nb", 10), "line breaks kept")
}

func TestWrapParts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		w    int
		want string
	}{
		{"DRAM Interleaved", 8, "DRAM\nInterleaved"},       // never mid-word: the word keeps a line wider than w
		{"replicate,shard(2)", 12, "replicate,\nshard(2)"}, // a list breaks after its commas
		{"model.language_model.layers.0.mlp.up_proj.weight (+1 scales)", 30, // names after their dots
			"model.language_model.layers.0.\nmlp.up_proj.weight (+1 scales)"},
		{"in_proj_qkv", 4, "in_proj_qkv"}, // never after an underscore
		{"a b\nc", 10, "a b\nc"},
	} {
		assert.Equal(t, c.want, wrapParts(c.in, c.w), c.in)
	}
	assert.Equal(t, 11, longestPart("DRAM Interleaved"))
	assert.Equal(t, 15, longestPart("model.language_model.layers.0.mlp.up_proj.weight"), "a long name breaks after its dots")
	assert.Equal(t, 18, longestPart("replicate,shard(2)"), "a short word stays whole")
	assert.Equal(t, 18, longestPart("input_layernorm.weight_distributed"), "a tensor name keeps pieces up to 20 columns")
	assert.Equal(t, 12, longestPart("input_layernorm.weight_distributed_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin"),
		"a file name's pieces over 12 columns break after '_'")
	assert.Equal(t, "tp/wqkv_fused_\nqkvg.il_dtype_\nBFLOAT8_B_\nlayout_TILE.\ntensorbin",
		wrapParts("tp/wqkv_fused_qkvg.il_dtype_BFLOAT8_B_layout_TILE.tensorbin", 16))
}

func TestLayerPrefix(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"model.language_model.layers.12.mlp.down_proj.weight": "model.language_model.layers.12.",
		"mtp.layers.0.self_attn.q_proj.weight":                "mtp.layers.0.",
		"model.visual.blocks.3.attn.qkv.bias":                 "model.visual.blocks.3.",
		"P300/cache/layers.0/tp/out":                          "P300/cache/layers.0/",
		"layers.0.input_layernorm.weight":                     "layers.0.",
		"mtp.fc.weight":                                       "",
		"lm_head.weight":                                      "",
		"model.visual.merger.linear_fc1.weight":               "",
		"7.weight":                                            "", // a leading number is not a layer
		"layers.3":                                            "", // nothing after it
	} {
		assert.Equal(t, want, LayerPrefix(in), in)
	}
}

// diffGrid looks like diff's tensor table.
func diffGrid() *Grid {
	g := &Grid{Header: []string{"name", "relation", "base", "ft", "shape", "rel_l2", "cosine", "note"},
		Right: map[int]bool{5: true, 6: true}, Color: map[int]bool{1: true},
		Names: map[int]bool{0: true}, Group: true, Drop: map[int]int{2: 3, 3: 3, 4: 2, 5: 1, 6: 4, 7: 1}}
	for _, n := range []string{
		"lm_head.weight",
		"model.language_model.layers.0.linear_attn.in_proj_qkv.weight",
		"model.language_model.layers.0.linear_attn.in_proj_qkv.weight_scale_inv",
		"model.language_model.layers.1.mlp.down_proj.weight",
		"model.language_model.norm.weight",
		"mtp.fc.weight",
		"mtp.layers.0.mlp.up_proj.weight",
		"mtp.layers.0.mlp.up_proj.weight_scale_inv",
		"mtp.norm.weight",
		"mtp.pre_fc_norm_hidden.weight",
	} {
		g.Rows = append(g.Rows, []string{n, "changed", "F8_E4M3", "BF16", "[6144,5120]", "0.0218", "0.999764", "re-quantises exactly"})
	}
	return g
}

func TestTableGroups(t *testing.T) {
	t.Parallel()
	out := render(t, diffGrid(), &Term{Width: 160}, Table)
	for _, want := range []string{
		"│ lm_head.weight ",                              // no prefix: the whole name
		"│ model.language_model.layers.0.  ",             // a heading spans the table
		"\n│ linear_attn.in_proj_qkv.weight_scale_inv │", // its rows show the rest
		"│ mtp.layers.0.  ",
		"\n│ mlp.up_proj.weight_scale_inv ",
		"│ mtp.  ", // a run sharing a first component
		"\n│ pre_fc_norm_hidden.weight ",
	} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `(?m)^│ model\.language_model\.norm\.weight +│ changed`, out, "a group of one row whose name fits is listed whole")
	assert.Regexp(t, `(?m)^│ model\.language_model\.layers\.1\. +│$`, out, "a group of one row whose name does not fit keeps its heading")
	assert.Regexp(t, `(?m)^│ mlp\.down_proj\.weight +│ changed`, out)
	for _, r := range diffGrid().Rows {
		assert.Contains(t, out, r[0][strings.LastIndexByte(r[0], '.'):], "every row is listed")
	}
	assert.Equal(t, len(diffGrid().Rows)+4, len(tableLines(out))-4, "ten rows, four headings, three rules and the header")
	// Headings only in the table format.
	for _, f := range []string{Text, CSV, Markdown} {
		out := render(t, diffGrid(), &Term{Width: 80}, f)
		assert.Contains(t, out, "model.language_model.layers.0.linear_attn.in_proj_qkv.weight_scale_inv", f)
		assert.NotContains(t, out, "not shown", f)
	}
	// Colour: headings bold, relations coloured.
	out = render(t, diffGrid(), &Term{Width: 160, Color: true}, Table)
	assert.Contains(t, out, "\x1b[1mmtp.layers.0.\x1b[0m")
	assert.Contains(t, out, "\x1b[33mchanged\x1b[0m")
}

func tableLines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(l, "│") || strings.HasPrefix(l, "┌") || strings.HasPrefix(l, "├") || strings.HasPrefix(l, "└") {
			out = append(out, l)
		}
	}
	return out
}

func TestTableDropsColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		width   int
		dropped string // the note, "" when every column is shown
		shown   []string
	}{
		{160, "", []string{"base", "ft", "shape", "rel_l2", "cosine", "note"}},
		{100, "(not shown at 100 columns: base, ft, cosine; --format text shows all)", []string{"shape", "rel_l2", "note"}},
		{80, "(not shown at 80 columns: base, ft, shape, cosine; --format text shows all)", []string{"rel_l2", "note"}},
		{60, "(not shown at 60 columns: base, ft, shape, rel_l2, cosine, note; --format text shows all)", []string{"relation"}},
	} {
		out := render(t, diffGrid(), &Term{Width: c.width}, Table)
		lines := tableLines(out)
		for _, l := range lines {
			assert.LessOrEqual(t, twwidth.Width(l), c.width, "%d: %q", c.width, l)
		}
		assert.NotContains(t, out, "…")
		header := lines[1]
		for _, h := range c.shown {
			assert.Contains(t, header, " "+h+" ", c.width)
		}
		if c.dropped == "" {
			assert.NotContains(t, out, "not shown", c.width)
			continue
		}
		assert.Contains(t, strings.ReplaceAll(out, "\n", " "), c.dropped, c.width)
		assert.NotContains(t, header, " cosine ", c.width)
		assert.Contains(t, out, "linear_attn.in_proj_qkv.weight_scale_inv", "the name is whole at %d", c.width)
	}
}

func TestTableGroupAlso(t *testing.T) {
	t.Parallel()
	g := &Grid{Header: []string{"target", "sources"}, Names: map[int]bool{0: true}, Group: true, GroupAlso: map[int]bool{1: true}}
	g.Rows = [][]string{
		{"layers.0/tp/out", "model.language_model.layers.0.linear_attn.out_proj.weight (+1 scales)"},
		{"layers.0/tp/qkvzab.il", "model.language_model.layers.0.linear_attn.in_proj_qkv.weight + model.language_model.layers.0.linear_attn.in_proj_z.weight (+2 scales)"},
		{"layers.1/tp/out", "model.language_model.layers.1.linear_attn.out_proj.weight (+1 scales)"},
	}
	out := render(t, g, &Term{Width: 120}, Table)
	assert.Contains(t, out, "│ layers.0/ (sources: model.language_model.layers.0.) ")
	assert.Contains(t, out, "│ tp/qkvzab.il │ linear_attn.in_proj_qkv.weight + linear_attn.in_proj_z.weight (+2 scales) │")
	assert.Contains(t, out, "│ layers.1/ (sources: model.language_model.layers.1.) ", "a group of one row keeps the heading that holds its sources' prefix")
	assert.Contains(t, render(t, g, &Term{Width: 120}, Text), "model.language_model.layers.0.linear_attn.in_proj_z.weight")
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

// TestTableDropsByImportance: a droppable column that is mostly empty
// ("" or "-") gives way before a fuller one of a higher priority number,
// and columns that say nothing (all "-", or all "0" in a column of
// numbers) before both (#36: the diff table kept a mostly empty note and
// dropped base and ft).
func TestTableDropsByImportance(t *testing.T) {
	t.Parallel()
	g := &Grid{Header: []string{"name", "kind", "note", "count", "zero"}, Right: map[int]bool{3: true, 4: true},
		Drop: map[int]int{2: 1, 3: 2, 4: 3}}
	for i := range 6 {
		note := ""
		if i == 0 {
			note = "requantisesexactly"
		}
		g.Rows = append(g.Rows, []string{fmt.Sprintf("tensor.%d.weight", i), "changed", note, fmt.Sprint(1000 * (i + 1)), "0"})
	}
	// boxes: name and kind 29 columns, count 8 more, note 21 more, zero 7
	// more: at 52 the filled count goes in before the mostly empty note
	// (which no longer fits), and the all-zero column in what is left
	out := render(t, g, &Term{Width: 52}, Table)
	assert.Contains(t, out, "(not shown at 52 columns: note;")
	assert.Contains(t, tableLines(out)[1], " count ")
	out = render(t, g, &Term{Width: 60}, Table)
	assert.Contains(t, out, "(not shown at 60 columns: zero;", "the column that says nothing goes first")
	out = render(t, g, &Term{Width: 160}, Table)
	assert.NotContains(t, out, "not shown")
}

// TestTermWrapsProse: with Prose a line longer than the width wraps at
// spaces keeping its indent; table lines, coloured lines and lines that
// fit pass as they are; Flush writes a last line without a newline.
func TestTermWrapsProse(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	tm := &Term{Writer: &b, Width: 20, Prose: true}
	_, err := io.WriteString(tm, "short\n  fits: 748.2 KiB per device, headroom 32.0 GiB\n│ a table line that is wider than twenty │\nlast line with no newline at all")
	require.NoError(t, err)
	assert.Equal(t, "short\n  fits: 748.2 KiB\n  per device,\n  headroom 32.0 GiB\n│ a table line that is wider than twenty │\n", b.String())
	require.NoError(t, tm.Flush())
	assert.True(t, strings.HasSuffix(b.String(), "\nlast line with no\nnewline at all"), b.String())
	b.Reset()
	tm.Prose = false
	_, err = io.WriteString(tm, "a line of text longer than twenty columns\n")
	require.NoError(t, err)
	assert.Equal(t, "a line of text longer than twenty columns\n", b.String(), "without Prose nothing is wrapped")
}

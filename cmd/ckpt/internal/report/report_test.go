package report

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fl(v float64) *diff.Float { f := diff.Float(v); return &f }
func in(v int64) *int64        { return &v }

// row makes a tensor row: rel_l2 < 0 means none.
func row(name string, r diff.Relation, rel float64, changed, numel int64) diff.Tensor {
	g, _, _ := ckpt.GroupOf(name)
	t := diff.Tensor{Name: name, Relation: r, Group: g, Numel: numel}
	if rel >= 0 {
		t.RelL2, t.ChangedElems = fl(rel), in(changed)
	}
	return t
}

// qwenLayer is the tensors of one Qwen3.5 decoder layer (linear or full
// attention) with the FP8 scale companions, all identical.
func qwenLayer(prefix string, i int, linear bool) []diff.Tensor {
	p := fmt.Sprintf("%s.%d.", prefix, i)
	var kinds []string
	if linear {
		kinds = []string{"linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_qkv.weight_scale_inv", "linear_attn.in_proj_z.weight",
			"linear_attn.in_proj_a.weight", "linear_attn.in_proj_b.weight", "linear_attn.out_proj.weight", "linear_attn.conv1d.weight",
			"linear_attn.A_log", "linear_attn.dt_bias", "linear_attn.norm.weight"}
	} else {
		kinds = []string{"self_attn.q_proj.weight", "self_attn.q_proj.weight_scale_inv", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
			"self_attn.o_proj.weight", "self_attn.q_norm.weight", "self_attn.k_norm.weight"}
	}
	kinds = append(kinds, "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight", "mlp.down_proj.weight_scale_inv",
		"input_layernorm.weight", "post_attention_layernorm.weight")
	var out []diff.Tensor
	for _, k := range kinds {
		out = append(out, row(p+k, diff.Identical, 0, 0, 100))
	}
	return out
}

func set(rows []diff.Tensor, name string, f func(*diff.Tensor)) {
	for i := range rows {
		if rows[i].Name == name {
			f(&rows[i])
			return
		}
	}
	panic("no row " + name)
}

// qwenResult is a 64-layer Qwen3.5 diff (every 4th layer full attention)
// with an MTP layer, a vision block and tensors outside the layers.
func qwenResult(layers int) *diff.Result {
	var ts []diff.Tensor
	for i := range layers {
		ts = append(ts, qwenLayer("model.language_model.layers", i, (i+1)%4 != 0)...)
	}
	ts = append(ts, qwenLayer("mtp.layers", 0, false)...)
	ts = append(ts, row("model.visual.blocks.0.attn.qkv.weight", diff.Identical, 0, 0, 10), row("model.visual.blocks.0.attn.qkv.bias", diff.Identical, 0, 0, 10),
		row("model.visual.blocks.0.norm1.weight", diff.Identical, 0, 0, 10), row("model.visual.blocks.0.norm1.bias", diff.Identical, 0, 0, 10),
		row("mtp.fc.weight", diff.Changed, 0.5, 10, 100), row("lm_head.weight", diff.Identical, 0, 0, 10))
	return &diff.Result{Mode: diff.ModeValues, Base: "base", FT: "ft", Tensors: ts}
}

func cellOf(t *testing.T, g Grid, label, kind string) Cell {
	t.Helper()
	for _, r := range g.Rows {
		if r.Label != label {
			continue
		}
		for j, c := range g.Columns {
			if c.Kind == kind {
				return r.Cells[j]
			}
		}
	}
	t.Fatalf("no cell %s %s", label, kind)
	return Cell{}
}

func TestBuildGrids(t *testing.T) {
	t.Parallel()
	h := Build(qwenResult(64))
	require.Len(t, h.Grids, 2)
	dec := h.Grids[0]
	assert.True(t, dec.Decoder)
	require.Len(t, dec.Rows, 65, "64 decoder layers and the MTP layer")
	assert.Equal(t, "0", dec.Rows[0].Label)
	assert.Equal(t, "63", dec.Rows[63].Label)
	assert.Equal(t, "mtp 0", dec.Rows[64].Label)
	var labels []string
	for _, c := range dec.Columns {
		labels = append(labels, c.Label)
	}
	assert.Equal(t, []string{"qkv", "z", "a", "b", "out", "cv", "A", "dt", "n", "q", "k", "v", "o", "qn", "kn", "g", "u", "d", "in", "po"}, labels,
		"GDN and attention first, then the MLP and the norms; scale companions are no columns")
	c := cellOf(t, dec, "0", "mlp.down_proj")
	require.NotNil(t, c.Tensor)
	assert.Equal(t, "model.language_model.layers.0.mlp.down_proj.weight", c.Tensor.Name)
	require.Len(t, c.Companions, 1)
	assert.True(t, cellOf(t, dec, "0", "self_attn.q_proj").Empty(), "layer 0 is linear attention")
	vis := h.Grids[1]
	assert.Equal(t, "visual: model.visual.blocks", vis.Title)
	var vk []string
	for _, c := range vis.Columns {
		vk = append(vk, c.Section+"/"+c.Label)
	}
	assert.Equal(t, []string{"attn/qkv", "attn/qkvb", "/n1", "/n1b"}, vk, "a bias is a column of its module's section")
	assert.Equal(t, "no difference", h.SameLabel())
	sampled := qwenResult(1)
	set(sampled.Tensors, "lm_head.weight", func(t *diff.Tensor) { t.Relation = diff.NoChangeSeen })
	assert.Equal(t, "no difference found", Build(sampled).SameLabel(), "a sample cannot prove identity")
	require.Len(t, h.Singles, 2)
	assert.Equal(t, ckpt.GroupMTP, h.Singles[0].Group, "mtp before other")
	assert.Equal(t, "lm_head.weight", h.Singles[1].Cell.Tensor.Name)
}

func TestClassify(t *testing.T) {
	t.Parallel()
	res := qwenResult(4)
	L := "model.language_model.layers."
	set(res.Tensors, L+"0.mlp.up_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.02, 50, 100) })
	set(res.Tensors, L+"0.mlp.gate_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.0021, 5, 100) })
	set(res.Tensors, L+"1.mlp.gate_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.0004, 1, 100) })
	set(res.Tensors, L+"1.mlp.up_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 1e-9, 1, 1000) })
	set(res.Tensors, L+"2.mlp.up_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0, 1, 100); t.RelL2 = fl(math.NaN()) })
	set(res.Tensors, L+"2.mlp.gate_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, -1, 0, 100) }) // bytes mode
	set(res.Tensors, L+"3.mlp.up_proj.weight", func(t *diff.Tensor) { t.Relation = diff.RequantIdentical })
	set(res.Tensors, L+"3.mlp.gate_proj.weight", func(t *diff.Tensor) { t.Relation = diff.OnlyInBase })
	set(res.Tensors, L+"3.input_layernorm.weight", func(t *diff.Tensor) { t.Relation = diff.OnlyInFT })
	set(res.Tensors, L+"3.post_attention_layernorm.weight", func(t *diff.Tensor) { t.Relation = diff.ShapeChanged })
	set(res.Tensors, L+"2.input_layernorm.weight", func(t *diff.Tensor) { t.Relation = diff.SameHeader })
	// Bytes mode: the same codes under another scale.
	set(res.Tensors, L+"1.mlp.down_proj.weight_scale_inv", func(t *diff.Tensor) { t.Relation = diff.Changed })
	h := Build(res)
	// mtp.fc.weight (0.5) is the largest rel_l2: the top decade is 1e-1.
	assert.Equal(t, [Levels]string{"<1e-3", "1e-3..1e-2", "1e-2..1e-1", ">=1e-1"}, h.LevelRanges(RelL2))
	assert.Equal(t, [Levels]string{"<1%", "1%..10%", "10%..50%", ">=50%"}, h.LevelRanges(ChangedFraction))
	dec := h.Grids[0]
	for _, c := range []struct {
		layer, kind string
		m           Metric
		st          State
		level       int
	}{
		{"0", "mlp.up_proj", RelL2, Level, 3},
		{"0", "mlp.up_proj", ChangedFraction, Level, 4},
		{"0", "mlp.gate_proj", RelL2, Level, 2},
		{"0", "mlp.gate_proj", ChangedFraction, Level, 2},
		{"1", "mlp.gate_proj", RelL2, Level, 1},
		{"1", "mlp.up_proj", RelL2, Level, 1},
		{"1", "mlp.up_proj", ChangedFraction, Level, 1},
		{"0", "mlp.down_proj", RelL2, Same, 0},
		{"1", "mlp.down_proj", RelL2, Unmeasured, 0},
		{"2", "mlp.up_proj", RelL2, NonFinite, 0},
		{"2", "mlp.gate_proj", RelL2, Unmeasured, 0},
		{"2", "input_layernorm", RelL2, NotCompared, 0},
		{"3", "mlp.up_proj", RelL2, Requant, 0},
		{"3", "mlp.gate_proj", RelL2, OnlyBase, 0},
		{"3", "input_layernorm", RelL2, OnlyFT, 0},
		{"3", "post_attention_layernorm", RelL2, Shape, 0},
		{"0", "self_attn.q_proj", RelL2, Absent, 0},
	} {
		st, lv := h.Classify(cellOf(t, dec, c.layer, c.kind), c.m)
		assert.Equal(t, c.st, st, "%s %s %s", c.layer, c.kind, c.m)
		assert.Equal(t, c.level, lv, "%s %s %s", c.layer, c.kind, c.m)
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

func TestWriteStrip(t *testing.T) {
	t.Parallel()
	res := qwenResult(64)
	set(res.Tensors, "model.language_model.layers.5.mlp.up_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.02, 50, 100) })
	set(res.Tensors, "model.language_model.layers.7.self_attn.o_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.00002, 50, 100) })
	h := Build(res)
	for _, c := range []struct {
		name string
		o    StripOptions
	}{
		{"ascii", StripOptions{}},
		{"unicode colour", StripOptions{Unicode: true, Color: true, Width: 80}},
		{"narrow", StripOptions{Width: 40}},
	} {
		var b bytes.Buffer
		require.NoError(t, WriteStrip(&b, h, c.o))
		out := b.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		width := c.o.Width
		if width == 0 {
			width = 80
		}
		for _, l := range lines {
			assert.LessOrEqual(t, utf8.RuneCountInString(ansi.ReplaceAllString(l, "")), width, "%s: %q", c.name, l)
		}
		assert.Equal(t, c.o.Color, ansi.MatchString(out), c.name)
		plain := ansi.ReplaceAllString(out, "")
		// One row per decoder layer and for the MTP layer.
		for i := range 64 {
			assert.Regexp(t, fmt.Sprintf(`(?m)^%d +[|│]`, i), plain, c.name)
		}
		assert.Regexp(t, `(?m)^mtp 0 [|│]`, plain, c.name)
		if c.name == "narrow" {
			assert.Contains(t, plain, "columns: a=linear_attn.in_proj_qkv", "the key of the one-character columns")
			continue
		}
		// mtp.fc.weight's 0.5 sets the top decade: 0.02 is level 3.
		l3, low, same := "=", ":", "."
		if c.o.Unicode {
			l3, low, same = "▓", "░", "·"
		}
		assert.Regexp(t, `(?m)^5 .*`+regexp.QuoteMeta(l3+l3), plain, c.name)
		assert.Regexp(t, `(?m)^7 .*`+regexp.QuoteMeta(low), plain, c.name)
		assert.Contains(t, plain, "legend: "+same+" no difference  "+low+" <1e-3", c.name)
		assert.Contains(t, plain, "layer   qkv z  a  b  out cv A  dt n    q  k  v  o  qn kn   g  u  d    in po", c.name)
	}
	var b bytes.Buffer
	require.NoError(t, WriteStrip(&b, Build(&diff.Result{Tensors: []diff.Tensor{row("lm_head.weight", diff.Identical, 0, 0, 1)}}), StripOptions{}))
	assert.Empty(t, b.String(), "no decoder layers: no strip")
}

func TestWriteHTML(t *testing.T) {
	t.Parallel()
	res := qwenResult(64)
	set(res.Tensors, "model.language_model.layers.5.mlp.up_proj.weight", func(t *diff.Tensor) { *t = row(t.Name, diff.Changed, 0.02, 50, 100) })
	res.Tensors = append(res.Tensors, row(`evil.<script>alert(1)</script>`, diff.OnlyInFT, -1, 0, 1))
	res.Config = nil
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, &Page{Result: res, Verdict: "differences found", Mode: "values",
		Relations: []diff.Relation{diff.Identical, diff.Changed}, Layers: diff.ByLayer(res.Tensors),
		Config: []ConfigLine{{Path: "rope_theta", Change: "changed", Text: "1 → 2"}}}))
	out := b.String()
	for i := range 64 {
		assert.Contains(t, out, fmt.Sprintf(`<tr data-layer="%d"><th class="rl">%d</th>`, i, i))
	}
	assert.Contains(t, out, `<tr data-layer="mtp 0">`)
	assert.Contains(t, out, `<td class="l4" title="5 mlp.up_proj: changed, rel_l2 0.02, changed 50 %`)
	assert.Contains(t, out, "rope_theta")
	assert.Contains(t, out, "Content-Security-Policy")
	assert.NotContains(t, out, "<script>", "names are escaped")
	assert.Contains(t, out, "evil.&lt;script&gt;")
	for _, ref := range []string{"src=", "href=", "url(", "@import", "http://", "https://"} {
		assert.NotContains(t, out, ref, "self-contained: no external resource")
	}
}

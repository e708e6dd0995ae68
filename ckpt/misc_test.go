package ckpt_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"sort"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNaturalLess(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a, b string
		less bool
	}{
		{"layers.2", "layers.10", true},
		{"layers.10", "layers.2", false},
		{"layers.2.mlp", "layers.10.attn", true},
		{"a", "b", true},
		{"a", "a", false},
		{"a1", "a01", false}, {"a01", "a1", true}, // equal numbers: byte order decides
		{"x9", "x10", true},
		{"x", "x0", true},
		{"layers.99999999999999999999", "layers.100000000000000000000", true}, // beyond uint64
		{"b.9", "b.10", true},
		{"mtp.layers.0", "model.x", false},
	} {
		assert.Equal(t, c.less, ckpt.NaturalLess(c.a, c.b), "%q < %q", c.a, c.b)
	}
	names := []string{"l.10", "l.1", "l.2", "l.01", "l.001", "l.100", "m", "l"}
	sort.Slice(names, func(i, j int) bool { return ckpt.NaturalLess(names[i], names[j]) })
	assert.Equal(t, []string{"l", "l.001", "l.01", "l.1", "l.2", "l.10", "l.100", "m"}, names)
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	names := []string{
		"lm_head.weight",
		"model.language_model.layers.3.mlp.up_proj.weight",
		"model.language_model.layers.3.mlp.up_proj.weight_scale_inv",
		"model.language_model.layers.12.self_attn.q_proj.weight",
		"mtp.fc.weight",
		"mtp.layers.0.mlp.down_proj.weight",
		"model.visual.blocks.0.attn.qkv.bias",
	}
	for _, c := range []struct {
		include, exclude []string
		want             []string
	}{
		{nil, nil, names},
		{[]string{"*.weight"}, nil, []string{"lm_head.weight"}},
		{[]string{"**.weight"}, nil, []string{names[0], names[1], names[3], names[4], names[5]}},
		{[]string{"mtp.**"}, nil, []string{"mtp.fc.weight", "mtp.layers.0.mlp.down_proj.weight"}},
		{[]string{"mtp.*"}, nil, nil},
		{[]string{"mtp.*.weight"}, nil, []string{"mtp.fc.weight"}},
		{[]string{"model.language_model.layers.*.mlp.*.weight"}, nil, []string{names[1]}},
		{[]string{"model.language_model.layers.*.**"}, []string{"**_scale_inv"}, []string{names[1], names[3]}},
		{[]string{"**.layers.1?.**"}, nil, []string{names[3]}},
		{[]string{"**.layers.{3,12}.**"}, nil, []string{names[1], names[2], names[3]}},
		{nil, []string{"model.**"}, []string{"lm_head.weight", "mtp.fc.weight", "mtp.layers.0.mlp.down_proj.weight"}},
		{[]string{"lm_head.weight", "mtp.fc.weight"}, nil, []string{"lm_head.weight", "mtp.fc.weight"}},
		{[]string{"mtp.**"}, []string{"mtp.**"}, nil},
	} {
		m, err := ckpt.NewMatcher(c.include, c.exclude)
		require.NoError(t, err)
		var got []string
		for _, n := range names {
			if m.Match(n) {
				got = append(got, n)
			}
		}
		assert.Equal(t, c.want, got, "include %v exclude %v", c.include, c.exclude)
	}
	var nilM *ckpt.Matcher
	assert.True(t, nilM.Match("anything"))
	_, err := ckpt.NewMatcher([]string{"[a"}, nil)
	assert.Error(t, err)
	_, err = ckpt.NewMatcher(nil, []string{"{a"})
	assert.Error(t, err)
}

func TestGroupOfAndRanges(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		group string
		stack string
		layer int
	}{
		{"model.language_model.layers.12.mlp.up_proj.weight", ckpt.GroupText, "model.language_model.layers", 12},
		{"model.layers.0.x", ckpt.GroupText, "model.layers", 0},
		{"layers.7", ckpt.GroupText, "layers", 7},
		{"mtp.layers.0.mlp.up_proj.weight", ckpt.GroupMTP, "", -1},
		{"model.visual.blocks.3.attn.qkv.weight", ckpt.GroupVisual, "", -1},
		{"lm_head.weight", ckpt.GroupOther, "", -1},
		{"model.sublayers.3.x", ckpt.GroupOther, "", -1},
		{"model.layers.x", ckpt.GroupOther, "", -1},
		{"model.layers.99999999999.x", ckpt.GroupOther, "", -1}, // too many digits for a layer
	} {
		g, stack, l := ckpt.GroupOf(c.name)
		assert.Equal(t, c.group, g, c.name)
		assert.Equal(t, c.stack, stack, c.name)
		assert.Equal(t, c.layer, l, c.name)
	}
	assert.Equal(t, "{0..63}", ckpt.Ranges(seq(0, 64)))
	assert.Equal(t, "{0..3,5,7..9}", ckpt.Ranges([]int{9, 0, 1, 2, 3, 5, 7, 8}))
	assert.Equal(t, "{1,3}", ckpt.Ranges([]int{3, 1}))
	assert.Equal(t, "{}", ckpt.Ranges(nil))
	assert.Equal(t, "{4}", ckpt.Ranges([]int{4, 4}))
}

func seq(a, b int) []int {
	var out []int
	for i := a; i < b; i++ {
		out = append(out, i)
	}
	return out
}

func TestSummarizeParameters(t *testing.T) {
	t.Parallel()
	mk := func(name string, dt numfmt.DType, shape ...int64) *ckpt.Tensor {
		ti := ckpt.TensorInfo{Name: name, DType: dt, Shape: shape}
		ti.End = ti.Numel() * uint64(dt.Bits()) / 8
		return &ckpt.Tensor{TensorInfo: ti}
	}
	ts := []*ckpt.Tensor{
		mk("model.layers.0.w.weight", numfmt.F8E4M3, 256, 128),
		mk("model.layers.0.w.weight_scale_inv", numfmt.BF16, 2, 1),
		mk("model.layers.1.n.weight", numfmt.BF16, 128),
		mk("model.layers.3.n.weight", numfmt.BF16, 128),
		mk("x.input_scale", numfmt.F32, 1),
		mk("e.scales", numfmt.F8E8M0, 4, 4),
		mk("scalar", numfmt.F32),
		mk("mtp.fc.weight", numfmt.BF16, 4, 8),
	}
	s := hubSummary(ts, true)
	assert.Equal(t, int64(8), s.Tensors)
	assert.Equal(t, map[string]int64{"F8_E4M3": 32768, "BF16": 256 + 32}, s.ParametersByDType)
	assert.Equal(t, int64(32768+256+32), s.Parameters)
	assert.Equal(t, int64(32768+4+256+256+4+16+4+64), s.Bytes)
	require.Len(t, s.ByGroup, 3)
	assert.Equal(t, "model.layers.{0..1,3}", s.ByGroup[0].Pattern)
	assert.Equal(t, int64(4), s.ByGroup[0].Tensors)
	assert.Equal(t, "mtp.*", s.ByGroup[1].Pattern)
	assert.Equal(t, "other", s.ByGroup[2].Pattern)
	// The group names are diff's and verify's: text_layers, mtp, visual, other.
	assert.Equal(t, []string{ckpt.GroupText, ckpt.GroupMTP, ckpt.GroupOther}, []string{s.ByGroup[0].Group, s.ByGroup[1].Group, s.ByGroup[2].Group})
	// Without a quantization_config, bookkeeping counts (Hub rule).
	s = hubSummary(ts, false)
	assert.Equal(t, map[string]int64{"F8_E4M3": 32768, "BF16": 256 + 32 + 2, "F32": 1}, s.ParametersByDType)
}

func TestLayoutHeaderRoundTrip(t *testing.T) {
	t.Parallel()
	specs := []ckpt.WriteSpec{
		{Name: "b", DType: numfmt.BF16, Shape: []int64{3}},
		{Name: "a", DType: numfmt.BF16, Shape: []int64{2, 2}},
		{Name: "q", DType: numfmt.F8E4M3, Shape: []int64{5}},
		{Name: "f", DType: numfmt.F32, Shape: []int64{}},
		{Name: "z", DType: numfmt.F4, Shape: []int64{0}},
		{Name: "name \"quoted\"\n", DType: numfmt.U8, Shape: []int64{1}},
	}
	hdr, order, err := ckpt.LayoutHeader(specs, map[string]string{"format": "pt"})
	require.NoError(t, err)
	assert.Zero(t, len(hdr)%8, "padded to a multiple of 8")
	var names []string
	for _, o := range order {
		names = append(names, o.Name)
	}
	assert.Equal(t, []string{"f", "a", "b", "q", "name \"quoted\"\n", "z"}, names, "dtype descending, then name")
	var buf bytes.Buffer
	w, err := ckpt.NewWriter(&buf, specs, map[string]string{"format": "pt"})
	require.NoError(t, err)
	_, err = w.Write(make([]byte, order[len(order)-1].End+1))
	assert.Error(t, err, "more bytes than declared")
	assert.Error(t, w.Finish())
	_, err = w.Write(make([]byte, order[len(order)-1].End))
	require.NoError(t, err)
	require.NoError(t, w.Finish())
	data := buf.Bytes()
	assert.Equal(t, uint64(len(hdr)), binary.LittleEndian.Uint64(data))
	h, err := ckpt.ReadHeader(bytes.NewReader(data), int64(len(data)), "rt")
	require.NoError(t, err)
	assert.Empty(t, h.Lints)
	assert.Equal(t, map[string]string{"format": "pt"}, h.Metadata)
	assert.Equal(t, order, h.Tensors)

	_, _, err = ckpt.LayoutHeader([]ckpt.WriteSpec{{Name: "x", DType: "F7"}}, nil)
	assert.Error(t, err)
	_, _, err = ckpt.LayoutHeader([]ckpt.WriteSpec{{Name: "x", DType: numfmt.U8}, {Name: "x", DType: numfmt.U8}}, nil)
	assert.Error(t, err)
	_, _, err = ckpt.LayoutHeader([]ckpt.WriteSpec{{Name: "x", DType: numfmt.F4, Shape: []int64{3}}}, nil)
	assert.Error(t, err)
}

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"model-00001-of-00002.safetensors", "sub/dir/x.safetensors", "a..b.safetensors"} {
		assert.NoError(t, ckpt.CheckName(ok), ok)
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../x", "a\\b", "C:x", "https://h/x", "a\x00b", "a\nb", "./x", "a//b", "a/"} {
		assert.Error(t, ckpt.CheckName(bad), bad)
	}
}

func TestConfigForms(t *testing.T) {
	t.Parallel()
	nested, err := ckpt.ParseConfig([]byte(`{"model_type":"qwen3_5","text_config":{"hidden_size":5120,"quantization_config":{"quant_method":"fp8","weight_block_size":[128,64],"ignored_layers":["lm_head"]}}}`), "c.json")
	require.NoError(t, err)
	assert.Equal(t, "text_config.", nested.TextPath())
	n, ok := nested.TextInt("hidden_size")
	assert.True(t, ok)
	assert.Equal(t, int64(5120), n)
	q := nested.Quantization()
	require.NotNil(t, q)
	assert.Equal(t, "text_config.quantization_config", q.Path)
	assert.True(t, q.IsBlockFP8())
	assert.Equal(t, []int64{128, 64}, q.BlockSize)
	assert.Equal(t, []string{"lm_head"}, q.ModulesToNotConvert)

	flat, err := ckpt.ParseConfig([]byte(`{"model_type":"qwen3_5_text","hidden_size":"64","quantization_config":{"quant_method":"fp8"}}`), "c.json")
	require.NoError(t, err)
	assert.Equal(t, "", flat.TextPath())
	n, ok = flat.TextInt("hidden_size")
	assert.True(t, ok)
	assert.Equal(t, int64(64), n)
	assert.False(t, flat.Quantization().IsBlockFP8(), "no weight_block_size")
	v, ok := flat.Get("quantization_config.quant_method")
	assert.True(t, ok)
	assert.Equal(t, "fp8", v)
	var nilCfg *ckpt.Config
	assert.Nil(t, nilCfg.Quantization())
	assert.Nil(t, nilCfg.Text())
}

// TestWriteFileKeepsOld: a failed WriteFile keeps the old file (the
// atomic placement itself is tested in package atomicfile).
func TestWriteFileKeepsOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := dir + "/out.safetensors"
	require.NoError(t, os.WriteFile(target, []byte("done"), 0o644))

	err := ckpt.WriteFile(target, []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.F32, Shape: []int64{2}}, Data: make([]byte, 4)}}, nil)
	assert.ErrorContains(t, err, "needs 8")
	got, _ := os.ReadFile(target)
	assert.Equal(t, "done", string(got), "a failed write keeps the old file")
	ents, _ := os.ReadDir(dir)
	assert.Len(t, ents, 1, "and no temporary file")
}

// hubSummary is SummarizeWith under the Hub's parameter-count rule
// (CountsAsParameter), quantized saying whether the checkpoint has a
// quantization_config.
func hubSummary(ts []*ckpt.Tensor, quantized bool) ckpt.Summary {
	return ckpt.SummarizeWith(ts, func(t *ckpt.Tensor) (int64, bool) {
		return int64(t.Numel()), ckpt.CountsAsParameter(&t.TensorInfo, quantized)
	})
}

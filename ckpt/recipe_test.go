package ckpt_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openSpecs writes zero-filled tensors of specs and the given files
// (name → content) into a directory and opens it.
func openSpecs(t *testing.T, specs []ckpt.WriteSpec, files map[string]string) *ckpt.Checkpoint {
	t.Helper()
	dir := t.TempDir()
	var ts []ckpt.MemTensor
	for _, s := range specs {
		n := int64(s.DType.Bits() / 8)
		for _, d := range s.Shape {
			n *= d
		}
		ts = append(ts, ckpt.MemTensor{WriteSpec: s, Data: make([]byte, n)})
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil))
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestQuantRecipe(t *testing.T) {
	t.Parallel()
	ct := func(weights string) string {
		return `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","ignore":["lm_head","re:.*mlp\\.gate$"],
			"config_groups":{"group_0":{"targets":["Linear"],"weights":` + weights + `,"input_activations":{"dynamic":true,"strategy":"token","num_bits":8,"type":"float"}}}}}`
	}
	tests := []struct {
		name      string
		files     map[string]string
		scheme    quant.Scheme // "" for no recipe
		block     [2]int64
		group     int64
		ignoreKey string
		ignore    []string
		err       string // a *RecipeError containing this
	}{
		{"no config", nil, "", [2]int64{}, 0, "", nil, ""},
		{"config without quantization", map[string]string{"config.json": `{"model_type":"x"}`}, "", [2]int64{}, 0, "", nil, ""},
		{"block fp8", map[string]string{"config.json": `{"quantization_config":{"quant_method":"fp8","weight_block_size":[64,32],"modules_to_not_convert":["lm_head"]}}`},
			quant.BlockFP8, [2]int64{64, 32}, 0, "quantization_config.modules_to_not_convert", []string{"lm_head"}, ""},
		{"block fp8 default block", map[string]string{"config.json": `{"quantization_config":{"quant_method":"fp8"}}`}, quant.BlockFP8, [2]int64{128, 128}, 0, "quantization_config.modules_to_not_convert", nil, ""},
		{"mxfp4", map[string]string{"config.json": `{"quantization_config":{"quant_method":"mxfp4","modules_to_not_convert":["model.layers.*.self_attn","lm_head"]}}`},
			quant.MXFP4, [2]int64{}, 32, "quantization_config.modules_to_not_convert", []string{"model.layers.*.self_attn", "lm_head"}, ""},
		{"mxfp4 in text_config", map[string]string{"config.json": `{"text_config":{"quantization_config":{"quant_method":"mxfp4"}}}`}, quant.MXFP4, [2]int64{}, 32, "text_config.quantization_config.modules_to_not_convert", nil, ""},
		{"nvfp4 in config.json", map[string]string{"config.json": `{"quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4","group_size":16,"ignore":["lm_head"]}}`},
			quant.NVFP4, [2]int64{}, 16, "quantization_config.ignore", []string{"lm_head"}, ""},
		{"nvfp4 in hf_quant_config.json", map[string]string{"config.json": `{"model_type":"x"}`,
			"hf_quant_config.json": `{"producer":{"name":"modelopt"},"quantization":{"quant_algo":"NVFP4","group_size":16,"exclude_modules":["lm_head","model.layers.0*"]}}`},
			quant.NVFP4, [2]int64{}, 16, "quantization.exclude_modules", []string{"lm_head", "model.layers.0*"}, ""},
		{"hf_quant_config.json without config.json", map[string]string{"hf_quant_config.json": `{"quantization":{"quant_algo":"nvfp4"}}`}, quant.NVFP4, [2]int64{}, 16, "quantization.exclude_modules", nil, ""},
		{"config.json wins over hf_quant_config.json", map[string]string{"config.json": `{"quantization_config":{"quant_method":"mxfp4"}}`,
			"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4"}}`}, quant.MXFP4, [2]int64{}, 32, "quantization_config.modules_to_not_convert", nil, ""},
		{"ct per tensor", map[string]string{"config.json": ct(`{"num_bits":8,"type":"float","strategy":"tensor"}`)}, quant.FP8Tensor, [2]int64{}, 0, "quantization_config.ignore", []string{"lm_head", `re:.*mlp\.gate$`}, ""},
		{"ct per channel", map[string]string{"config.json": ct(`{"num_bits":8,"type":"float","strategy":"channel"}`)}, quant.FP8Channel, [2]int64{}, 0, "quantization_config.ignore", []string{"lm_head", `re:.*mlp\.gate$`}, ""},
		{"ct per block", map[string]string{"config.json": ct(`{"num_bits":8,"type":"float","strategy":"block","block_structure":[128,64]}`)}, quant.FP8PerBlock, [2]int64{128, 64}, 0, "quantization_config.ignore", []string{"lm_head", `re:.*mlp\.gate$`}, ""},
		{"gptq", map[string]string{"config.json": `{"quantization_config":{"quant_method":"gptq","bits":4}}`}, "", [2]int64{}, 0, "", nil, `quant_method "gptq" is not a scheme ckpt knows`},
		{"modelopt fp8", map[string]string{"config.json": `{"quantization_config":{"quant_method":"modelopt","quant_algo":"FP8"}}`}, "", [2]int64{}, 0, "", nil, `quant_algo "FP8" is not a ModelOpt scheme ckpt knows`},
		{"nvfp4 group 32", map[string]string{"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4","group_size":32}}`}, "", [2]int64{}, 0, "", nil, "group_size 32, but NVFP4 scales blocks of 16"},
		{"hf_quant_config.json without quantization", map[string]string{"hf_quant_config.json": `{"producer":{}}`}, "", [2]int64{}, 0, "", nil, `no "quantization" object`},
		{"ct group strategy", map[string]string{"config.json": ct(`{"num_bits":8,"type":"float","strategy":"group","group_size":128}`)}, "", [2]int64{}, 0, "", nil, `strategy "group" is not one ckpt knows`},
		{"ct int4", map[string]string{"config.json": ct(`{"num_bits":4,"type":"int","strategy":"group"}`)}, "", [2]int64{}, 0, "", nil, "ckpt knows float-quantized FP8"},
		{"ct block without structure", map[string]string{"config.json": ct(`{"num_bits":8,"type":"float","strategy":"block"}`)}, "", [2]int64{}, 0, "", nil, "block_structure <nil> is not [rows, cols]"},
		{"fp8 bad block", map[string]string{"config.json": `{"quantization_config":{"quant_method":"fp8","weight_block_size":[128]}}`}, "", [2]int64{}, 0, "", nil, "weight_block_size [128] is not a block size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := openSpecs(t, []ckpt.WriteSpec{{Name: "x", DType: numfmt.U8, Shape: []int64{2}}}, tc.files) // U8: hf_quant_config.json is read
			r, err := c.QuantRecipe()
			if tc.err != "" {
				var re *quant.RecipeError
				require.ErrorAs(t, err, &re)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			if tc.scheme == "" {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			assert.Equal(t, tc.scheme, r.Scheme)
			assert.Equal(t, tc.block, r.Block)
			assert.Equal(t, tc.group, r.GroupSize)
			assert.Equal(t, tc.ignoreKey, r.IgnoreKey)
			assert.Equal(t, tc.ignore, r.Ignore)
			require.NotNil(t, r.Spec(), "every recognised scheme has its description")
			assert.Equal(t, tc.scheme, r.Spec().Scheme)
		})
	}
}

func TestQuantWeightLayout(t *testing.T) {
	t.Parallel()
	const ctGroups = `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{
		"group_0":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","strategy":"tensor"}},
		"group_1":{"targets":["re:.*down_proj$"],"weights":{"num_bits":8,"type":"float","strategy":"channel"}}}}}`
	spec := func(name string, dt numfmt.DType, shape ...int64) ckpt.WriteSpec {
		return ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}
	}
	type comp struct {
		name  string
		found bool
		want  [][]int64
	}
	tests := []struct {
		name   string
		config map[string]string
		specs  []ckpt.WriteSpec
		weight string
		scheme quant.Scheme // "" when the tensor is not a quantised weight
		values []int64
		comps  []comp
		params int64
	}{
		{"mxfp4 blocks", map[string]string{"config.json": `{"quantization_config":{"quant_method":"mxfp4"}}`},
			[]ckpt.WriteSpec{spec("m.experts.down_blocks", numfmt.U8, 2, 8, 3, 16), spec("m.experts.down_scales", numfmt.U8, 2, 8, 3)},
			"m.experts.down_blocks", quant.MXFP4, []int64{2, 8, 96}, []comp{{"m.experts.down_scales", true, [][]int64{{2, 8, 3}}}}, 2 * 2 * 8 * 3 * 16},
		{"mxfp4 scales are bookkeeping", map[string]string{"config.json": `{"quantization_config":{"quant_method":"mxfp4"}}`},
			[]ckpt.WriteSpec{spec("m.experts.down_scales", numfmt.U8, 2, 8, 3)}, "m.experts.down_scales", "", nil, nil, 0},
		{"mxfp4 blocks of a wrong shape", map[string]string{"config.json": `{"quantization_config":{"quant_method":"mxfp4"}}`},
			[]ckpt.WriteSpec{spec("m.down_blocks", numfmt.U8, 8, 3, 15)}, "m.down_blocks", quant.MXFP4, nil, []comp{{"m.down_scales", false, nil}}, 2 * 8 * 3 * 15},
		{"nvfp4", map[string]string{"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4"}}`},
			[]ckpt.WriteSpec{spec("m.weight", numfmt.U8, 8, 32), spec("m.weight_scale", numfmt.F8E4M3, 8, 4), spec("m.weight_scale_2", numfmt.F32)},
			"m.weight", quant.NVFP4, []int64{8, 64}, []comp{{"m.weight_scale", true, [][]int64{{8, 4}}}, {"m.weight_scale_2", true, [][]int64{{}, {1}}}, {"m.input_scale", false, [][]int64{{}, {1}}}}, 8 * 64},
		{"nvfp4 bf16 weight is plain", map[string]string{"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4"}}`},
			[]ckpt.WriteSpec{spec("lm_head.weight", numfmt.BF16, 8, 32), spec("m.weight", numfmt.U8, 8, 32)}, "lm_head.weight", "", nil, nil, 8 * 32},
		{"ct channel", map[string]string{"config.json": `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","strategy":"channel"}}}}}`},
			[]ckpt.WriteSpec{spec("m.weight", numfmt.F8E4M3, 8, 32), spec("m.weight_scale", numfmt.F32, 8, 1)},
			"m.weight", quant.FP8Channel, []int64{8, 32}, []comp{{"m.weight_scale", true, [][]int64{{8, 1}}}, {"m.input_scale", false, [][]int64{{}, {1}}}}, 8 * 32},
		{"ct tensor", map[string]string{"config.json": `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"targets":["Linear"],"weights":{"num_bits":8,"type":"float","strategy":"tensor"}}}}}`},
			[]ckpt.WriteSpec{spec("m.weight", numfmt.F8E4M3, 8, 32), spec("m.weight_scale", numfmt.F32, 1)},
			"m.weight", quant.FP8Tensor, []int64{8, 32}, []comp{{"m.weight_scale", true, [][]int64{{}, {1}}}, {"m.input_scale", false, [][]int64{{}, {1}}}}, 8 * 32},
		{"ct block", map[string]string{"config.json": `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"targets":["re:.*proj$"],"weights":{"num_bits":8,"type":"float","strategy":"block","block_structure":[4,16]}}}}}`},
			[]ckpt.WriteSpec{spec("m.q_proj.weight", numfmt.F8E4M3, 9, 32)},
			"m.q_proj.weight", quant.FP8PerBlock, []int64{9, 32}, []comp{{"m.q_proj.weight_scale", false, [][]int64{{3, 2}}}, {"m.q_proj.input_scale", false, [][]int64{{}, {1}}}}, 9 * 32},
		{"ct groups by target: regex first", map[string]string{"config.json": ctGroups},
			[]ckpt.WriteSpec{spec("m.down_proj.weight", numfmt.F8E4M3, 8, 32), spec("m.down_proj.weight_scale", numfmt.F32, 8, 1)},
			"m.down_proj.weight", quant.FP8Channel, []int64{8, 32}, []comp{{"m.down_proj.weight_scale", true, [][]int64{{8, 1}}}, {"m.down_proj.input_scale", false, [][]int64{{}, {1}}}}, 8 * 32},
		{"ct groups by target: then the layer class", map[string]string{"config.json": ctGroups},
			[]ckpt.WriteSpec{spec("m.q_proj.weight", numfmt.F8E4M3, 8, 32), spec("m.q_proj.weight_scale", numfmt.F32)},
			"m.q_proj.weight", quant.FP8Tensor, []int64{8, 32}, []comp{{"m.q_proj.weight_scale", true, [][]int64{{}, {1}}}, {"m.q_proj.input_scale", false, [][]int64{{}, {1}}}}, 8 * 32},
		{"ct groups by target: a module name is no class", map[string]string{"config.json": `{"quantization_config":{"quant_method":"compressed-tensors","format":"float-quantized","config_groups":{"g":{"targets":["lm_head"],"weights":{"num_bits":8,"type":"float","strategy":"tensor"}}}}}`},
			[]ckpt.WriteSpec{spec("m.q_proj.weight", numfmt.F8E4M3, 8, 32)}, "m.q_proj.weight", "", nil, nil, 8 * 32},
		{"block fp8", map[string]string{"config.json": `{"quantization_config":{"quant_method":"fp8","weight_block_size":[4,16]}}`},
			[]ckpt.WriteSpec{spec("m.weight", numfmt.F8E4M3, 9, 32), spec("m.weight_scale_inv", numfmt.BF16, 3, 2)},
			"m.weight", quant.BlockFP8, []int64{9, 32}, []comp{{"m.weight_scale_inv", true, [][]int64{{3, 2}}}}, 9 * 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := openSpecs(t, tc.specs, tc.config)
			r, err := c.QuantRecipe()
			require.NoError(t, err)
			x, ok := c.Lookup(tc.weight)
			require.True(t, ok)
			params, counts := ckpt.CountParameters(c, r, x, true)
			assert.Equal(t, tc.params, params, "parameters")
			assert.Equal(t, tc.params != 0, counts)
			w, ok := c.QuantWeight(r, x)
			if tc.scheme == "" {
				assert.False(t, ok)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.scheme, w.Scheme)
			assert.Equal(t, tc.values, w.Shape)
			assert.Equal(t, tc.values == nil, w.ShapeProblem != "")
			require.Len(t, w.Companions, len(tc.comps))
			for i, cp := range tc.comps {
				got := w.Companions[i]
				assert.Equal(t, cp.name, got.Name)
				assert.Equal(t, cp.found, got.Tensor != nil, cp.name)
				assert.Equal(t, cp.want, got.Want, cp.name)
				assert.True(t, got.ShapeOK(), cp.name)
				assert.True(t, got.DTypeOK(), cp.name)
			}
		})
	}
}

// TestQuantSchemeReadsNewSchemes: the readers (QuantScheme, Values)
// accept an NVFP4 weight, declared in config.json or in
// hf_quant_config.json only, with its values' shape [N, K] and its
// companions; an NVFP4 weight without its global scale is refused
// (ErrScale), naming the companion. Before, QuantScheme refused every
// NVFP4 weight.
func TestQuantSchemeReadsNewSchemes(t *testing.T) {
	t.Parallel()
	specs := []ckpt.WriteSpec{{Name: "m.weight", DType: numfmt.U8, Shape: []int64{8, 32}}, {Name: "m.weight_scale", DType: numfmt.F8E4M3, Shape: []int64{8, 4}},
		{Name: "m.weight_scale_2", DType: numfmt.F32, Shape: []int64{}}}
	for _, files := range []map[string]string{
		{"config.json": `{"quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4"}}`},
		{"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4"}}`},
	} {
		c := openSpecs(t, specs, files)
		x, _ := c.Lookup("m.weight")
		assert.True(t, c.IsQuantized(x))
		q, err := c.QuantScheme(x)
		require.NoError(t, err)
		assert.Equal(t, quant.NVFP4, q.Scheme)
		assert.Equal(t, []int64{8, 64}, q.Shape)
		require.NotNil(t, q.Scale)
		require.NotNil(t, q.Global)
		assert.Equal(t, "m.weight_scale", q.Scale.Name)
		assert.Equal(t, "m.weight_scale_2", q.Global.Name)
		v, err := c.Values(x)
		require.NoError(t, err)
		assert.Equal(t, int64(8), v.Rows)
		assert.Equal(t, int64(64), v.Cols)
		assert.Equal(t, int64(32), v.RowBytes())
		dst := make([]float32, 8*64)
		_, err = v.ReadRows(0, 8, nil, dst)
		require.NoError(t, err)
	}
	c := openSpecs(t, specs[:2], map[string]string{"config.json": `{"quantization_config":{"quant_method":"modelopt","quant_algo":"NVFP4"}}`})
	x, _ := c.Lookup("m.weight")
	_, err := c.QuantScheme(x)
	assert.ErrorIs(t, err, ckpt.ErrScale)
	assert.ErrorContains(t, err, `"m.weight_scale_2"`)
}

// TestHFQuantConfigReadOnlyWhenQuantised: hf_quant_config.json is read
// only for a checkpoint whose tensors look quantised and whose config.json
// declares nothing (no extra request for the others).
func TestHFQuantConfigReadOnlyWhenQuantised(t *testing.T) {
	t.Parallel()
	hfq := map[string]string{"hf_quant_config.json": `{"quantization":{"quant_algo":"NVFP4"}}`}
	for _, tc := range []struct {
		name  string
		specs []ckpt.WriteSpec
		read  bool
	}{
		{"bf16 only", []ckpt.WriteSpec{{Name: "m.weight", DType: numfmt.BF16, Shape: []int64{2}}}, false},
		{"u8 codes", []ckpt.WriteSpec{{Name: "m.weight", DType: numfmt.U8, Shape: []int64{2}}}, true},
		{"an input_scale", []ckpt.WriteSpec{{Name: "m.input_scale", DType: numfmt.F32, Shape: []int64{}}}, true},
	} {
		c := openSpecs(t, tc.specs, hfq)
		assert.Equal(t, tc.read, c.HFQuantConfig != nil, tc.name)
	}
}

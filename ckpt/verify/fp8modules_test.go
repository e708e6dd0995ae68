package verify_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// familyTensor is one tensor of a family fixture: name, dtype and shape;
// an F8_E4M3 weight gets its F32 weight_scale_inv (familyDir).
type familyTensor struct {
	name  string
	dtype numfmt.DType
	shape []int64
}

const familyBlock = 32 // the fixtures' weight_block_size: 64-wide Linears are 2x2 blocks

// familyTensors are the tensors of a two-layer model of a profile-less
// family as transformers 5.23.0 saves its *ForCausalLM (tiny shapes, every
// Linear a multiple of the block): FP8 for every weight the family's
// FineGrainedFP8 quantizer converts, BF16 for the rest and for lm_head
// (kept by the lists below). edit changes dtypes by name.
func familyTensors(modelType string, edit map[string]numfmt.DType) []familyTensor {
	const h, e = 64, 4
	var out []familyTensor
	add := func(name string, dt numfmt.DType, shape ...int64) {
		if d, ok := edit[name]; ok {
			dt = d
		}
		out = append(out, familyTensor{name, dt, shape})
	}
	f8 := numfmt.F8E4M3
	add("model.embed_tokens.weight", numfmt.BF16, 128, h)
	for _, l := range []string{"0", "1"} {
		p := "model.layers." + l + "."
		add(p+"input_layernorm.weight", numfmt.BF16, h)
		add(p+"post_attention_layernorm.weight", numfmt.BF16, h)
		attn := modelType != "qwen3_next" || l == "1" // Qwen3-Next: layer 0 linear attention
		if attn {
			for _, m := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
				add(p+"self_attn."+m+".weight", f8, h, h)
			}
		} else {
			add(p+"linear_attn.in_proj_qkvz.weight", f8, 4*h, h)
			add(p+"linear_attn.in_proj_ba.weight", f8, h, h)
			add(p+"linear_attn.out_proj.weight", f8, h, h)
			add(p+"linear_attn.conv1d.weight", numfmt.BF16, 2*h, 1, 4)
		}
		switch modelType {
		case "llama", "qwen3":
			add(p+"mlp.gate_proj.weight", f8, 2*h, h)
			add(p+"mlp.up_proj.weight", f8, 2*h, h)
			add(p+"mlp.down_proj.weight", f8, h, 2*h)
		case "qwen3_moe", "qwen3_next":
			add(p+"mlp.gate.weight", numfmt.BF16, e, h) // the router: no nn.Linear
			for i := range e {
				x := p + "mlp.experts." + string(rune('0'+i)) + "."
				add(x+"gate_proj.weight", f8, h, h)
				add(x+"up_proj.weight", f8, h, h)
				add(x+"down_proj.weight", f8, h, h)
			}
			if modelType == "qwen3_next" {
				add(p+"mlp.shared_expert.gate_proj.weight", f8, h, h)
				add(p+"mlp.shared_expert.up_proj.weight", f8, h, h)
				add(p+"mlp.shared_expert.down_proj.weight", f8, h, h)
				add(p+"mlp.shared_expert_gate.weight", f8, familyBlock, h) // [1, h] upstream; a block here
			}
		case "gpt_oss":
			add(p+"mlp.router.weight", numfmt.BF16, e, h)
			add(p+"mlp.router.bias", numfmt.BF16, e)
			add(p+"mlp.experts.gate_up_proj", numfmt.BF16, e, h, 2*h) // kept by "mlp.experts"
			add(p+"mlp.experts.gate_up_proj_bias", numfmt.BF16, e, 2*h)
			add(p+"mlp.experts.down_proj", numfmt.BF16, e, h, h)
			add(p+"mlp.experts.down_proj_bias", numfmt.BF16, e, h)
		}
	}
	add("model.norm.weight", numfmt.BF16, h)
	add("lm_head.weight", numfmt.BF16, 128, h)
	return out
}

// familyDir writes tensors (zeros; each F8_E4M3 weight with its F32
// weight_scale_inv, unless noScale names it) and a config.json of
// modelType whose quantization_config is transformers' FineGrainedFP8
// one with notConvert as modules_to_not_convert (nil: the key absent).
func familyDir(t *testing.T, modelType, class string, tensors []familyTensor, notConvert []string, noScale ...string) string {
	t.Helper()
	dir := t.TempDir()
	var mts []ckpt.MemTensor
	for _, ft := range tensors {
		n := int64(1)
		for _, d := range ft.shape {
			n *= d
		}
		mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ft.name, DType: ft.dtype, Shape: ft.shape},
			Data: make([]byte, n*int64(ft.dtype.Bits())/8)})
		if ft.dtype == numfmt.F8E4M3 && !contains(noScale, ft.name) {
			s := []int64{(ft.shape[0] + familyBlock - 1) / familyBlock, (ft.shape[1] + familyBlock - 1) / familyBlock}
			mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(ft.name), DType: numfmt.F32, Shape: s},
				Data: make([]byte, s[0]*s[1]*4)})
		}
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), mts, map[string]string{"format": "pt"}))
	q := map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": []int{familyBlock, familyBlock}}
	if notConvert != nil {
		q["modules_to_not_convert"] = notConvert
	}
	cfg := map[string]any{"model_type": modelType, "architectures": []string{class}, "dtype": "bfloat16",
		"hidden_size": 64, "num_hidden_layers": 2, "quantization_config": q}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644))
	return dir
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func runVerify(t *testing.T, dir string) *verify.Result {
	t.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	r, err := verify.Check(context.Background(), c, verify.CheckOptions{})
	require.NoError(t, err)
	return r
}

// TestVerifyFP8ModuleTable (issue 33, behaviour 6, outside the qwen3_5
// profile): in a FineGrainedFP8 checkpoint of a family verify has no
// architecture profile of but whose modules the FP8 module table knows
// (arch.FP8Modules, from transformers' modeling files), a BF16 weight of a
// module the quantizer converts and modules_to_not_convert does not keep is
// an arch.dtype failure naming it and the class transformers builds; a
// weight the list keeps, a router, a norm or the conv1d is not; a model
// type the table does not know is a skip saying it was not checked.
func TestVerifyFP8ModuleTable(t *testing.T) {
	t.Parallel()
	bf := numfmt.BF16
	linearWhy := func(w string, scale string) string {
		return w + " is BF16, expected F8_E4M3 with a weight_scale_inv: quantization_config.modules_to_not_convert does not keep module " +
			strings.TrimSuffix(w, ".weight") + " unconverted, so transformers builds it as an FP8Linear and casts these BF16 values to F8_E4M3 codes " + scale
	}
	const noScale, withScale = "with a scale it initialises itself (there is none)", "scaled by the weight_scale_inv beside it"
	cases := []struct {
		name, modelType, class string
		edit                   map[string]numfmt.DType
		notConvert             []string
		keepScale              bool     // the edited weights keep their weight_scale_inv
		fails                  []string // the arch.dtype failures' messages, in tensor order
		dtype                  string   // else: the one arch.dtype finding's status and a part of its message
		status                 ckpt.Status
	}{
		{name: "llama FP8 as transformers writes it", modelType: "llama", class: "LlamaForCausalLM", notConvert: []string{"lm_head"},
			status: ckpt.Pass, dtype: `model_type "llama" (FP8 module table of LlamaForCausalLM, no architecture profile): none of the 14 weights`},
		{name: "llama uncovered down_proj", modelType: "llama", class: "LlamaForCausalLM", notConvert: []string{"lm_head"},
			edit:  map[string]numfmt.DType{"model.layers.1.mlp.down_proj.weight": bf},
			fails: []string{linearWhy("model.layers.1.mlp.down_proj.weight", noScale)}},
		{name: "llama down_proj kept by a suffix entry", modelType: "llama", class: "LlamaForCausalLM", notConvert: []string{"lm_head", "mlp.down_proj"},
			edit:   map[string]numfmt.DType{"model.layers.0.mlp.down_proj.weight": bf, "model.layers.1.mlp.down_proj.weight": bf},
			status: ckpt.Pass, dtype: "none of the 12 weights"},
		{name: "llama kept by a regex entry", modelType: "llama", class: "LlamaForCausalLM", notConvert: []string{"lm_head", `model\.layers\.1\..*`},
			edit:   toBF16("llama", "model.layers.1."),
			status: ckpt.Pass, dtype: "none of the 7 weights"},
		{name: "qwen3 list absent: lm_head kept, q_proj beside its scale", modelType: "qwen3", class: "Qwen3ForCausalLM",
			edit: map[string]numfmt.DType{"model.layers.0.self_attn.q_proj.weight": bf}, keepScale: true,
			fails: []string{strings.Replace(linearWhy("model.layers.0.self_attn.q_proj.weight", withScale),
				"modules_to_not_convert does", "modules_to_not_convert (absent: transformers keeps only lm_head) does", 1)}},
		{name: "qwen3 lm_head not kept", modelType: "qwen3", class: "Qwen3ForCausalLM", notConvert: []string{},
			fails: []string{linearWhy("lm_head.weight", noScale)}},
		{name: "qwen3_next linear attention and shared expert gate", modelType: "qwen3_next", class: "Qwen3NextForCausalLM", notConvert: []string{"lm_head"},
			edit: map[string]numfmt.DType{"model.layers.0.linear_attn.in_proj_ba.weight": bf, "model.layers.1.mlp.shared_expert_gate.weight": bf,
				"model.layers.0.mlp.gate.weight": bf},
			fails: []string{linearWhy("model.layers.0.linear_attn.in_proj_ba.weight", noScale), linearWhy("model.layers.1.mlp.shared_expert_gate.weight", noScale)}},
		{name: "qwen3_moe BF16 experts not kept", modelType: "qwen3_moe", class: "Qwen3MoeForCausalLM", notConvert: []string{"lm_head"},
			edit: map[string]numfmt.DType{"model.layers.1.mlp.experts.2.up_proj.weight": bf},
			fails: []string{"model.layers.1.mlp.experts.2.up_proj.weight is BF16, expected F8_E4M3 with a weight_scale_inv: quantization_config.modules_to_not_convert does not keep module " +
				"model.layers.1.mlp.experts unconverted, so transformers builds it as an FP8Experts and casts these BF16 values to F8_E4M3 codes " + noScale}},
		{name: "qwen3_moe BF16 experts kept", modelType: "qwen3_moe", class: "Qwen3MoeForCausalLM", notConvert: []string{"lm_head", "mlp.experts"},
			edit:   map[string]numfmt.DType{"model.layers.1.mlp.experts.2.up_proj.weight": bf},
			status: ckpt.Pass, dtype: "none of the 8 weights"},
		{name: "gpt_oss experts kept", modelType: "gpt_oss", class: "GptOssForCausalLM", notConvert: []string{"lm_head", "mlp.experts"},
			status: ckpt.Pass, dtype: "none of the 8 weights"},
		{name: "gpt_oss experts not kept", modelType: "gpt_oss", class: "GptOssForCausalLM", notConvert: []string{"lm_head"},
			fails: []string{gptOssWhy("0", "down_proj"), gptOssWhy("0", "gate_up_proj"), gptOssWhy("1", "down_proj"), gptOssWhy("1", "gate_up_proj")}},
		{name: "a model type the table does not know", modelType: "mistral", class: "MistralForCausalLM", notConvert: []string{"lm_head"},
			edit:   map[string]numfmt.DType{"model.layers.1.mlp.down_proj.weight": bf},
			status: ckpt.Skip, dtype: `not checked: which tensors of model_type "mistral" are the weights of modules transformers' FP8 quantizer converts is not known (no architecture profile; the FP8 module table knows gpt_oss, llama, qwen3, qwen3_moe, qwen3_next)`},
		{name: "every module kept", modelType: "llama", class: "LlamaForCausalLM", notConvert: []string{"model", "lm_head"},
			edit:   toBF16("llama", "model."),
			status: ckpt.Skip, dtype: `not checked: no tensor is the weight of a module transformers' FP8 quantizer converts in LlamaForCausalLM (model_type "llama": model.layers.N.* and lm_head.weight) that modules_to_not_convert does not keep`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			mt := tc.modelType
			if mt == "mistral" {
				mt = "llama" // Mistral's modules are Llama's
			}
			var drop []string
			if !tc.keepScale {
				for n := range tc.edit {
					drop = append(drop, n)
				}
			}
			var dir string
			if tc.keepScale {
				dir = familyDirKeepScales(t, tc.modelType, tc.class, mt, tc.edit, tc.notConvert)
			} else {
				dir = familyDir(t, tc.modelType, tc.class, familyTensors(mt, tc.edit), tc.notConvert, drop...)
			}
			r := runVerify(t, dir)
			var dtype []ckpt.Finding
			var others []ckpt.Finding
			for _, ch := range r.Checks {
				if ch.ID == verify.ArchDType {
					dtype = append(dtype, ch)
				} else if ch.Status == ckpt.Fail && ch.ID != verify.FP8ScaleOrphan {
					others = append(others, ch)
				}
			}
			assert.Empty(t, others, "no failure but arch.dtype (and the orphan scale of a weight that kept it)")
			if tc.fails != nil {
				assert.False(t, r.OK)
				var got []string
				for _, ch := range dtype {
					require.Equal(t, ckpt.Fail, ch.Status, ch.Message)
					require.Len(t, ch.Tensors, 1)
					assert.True(t, strings.HasPrefix(ch.Message, ch.Tensors[0]+" is BF16"), ch.Message)
					got = append(got, ch.Message)
				}
				assert.Equal(t, tc.fails, got)
				return
			}
			assert.True(t, r.OK)
			require.Len(t, dtype, 1)
			assert.Equal(t, tc.status, dtype[0].Status)
			assert.Contains(t, dtype[0].Message, tc.dtype)
		})
	}
}

// gptOssWhy is the arch.dtype message of GPT-OSS's BF16 experts tensor p
// of layer l when modules_to_not_convert does not keep the experts.
func gptOssWhy(l, p string) string {
	m := "model.layers." + l + ".mlp.experts"
	return m + "." + p + " is BF16, expected F8_E4M3 with a weight_scale_inv or module " + m + " kept by quantization_config.modules_to_not_convert: " +
		"transformers builds it as an FP8Experts, which refuses GptOssForCausalLM's expert biases, so the model does not load"
}

// toBF16 is the edit that makes every F8_E4M3 weight of familyTensors
// whose name starts with prefix BF16.
func toBF16(modelType, prefix string) map[string]numfmt.DType {
	out := map[string]numfmt.DType{}
	for _, ft := range familyTensors(modelType, nil) {
		if ft.dtype == numfmt.F8E4M3 && strings.HasPrefix(ft.name, prefix) {
			out[ft.name] = numfmt.BF16
		}
	}
	return out
}

// familyDirKeepScales is familyDir of the edited tensors with the scales
// of the unedited FP8 weights kept (a BF16 weight beside its scale).
func familyDirKeepScales(t *testing.T, modelType, class, mt string, edit map[string]numfmt.DType, notConvert []string) string {
	t.Helper()
	var ts []familyTensor
	for _, ft := range familyTensors(mt, nil) {
		if _, ok := edit[ft.name]; ok {
			s := []int64{(ft.shape[0] + familyBlock - 1) / familyBlock, (ft.shape[1] + familyBlock - 1) / familyBlock}
			ts = append(ts, familyTensor{ft.name, edit[ft.name], ft.shape}, familyTensor{ckpt.ScaleName(ft.name), numfmt.F32, s})
			continue
		}
		ts = append(ts, ft)
	}
	return familyDir(t, modelType, class, ts, notConvert)
}

// TestVerifyFP8ModuleTableBF16: no FP8 module check runs on a checkpoint
// without a block-FP8 quantization_config (its BF16 Linears are what it
// declares): arch.dtype is the profile's skip, verify passes.
func TestVerifyFP8ModuleTableBF16(t *testing.T) {
	t.Parallel()
	var ts []familyTensor
	for _, ft := range familyTensors("llama", nil) {
		ts = append(ts, familyTensor{ft.name, numfmt.BF16, ft.shape})
	}
	dir := familyDir(t, "llama", "LlamaForCausalLM", ts, nil)
	raw, err := json.Marshal(map[string]any{"model_type": "llama", "architectures": []string{"LlamaForCausalLM"}, "dtype": "bfloat16"})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644))
	r := runVerify(t, dir)
	assert.True(t, r.OK)
	var dtype []ckpt.Finding
	for _, ch := range r.Checks {
		if ch.ID == verify.ArchDType {
			dtype = append(dtype, ch)
		}
	}
	require.Len(t, dtype, 1)
	assert.Equal(t, ckpt.Skip, dtype[0].Status)
	assert.Equal(t, `no architecture profile for model_type "llama", architectures [LlamaForCausalLM] (known: qwen3_5)`, dtype[0].Message)
}

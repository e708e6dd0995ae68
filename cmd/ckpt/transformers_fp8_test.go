package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeSmall writes synth.Small edited by edit (writeSynth).
func writeSmall(t *testing.T, edit func(*synth.Options)) string {
	t.Helper()
	o := synth.Small()
	edit(&o)
	return writeSynth(t, o)
}

// orphanScales are the weight_scale_inv transformers' FineGrainedFP8
// quantizer writes beside the BF16 in_proj_a/b of the Small model (4 rows:
// not a multiple of the 32-row block).
var orphanScales = []string{
	"model.language_model.layers.0.linear_attn.in_proj_a.weight_scale_inv", "model.language_model.layers.0.linear_attn.in_proj_b.weight_scale_inv",
	"model.language_model.layers.1.linear_attn.in_proj_a.weight_scale_inv", "model.language_model.layers.1.linear_attn.in_proj_b.weight_scale_inv",
	"model.language_model.layers.2.linear_attn.in_proj_a.weight_scale_inv", "model.language_model.layers.2.linear_attn.in_proj_b.weight_scale_inv",
}

// TestMapOrphanScales (issue 33, behaviour 4): map names the
// weight_scale_inv beside a BF16 weight among the ignored tensors with its
// reason and a warning, instead of leaving it in no list of a "complete"
// plan; every tensor of the checkpoint is in an entry, the ignored list or
// the unmapped list.
func TestMapOrphanScales(t *testing.T) {
	t.Parallel()
	src := writeSmall(t, func(o *synth.Options) { o.TransformersFP8 = true })
	code, out, stderr := runApp(t, "map", src, "--mesh", "1x2", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res mapping.Document
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Contains(t, stderr, "6 weight_scale_inv beside weights that are not F8_E4M3 are left out, their weights mapped unscaled (verify fails them as fp8.scale_orphan)")
	ignored := map[string]string{}
	for _, ig := range res.Ignored {
		ignored[ig.Name] = ig.Reason
	}
	for _, s := range orphanScales {
		assert.Contains(t, ignored[s], "weight_scale_inv of a weight that is BF16, not F8_E4M3: not applied, the weight is mapped as it is", s)
	}
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	home := map[string]bool{}
	for _, e := range res.Entries {
		for _, s := range e.Sources {
			home[s] = true
			if w, ok := c.Lookup(s); ok && w.DType == numfmt.F8E4M3 {
				home[ckpt.ScaleName(s)] = true // dequantised with it
			}
		}
	}
	for n := range ignored {
		home[n] = true
	}
	for _, n := range res.Unmapped {
		home[n] = true
	}
	for _, tn := range c.Tensors {
		assert.True(t, home[tn.Name], "%s is in no entry, ignored list or unmapped list", tn.Name)
	}

	code, out, _ = runApp(t, "map", src, "--mesh", "1x2", "--summary")
	require.Equal(t, 0, code)
	assert.Contains(t, collapseSpaces(out), "6 weight_scale_inv of a weight that is BF16, not F8_E4M3: not applied")
}

// TestExtractNeverWritesAScale (issue 33, behaviour 4): under --dtype a
// scale is consumed by its weight or left out with a warning saying why,
// never written as a value; a selection of scales alone writes nothing.
func TestExtractNeverWritesAScale(t *testing.T) {
	t.Parallel()
	src := writeSmall(t, func(o *synth.Options) { o.TransformersFP8 = true })
	dir := t.TempDir()
	out := filepath.Join(dir, "gdn.safetensors")
	code, stdout, stderr := runApp(t, "extract", src, "--match", "**layers.0.linear_attn.in_proj_**", "--dtype", "bf16", "--out", out, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var rep struct {
		Tensors  []struct{ Name, DType string } `json:"tensors"`
		Warnings []string                       `json:"warnings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	c, err := ckpt.Open(context.Background(), out, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, []string{
		"model.language_model.layers.0.linear_attn.in_proj_a.weight", "model.language_model.layers.0.linear_attn.in_proj_b.weight",
		"model.language_model.layers.0.linear_attn.in_proj_qkv.weight", "model.language_model.layers.0.linear_attn.in_proj_z.weight",
	}, c.Names(), "the weights, dequantised or as they are; no scale")
	for _, s := range orphanScales[:2] {
		want := `tensor "` + s + `" (weight_scale_inv) is a quantisation scale, not a value: left out of the --dtype bf16 output; its weight "` +
			strings.TrimSuffix(s, "_scale_inv") + `" is BF16, not quantised: nothing applies it`
		assert.Contains(t, rep.Warnings, want)
		assert.Contains(t, stderr, want)
	}

	code, _, stderr = runApp(t, "extract", src, "--match", "**.weight_scale_inv", "--dtype", "f32", "--out", filepath.Join(dir, "scales.safetensors"), "--progress", "none")
	assert.Equal(t, 2, code, "a selection that is all scales selects nothing to write")
	assert.Contains(t, stderr, "but quantisation scales, which are not values under --dtype f32")

	// Kept as stored (--dtype keep), a scale is still written as it is.
	code, _, stderr = runApp(t, "extract", src, "--match", "**layers.0.linear_attn.in_proj_a.**", "--out", filepath.Join(dir, "keep.safetensors"), "--progress", "none")
	require.Equal(t, 0, code, stderr)
	k, err := ckpt.Open(context.Background(), filepath.Join(dir, "keep.safetensors"), ckpt.Options{})
	require.NoError(t, err)
	defer k.Close()
	assert.Len(t, k.Tensors, 2)
}

// TestVerifyNotConvertAsTransformers (issue 33, behaviour 6): an entry
// "visual" keeps model.visual itself but converts its children, as
// transformers' should_convert_module does, so the FP8 checkpoint
// transformers writes with that list (vision Linears and lm_head FP8)
// passes verify; the same checkpoint whose list no longer keeps in_proj_b
// fails, naming the BF16 Linear transformers would build as FP8.
func TestVerifyNotConvertAsTransformers(t *testing.T) {
	t.Parallel()
	list := []string{"visual", "in_proj_a", "in_proj_b"} // suffixes: keep the 4-row GDN projections
	src := writeSmall(t, func(o *synth.Options) { o.TransformersFP8, o.NotConvert = true, list })
	code, rep, stderr := verifyJSON(t, "verify", src)
	require.Equal(t, 0, code, stderr)
	byID := map[ckpt.FindingID][]ckpt.Finding{}
	for _, ch := range rep.Checks {
		byID[ch.ID] = append(byID[ch.ID], ch)
		assert.NotEqual(t, ckpt.Fail, ch.Status, "%s: %s", ch.ID, ch.Message)
	}
	require.Len(t, byID[verify.FP8NotConvert], 1)
	assert.Equal(t, ckpt.Pass, byID[verify.FP8NotConvert][0].Status)
	assert.Contains(t, byID[verify.ArchDType][0].Message, "every expected tensor has an accepted dtype")

	uncovered := copyDir(t, src)
	editJSON(t, filepath.Join(uncovered, "config.json"), func(m map[string]any) {
		m["quantization_config"].(map[string]any)["modules_to_not_convert"] = []any{"visual", "in_proj_a"}
	})
	code, rep, _ = verifyJSON(t, "verify", uncovered)
	assert.Equal(t, 1, code)
	var fails []ckpt.Finding
	for _, ch := range rep.Checks {
		if ch.Status == ckpt.Fail {
			fails = append(fails, ch)
		}
	}
	require.Len(t, fails, 3, "one per in_proj_b")
	for i, ch := range fails {
		w := "model.language_model.layers." + string(rune('0'+i)) + ".linear_attn.in_proj_b.weight"
		assert.Equal(t, verify.ArchDType, ch.ID)
		assert.Equal(t, []string{w}, ch.Tensors)
		assert.Equal(t, w+" is BF16, expected F8_E4M3 with a weight_scale_inv: quantization_config.modules_to_not_convert does not keep module "+
			strings.TrimSuffix(w, ".weight")+" unconverted, so transformers builds it as an FP8Linear and casts these BF16 values to F8_E4M3 codes with a scale it initialises itself (there is none)", ch.Message)
	}
	code, out, _ := runApp(t, "verify", uncovered, "--only-failed")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "FAILED: 3 failed")
}

// writeLlamaFP8 writes a two-layer LlamaForCausalLM FineGrainedFP8
// checkpoint as transformers 5.23.0 saves one (every Linear F8_E4M3 with
// an F32 weight_scale_inv, lm_head BF16 and listed in
// modules_to_not_convert), but with the weights named in bf16 stored BF16
// without a scale; modelType replaces "llama" in its config.
func writeLlamaFP8(t *testing.T, modelType string, bf16 ...string) string {
	t.Helper()
	const h, block = 64, 32
	var mts []ckpt.MemTensor
	add := func(name string, dt numfmt.DType, shape ...int64) {
		for _, b := range bf16 {
			if b == name {
				dt = numfmt.BF16
			}
		}
		n := int64(dt.Bits() / 8)
		for _, d := range shape {
			n *= d
		}
		mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: dt, Shape: shape}, Data: make([]byte, n)})
		if dt == numfmt.F8E4M3 {
			s := []int64{shape[0] / block, shape[1] / block}
			mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(name), DType: numfmt.F32, Shape: s}, Data: make([]byte, s[0]*s[1]*4)})
		}
	}
	add("model.embed_tokens.weight", numfmt.BF16, 128, h)
	for _, p := range []string{"model.layers.0.", "model.layers.1."} {
		add(p+"input_layernorm.weight", numfmt.BF16, h)
		add(p+"post_attention_layernorm.weight", numfmt.BF16, h)
		for _, m := range []string{"q_proj", "k_proj", "v_proj", "o_proj"} {
			add(p+"self_attn."+m+".weight", numfmt.F8E4M3, h, h)
		}
		add(p+"mlp.gate_proj.weight", numfmt.F8E4M3, 2*h, h)
		add(p+"mlp.up_proj.weight", numfmt.F8E4M3, 2*h, h)
		add(p+"mlp.down_proj.weight", numfmt.F8E4M3, h, 2*h)
	}
	add("model.norm.weight", numfmt.BF16, h)
	add("lm_head.weight", numfmt.BF16, 128, h)
	dir := t.TempDir()
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), mts, map[string]string{"format": "pt"}))
	cfg, err := json.Marshal(map[string]any{"model_type": modelType, "architectures": []string{"LlamaForCausalLM"}, "dtype": "bfloat16",
		"hidden_size": h, "num_hidden_layers": 2, "quantization_config": map[string]any{"quant_method": "fp8", "activation_scheme": "dynamic",
			"weight_block_size": []int{block, block}, "modules_to_not_convert": []string{"lm_head"}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	return dir
}

// TestVerifyUncoveredLinearWithoutProfile (issue 33, behaviour 6, for the
// families without an architecture profile): an FP8 Llama checkpoint whose
// down_proj is BF16 without a scale and not covered by
// modules_to_not_convert fails verify (exit 1) with one arch.dtype finding
// naming the weight and the FP8Linear transformers builds for it, in text
// and JSON; the checkpoint as transformers writes it passes; a model type
// the FP8 module table does not know is not checked, and says so.
func TestVerifyUncoveredLinearWithoutProfile(t *testing.T) {
	t.Parallel()
	const w = "model.layers.1.mlp.down_proj.weight"
	want := w + " is BF16, expected F8_E4M3 with a weight_scale_inv: quantization_config.modules_to_not_convert does not keep module model.layers.1.mlp.down_proj unconverted, " +
		"so transformers builds it as an FP8Linear and casts these BF16 values to F8_E4M3 codes with a scale it initialises itself (there is none)"
	dtypeOf := func(rep verify.Result) []ckpt.Finding {
		var out []ckpt.Finding
		for _, ch := range rep.Checks {
			if ch.ID == verify.ArchDType {
				out = append(out, ch)
			}
		}
		return out
	}

	code, rep, stderr := verifyJSON(t, "verify", writeLlamaFP8(t, "llama"))
	require.Equal(t, 0, code, stderr)
	assert.True(t, rep.OK)
	require.Len(t, dtypeOf(rep), 1)
	assert.Equal(t, ckpt.Pass, dtypeOf(rep)[0].Status)
	assert.Equal(t, `model_type "llama" (FP8 module table of LlamaForCausalLM, no architecture profile): none of the 14 weights of modules transformers' FP8 quantizer converts and modules_to_not_convert does not keep is stored as a float (BF16, F16, F32, F64)`, dtypeOf(rep)[0].Message)

	bad := writeLlamaFP8(t, "llama", w)
	code, rep, _ = verifyJSON(t, "verify", bad)
	assert.Equal(t, 1, code)
	assert.False(t, rep.OK)
	fails := rep.Failed()
	require.Len(t, fails, 1)
	assert.Equal(t, verify.ArchDType, fails[0].ID)
	assert.Equal(t, []string{w}, fails[0].Tensors)
	assert.Equal(t, want, fails[0].Message)
	code, out, _ := runApp(t, "verify", bad, "--only-failed")
	assert.Equal(t, 1, code)
	assert.Contains(t, out, want)
	assert.Contains(t, out, "FAILED: 1 failed")

	code, rep, stderr = verifyJSON(t, "verify", writeLlamaFP8(t, "mistral", w))
	require.Equal(t, 0, code, stderr)
	require.Len(t, dtypeOf(rep), 1)
	assert.Equal(t, ckpt.Skip, dtypeOf(rep)[0].Status)
	assert.Equal(t, `not checked: which tensors of model_type "mistral" are the weights of modules transformers' FP8 quantizer converts is not known (no architecture profile; the FP8 module table knows gpt_oss, llama, qwen3, qwen3_moe, qwen3_next), so a BF16 weight modules_to_not_convert does not keep is not found here`, dtypeOf(rep)[0].Message)
}

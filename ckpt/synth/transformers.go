package synth

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// The layouts transformers 5.23.0 writes, as observed from its own
// save_pretrained on the Small model (Qwen3_5ForConditionalGeneration,
// torch on the CPU):
//
//   - TransformersFP8: FineGrainedFP8Config quantising a bf16 model on load
//     (src/transformers/integrations/finegrained_fp8.py@v5.23.0,
//     replace_with_fp8_linear and Fp8Quantize). Every nn.Linear whose module
//     should_convert_module converts becomes an FP8Linear: its weight
//     F8_E4M3 with an F32 weight_scale_inv [ceil(R/bm), ceil(C/bn)]; a
//     Linear whose rows or columns do not divide the block is left as it
//     was (Fp8Quantize passes it through) but its FP8Linear still has the
//     F32 weight_scale_inv parameter, which save_pretrained writes beside
//     the BF16 weight, uninitialised (torch.empty; this package writes
//     1.0). Without modules_to_not_convert, lm_head stays BF16
//     (get_keys_to_not_convert, quantizers/base.py@v5.23.0); a list given
//     replaces that default. transformers never writes mtp.*: the MTP head
//     is attached in the release layout.
//   - Resaved: config.json after from_pretrained → save_pretrained with no
//     change (configuration_utils.py, modeling_rope_utils.py and
//     models/qwen3_5/configuration_qwen3_5.py@v5.23.0).

// transformersConverts reports whether transformers' FP8 quantizer makes t
// an FP8Linear (for mtp.*, which it does not build, the release's rule).
func transformersConverts(o Options, t arch.Tensor) bool {
	if t.Group == "mtp" {
		return isFP8Module(t)
	}
	if !t.Linear {
		return false
	}
	list := o.NotConvert
	if list == nil {
		list = []string{"lm_head"}
	}
	_, kept := quant.NewNotConvertList(list).Match(strings.TrimSuffix(t.Name, ".weight"))
	return !kept
}

// orphanScale is the weight_scale_inv transformers writes beside a Linear
// it could not quantise, in the dtype of its scales (F32, or F8_E8M0 for
// scale_fmt "ue8m0").
func orphanScale(t arch.Tensor, bm, bn int64, sd numfmt.DType) ckpt.MemTensor {
	sr, sc := (t.Shape[0]+bm-1)/bm, (t.Shape[1]+bn-1)/bn
	ones := make([]float32, sr*sc)
	for i := range ones {
		ones[i] = 1
	}
	data := make([]byte, int64(len(ones))*int64(sd.Bits())/8)
	if err := numfmt.EncodeFloat32(sd, ones, data); err != nil {
		panic(err) // a scale dtype: cannot happen
	}
	return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(t.Name), DType: sd, Shape: []int64{sr, sc}}, Data: data}
}

// Resaved returns cfg (a Config) as transformers 5.23.0 writes it back
// after loading it: the keys it adds and moves, written out here as
// observed (not derived from ckpt's own reading of transformers' config
// classes, which the tests hold against this).
func Resaved(cfg map[string]any) map[string]any {
	out := cloneJSON(cfg)
	out["dtype"] = "bfloat16"
	out["transformers_version"] = "5.23.0"
	for k, v := range map[string]any{"image_token_id": 248056, "video_token_id": 248057, "vision_start_token_id": 248053, "vision_end_token_id": 248054} {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	if tc, ok := out["text_config"].(map[string]any); ok {
		for k, v := range map[string]any{"attention_dropout": json.Number("0.0"), "initializer_range": 0.02, "use_cache": true,
			"bos_token_id": nil, "eos_token_id": nil, "pad_token_id": nil} {
			if _, ok := tc[k]; !ok {
				tc[k] = v
			}
		}
		rp, _ := tc["rope_parameters"].(map[string]any)
		if rp == nil {
			rp = map[string]any{}
		}
		if _, ok := rp["rope_theta"]; !ok {
			rp["rope_theta"] = json.Number("10000.0")
			if v, ok := tc["rope_theta"]; ok {
				rp["rope_theta"] = v
			}
		}
		if _, ok := rp["partial_rotary_factor"]; !ok {
			rp["partial_rotary_factor"] = 0.25
			if v, ok := tc["partial_rotary_factor"]; ok {
				rp["partial_rotary_factor"] = v
			}
		}
		if _, ok := rp["rope_type"]; !ok {
			rp["rope_type"] = "default"
		}
		delete(tc, "rope_theta")
		delete(tc, "partial_rotary_factor")
		tc["rope_parameters"] = rp
	}
	if vc, ok := out["vision_config"].(map[string]any); ok {
		vc["dtype"] = "bfloat16"
		for k, v := range map[string]any{"hidden_act": "gelu_pytorch_tanh", "initializer_range": 0.02,
			"rope_parameters": map[string]any{"rope_theta": json.Number("10000.0"), "rope_type": "axial"}} {
			if _, ok := vc[k]; !ok {
				vc[k] = v
			}
		}
	}
	return out
}

// cloneJSON deep-copies a config through JSON (numbers as written).
func cloneJSON(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // a generated config: cannot happen
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out map[string]any
	if err := d.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

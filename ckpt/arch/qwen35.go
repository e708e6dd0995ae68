package arch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Tensor is one expected tensor.
type Tensor struct {
	Name  string
	Shape []int64
	DType numfmt.DType
	// Alt lists every accepted dtype (DType included).
	Alt []numfmt.DType
	// FP8 marks weights stored as F8_E4M3 with a block scale in an FP8
	// release; ScaleOf names the weight of a scale tensor.
	FP8     bool
	ScaleOf string
	Group   string // "text", "mtp" or "visual"
	Role    string // embedding, vector, linear, conv, ssm_param, gated_norm, lm_head, vision, fp8_block_scale
	// Linear marks the weight of an nn.Linear that transformers builds
	// (Qwen3_5ForConditionalGeneration: the text and vision projections
	// and lm_head; not mtp.*, which transformers does not build): the
	// modules its FP8 quantizer converts unless modules_to_not_convert
	// keeps them (TensorsExcept).
	Linear bool
	// Keys names the config keys (JSON paths) that determine the shape.
	Keys []string
	// DimKeys names, for each dimension of Shape, the config keys its
	// value is computed from (nil for a constant dimension).
	DimKeys [][]string
}

// Qwen35 holds the settings of a Qwen3.5-style hybrid config.
type Qwen35 struct {
	TextPrefix   string // "model.language_model."
	TextPath     string // "text_config." for the nested form, "" for flat
	Hidden       int64
	Intermediate int64
	Layers       int64
	LayerTypes   []string // "linear_attention" / "full_attention", one per layer
	Heads        int64
	KVHeads      int64
	HeadDim      int64
	LinKHeads    int64
	LinVHeads    int64
	LinKDim      int64
	LinVDim      int64
	ConvKernel   int64
	Vocab        int64
	MTPLayers    int64
	TieEmbed     bool
	Vision       *Vision
	// MoE is set for a sparse mixture-of-experts config (qwen3_5_moe:
	// num_experts > 0); its layers' MLPs are then MoELayer's.
	MoE *MoE
}

// MoE holds the settings of a Qwen3.5-MoE (Qwen3-Next style) sparse MLP.
type MoE struct {
	Experts            int64 // num_experts
	TopK               int64 // num_experts_per_tok
	Intermediate       int64 // moe_intermediate_size
	SharedIntermediate int64 // shared_expert_intermediate_size (0: no shared expert)
	SparseStep         int64 // decoder_sparse_step (1 when absent)
	MLPOnly            map[int64]bool
	// PerExpert: the experts are stored one tensor per expert and
	// projection (mlp.experts.{i}.gate_proj.weight, as transformers saves
	// them), not fused (mlp.experts.gate_up_proj [E, 2I, H] and
	// mlp.experts.down_proj [E, H, I], the releases' layout). The config
	// does not say which: DetectExpertLayout reads it off the tensors.
	PerExpert bool
}

// MoELayer reports whether decoder layer l has the sparse MoE MLP: the
// config has experts, l is not in mlp_only_layers and (l+1) is a multiple
// of decoder_sparse_step — the rule of transformers' Qwen3-Next and of
// tt-metal's qwen36 (Qwen36ModelArgs.is_moe_layer,
// models/demos/blackhole/qwen36/tt/model_config.py@09c98eda).
func (q *Qwen35) MoELayer(l int64) bool {
	m := q.MoE
	if m == nil || m.Experts <= 0 || m.MLPOnly[l] {
		return false
	}
	return (l+1)%max(m.SparseStep, 1) == 0
}

// DetectExpertLayout sets q.MoE.PerExpert when c stores its experts one
// tensor per expert (a name with .mlp.experts.<digits>.).
func (q *Qwen35) DetectExpertLayout(c *ckpt.Checkpoint) {
	if q.MoE == nil {
		return
	}
	for _, t := range c.Tensors {
		if _, rest, ok := strings.Cut(t.Name, ".mlp.experts."); ok {
			if i := strings.IndexByte(rest, '.'); i > 0 {
				if _, err := strconv.Atoi(rest[:i]); err == nil {
					q.MoE.PerExpert = true
					return
				}
			}
		}
	}
}

// Vision holds the vision tower settings.
type Vision struct {
	Depth, Hidden, Intermediate, InChannels, Patch, TemporalPatch, Merge, PosEmbeds, OutHidden int64
}

// Is reports whether a config describes this architecture.
func Is(cfg *ckpt.Config) bool {
	if cfg == nil {
		return false
	}
	switch cfg.ModelType() {
	case "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text":
		return true
	}
	for _, a := range cfg.Architectures() {
		switch a {
		case "Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM":
			return true
		}
	}
	return false
}

// ParseQwen35 reads the settings from a nested or flat config. Missing
// required keys are reported together, by their JSON path.
func ParseQwen35(cfg *ckpt.Config) (*Qwen35, error) {
	if cfg == nil {
		return nil, fmt.Errorf("no config.json: the qwen3_5 profile derives the expected tensors from it")
	}
	tc := cfg.Text()
	q := &Qwen35{TextPath: cfg.TextPath(), TextPrefix: "model.language_model."}
	if mt := cfg.ModelType(); q.TextPath == "" && (mt == "qwen3_5_text" || mt == "qwen3_5_moe_text") {
		q.TextPrefix = "model."
	}
	var missing []string
	get := func(key string, dst *int64, def int64, required bool) {
		if v, ok := jsonval.Int(tc[key]); ok {
			*dst = v
			return
		}
		if required {
			missing = append(missing, q.TextPath+key)
		}
		*dst = def
	}
	get("hidden_size", &q.Hidden, 0, true)
	var experts int64
	get("num_experts", &experts, 0, false)
	if experts > 0 {
		m := &MoE{Experts: experts, MLPOnly: map[int64]bool{}}
		get("num_experts_per_tok", &m.TopK, 0, false)
		get("moe_intermediate_size", &m.Intermediate, 0, true)
		get("shared_expert_intermediate_size", &m.SharedIntermediate, 0, false)
		get("decoder_sparse_step", &m.SparseStep, 1, false)
		for _, l := range jsonval.Ints(tc["mlp_only_layers"]) {
			m.MLPOnly[l] = true
		}
		q.MoE = m
	}
	// A MoE config has no dense intermediate_size unless some layer is
	// dense (mlp_only_layers, decoder_sparse_step > 1).
	get("intermediate_size", &q.Intermediate, 0, experts <= 0)
	get("num_hidden_layers", &q.Layers, 0, true)
	get("num_attention_heads", &q.Heads, 0, true)
	get("num_key_value_heads", &q.KVHeads, 0, true)
	get("head_dim", &q.HeadDim, 0, false)
	get("linear_num_key_heads", &q.LinKHeads, 0, true)
	get("linear_num_value_heads", &q.LinVHeads, 0, true)
	get("linear_key_head_dim", &q.LinKDim, 0, true)
	get("linear_value_head_dim", &q.LinVDim, 0, true)
	get("linear_conv_kernel_dim", &q.ConvKernel, 4, false)
	get("vocab_size", &q.Vocab, 0, true)
	get("mtp_num_hidden_layers", &q.MTPLayers, 0, false)
	if q.HeadDim == 0 && q.Heads > 0 {
		q.HeadDim = q.Hidden / q.Heads
	}
	q.TieEmbed, _ = cfg.TieWordEmbeddings()
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: qwen3_5 config lacks %v", cfg.File, missing)
	}
	if q.Layers < 0 || q.Layers > 100000 {
		return nil, fmt.Errorf("%s: %snum_hidden_layers = %d is not plausible", cfg.File, q.TextPath, q.Layers)
	}
	if lt := jsonval.Strings(tc["layer_types"]); lt != nil {
		if int64(len(lt)) != q.Layers {
			return nil, fmt.Errorf("%s: %slayer_types has %d entries but num_hidden_layers is %d", cfg.File, q.TextPath, len(lt), q.Layers)
		}
		q.LayerTypes = lt
	} else {
		interval := int64(4)
		if v, ok := jsonval.Int(tc["full_attention_interval"]); ok && v > 0 {
			interval = v
		}
		for i := int64(0); i < q.Layers; i++ {
			if (i+1)%interval == 0 {
				q.LayerTypes = append(q.LayerTypes, "full_attention")
			} else {
				q.LayerTypes = append(q.LayerTypes, "linear_attention")
			}
		}
	}
	if vc, ok := cfg.Raw["vision_config"].(map[string]any); ok {
		v := &Vision{}
		vget := func(key string, dst *int64, def int64) {
			if n, ok := jsonval.Int(vc[key]); ok {
				*dst = n
			} else {
				*dst = def
			}
		}
		vget("depth", &v.Depth, 0)
		vget("hidden_size", &v.Hidden, 0)
		vget("intermediate_size", &v.Intermediate, 0)
		vget("in_channels", &v.InChannels, 3)
		vget("patch_size", &v.Patch, 16)
		vget("temporal_patch_size", &v.TemporalPatch, 2)
		vget("spatial_merge_size", &v.Merge, 2)
		vget("num_position_embeddings", &v.PosEmbeds, 0)
		vget("out_hidden_size", &v.OutHidden, q.Hidden)
		if v.Depth > 0 && v.Hidden > 0 {
			q.Vision = v
		}
	}
	return q, nil
}

// Tensors lists the expected tensors in a deterministic order (text, mtp,
// visual). With fp8, the large projections are F8_E4M3 and each is followed
// by its weight_scale_inv of shape [ceil(R/bm), ceil(C/bn)].
func (q *Qwen35) Tensors(fp8 bool, bm, bn int64) []Tensor {
	return q.TensorsExcept(fp8, bm, bn, nil)
}

// TensorsExcept is Tensors for an FP8 checkpoint whose
// quantization_config keeps some modules unconverted (notConvert, on the
// module name: the weight's name without ".weight"). With a notConvert,
// the modules are those transformers' FP8 quantizer converts: every Linear
// (Tensor.Linear: text and vision projections, lm_head) is expected
// F8_E4M3 with a scale unless notConvert keeps it, and an MTP projection
// (which transformers does not build) when the release converts it and
// notConvert does not keep it. A nil notConvert is the release's
// convention: the large text and MTP projections are FP8, in_proj_a/b,
// mtp.fc, lm_head and the vision tower BF16.
func (q *Qwen35) TensorsExcept(fp8 bool, bm, bn int64, notConvert func(module string) bool) []Tensor {
	var out []Tensor
	tp := q.TextPath
	bf := []numfmt.DType{numfmt.BF16}
	add := addFunc(func(group, name, role string, shape []int64, fp8able bool, alt []numfmt.DType, keys ...string) {
		dimKeys := splitDimKeys(len(shape), keys)
		t := Tensor{Name: name, Shape: shape, DType: numfmt.BF16, Alt: alt, Group: group, Role: role, Keys: flatKeys(dimKeys), DimKeys: dimKeys}
		if t.Alt == nil {
			t.Alt = bf
		}
		t.Linear = group != "mtp" && (role == "linear" || role == "lm_head" || group == "visual" && isVisionLinear(name))
		if notConvert != nil {
			kept := notConvert(strings.TrimSuffix(name, ".weight"))
			switch {
			case t.Linear:
				fp8able = !kept
			case fp8able && kept:
				fp8able = false
			}
		}
		if fp8 && fp8able {
			t.DType, t.Alt, t.FP8 = numfmt.F8E4M3, []numfmt.DType{numfmt.F8E4M3}, true
			out = append(out, t)
			scale := []int64{ceil(shape[0], bm), ceil(shape[1], bn)}
			if len(shape) == 3 { // fused experts [E, out, in]: one block grid per expert
				scale = []int64{shape[0], ceil(shape[1], bm), ceil(shape[2], bn)}
			}
			out = append(out, Tensor{Name: ckpt.ScaleName(name), Shape: scale,
				DType: numfmt.BF16, Alt: []numfmt.DType{numfmt.BF16, numfmt.F32, numfmt.F16}, ScaleOf: name, Group: group, Role: "fp8_block_scale", Keys: t.Keys,
				DimKeys: dimKeys})
			return
		}
		out = append(out, t)
	})
	H, P := q.Hidden, q.TextPrefix
	K, Vd := q.LinKHeads*q.LinKDim, q.LinVHeads*q.LinVDim
	kH, kI, kV := tp+"hidden_size", tp+"intermediate_size", tp+"vocab_size"
	add("text", P+"embed_tokens.weight", "embedding", []int64{q.Vocab, H}, false, nil, kV, sep, kH)
	attnLayer := func(group, pre string) {
		add(group, pre+"self_attn.q_proj.weight", "linear", []int64{2 * q.Heads * q.HeadDim, H}, true, nil, tp+"num_attention_heads", tp+"head_dim", sep, kH)
		add(group, pre+"self_attn.k_proj.weight", "linear", []int64{q.KVHeads * q.HeadDim, H}, true, nil, tp+"num_key_value_heads", tp+"head_dim", sep, kH)
		add(group, pre+"self_attn.v_proj.weight", "linear", []int64{q.KVHeads * q.HeadDim, H}, true, nil, tp+"num_key_value_heads", tp+"head_dim", sep, kH)
		add(group, pre+"self_attn.o_proj.weight", "linear", []int64{H, q.Heads * q.HeadDim}, true, nil, kH, sep, tp+"num_attention_heads", tp+"head_dim")
		add(group, pre+"self_attn.q_norm.weight", "vector", []int64{q.HeadDim}, false, nil, tp+"head_dim")
		add(group, pre+"self_attn.k_norm.weight", "vector", []int64{q.HeadDim}, false, nil, tp+"head_dim")
	}
	common := func(group, pre string, moe bool) {
		add(group, pre+"input_layernorm.weight", "vector", []int64{H}, false, nil, kH)
		add(group, pre+"post_attention_layernorm.weight", "vector", []int64{H}, false, nil, kH)
		if moe {
			q.moeMLP(add, group, pre)
			return
		}
		add(group, pre+"mlp.gate_proj.weight", "linear", []int64{q.Intermediate, H}, true, nil, kI, sep, kH)
		add(group, pre+"mlp.up_proj.weight", "linear", []int64{q.Intermediate, H}, true, nil, kI, sep, kH)
		add(group, pre+"mlp.down_proj.weight", "linear", []int64{H, q.Intermediate}, true, nil, kH, sep, kI)
	}
	f32ok := []numfmt.DType{numfmt.BF16, numfmt.F32}
	for i := int64(0); i < q.Layers; i++ {
		pre := P + "layers." + strconv.FormatInt(i, 10) + "."
		common("text", pre, q.MoELayer(i))
		if q.LayerTypes[i] == "full_attention" {
			attnLayer("text", pre)
			continue
		}
		la := pre + "linear_attn."
		lk := []string{tp + "linear_num_key_heads", tp + "linear_key_head_dim", tp + "linear_num_value_heads", tp + "linear_value_head_dim"}
		add("text", la+"in_proj_qkv.weight", "linear", []int64{2*K + Vd, H}, true, nil, lk[0], lk[1], lk[2], lk[3], sep, kH)
		add("text", la+"in_proj_z.weight", "linear", []int64{Vd, H}, true, nil, lk[2], lk[3], sep, kH)
		add("text", la+"in_proj_b.weight", "linear", []int64{q.LinVHeads, H}, false, nil, lk[2], sep, kH)
		add("text", la+"in_proj_a.weight", "linear", []int64{q.LinVHeads, H}, false, nil, lk[2], sep, kH)
		add("text", la+"conv1d.weight", "conv", []int64{2*K + Vd, 1, q.ConvKernel}, false, nil, lk[0], lk[1], lk[2], lk[3], sep, sep, tp+"linear_conv_kernel_dim")
		add("text", la+"A_log", "ssm_param", []int64{q.LinVHeads}, false, f32ok, lk[2])
		add("text", la+"dt_bias", "ssm_param", []int64{q.LinVHeads}, false, nil, lk[2])
		add("text", la+"norm.weight", "gated_norm", []int64{q.LinVDim}, false, f32ok, lk[3])
		add("text", la+"out_proj.weight", "linear", []int64{H, Vd}, true, nil, kH, sep, lk[2], lk[3])
	}
	add("text", P+"norm.weight", "vector", []int64{H}, false, nil, kH)
	if !q.TieEmbed {
		add("text", "lm_head.weight", "lm_head", []int64{q.Vocab, H}, false, nil, kV, sep, kH)
	}
	if q.MTPLayers > 0 {
		add("mtp", "mtp.fc.weight", "linear", []int64{H, 2 * H}, false, nil, kH, sep, kH)
		add("mtp", "mtp.pre_fc_norm_embedding.weight", "vector", []int64{H}, false, nil, kH)
		add("mtp", "mtp.pre_fc_norm_hidden.weight", "vector", []int64{H}, false, nil, kH)
		for i := int64(0); i < q.MTPLayers; i++ {
			pre := "mtp.layers." + strconv.FormatInt(i, 10) + "."
			// The MTP decoder layer has the MLP of the text model's
			// layers (Qwen3.5-MoE: a sparse MoE block).
			common("mtp", pre, q.MoE != nil && q.MoELayer(q.firstFullAttention()))
			attnLayer("mtp", pre)
		}
		add("mtp", "mtp.norm.weight", "vector", []int64{H}, false, nil, kH)
	}
	if v := q.Vision; v != nil {
		vp, vk := "model.visual.", "vision_config."
		vh := vk + "hidden_size"
		add("visual", vp+"patch_embed.proj.weight", "vision", []int64{v.Hidden, v.InChannels, v.TemporalPatch, v.Patch, v.Patch}, false, nil, vh, sep,
			vk+"in_channels", sep, vk+"temporal_patch_size", sep, vk+"patch_size", sep, vk+"patch_size")
		add("visual", vp+"patch_embed.proj.bias", "vision", []int64{v.Hidden}, false, nil, vh)
		add("visual", vp+"pos_embed.weight", "vision", []int64{v.PosEmbeds, v.Hidden}, false, nil, vk+"num_position_embeddings", sep, vh)
		for b := int64(0); b < v.Depth; b++ {
			bp := vp + "blocks." + strconv.FormatInt(b, 10) + "."
			for _, n := range []string{"norm1", "norm2"} {
				add("visual", bp+n+".weight", "vision", []int64{v.Hidden}, false, nil, vh)
				add("visual", bp+n+".bias", "vision", []int64{v.Hidden}, false, nil, vh)
			}
			add("visual", bp+"attn.qkv.weight", "vision", []int64{3 * v.Hidden, v.Hidden}, false, nil, vh, sep, vh)
			add("visual", bp+"attn.qkv.bias", "vision", []int64{3 * v.Hidden}, false, nil, vh)
			add("visual", bp+"attn.proj.weight", "vision", []int64{v.Hidden, v.Hidden}, false, nil, vh, sep, vh)
			add("visual", bp+"attn.proj.bias", "vision", []int64{v.Hidden}, false, nil, vh)
			add("visual", bp+"mlp.linear_fc1.weight", "vision", []int64{v.Intermediate, v.Hidden}, false, nil, vk+"intermediate_size", sep, vh)
			add("visual", bp+"mlp.linear_fc1.bias", "vision", []int64{v.Intermediate}, false, nil, vk+"intermediate_size")
			add("visual", bp+"mlp.linear_fc2.weight", "vision", []int64{v.Hidden, v.Intermediate}, false, nil, vh, sep, vk+"intermediate_size")
			add("visual", bp+"mlp.linear_fc2.bias", "vision", []int64{v.Hidden}, false, nil, vh)
		}
		m := v.Hidden * v.Merge * v.Merge
		add("visual", vp+"merger.norm.weight", "vision", []int64{v.Hidden}, false, nil, vh)
		add("visual", vp+"merger.norm.bias", "vision", []int64{v.Hidden}, false, nil, vh)
		add("visual", vp+"merger.linear_fc1.weight", "vision", []int64{m, m}, false, nil, vh, vk+"spatial_merge_size", sep, vh, vk+"spatial_merge_size")
		add("visual", vp+"merger.linear_fc1.bias", "vision", []int64{m}, false, nil, vh, vk+"spatial_merge_size")
		add("visual", vp+"merger.linear_fc2.weight", "vision", []int64{v.OutHidden, m}, false, nil, vk+"out_hidden_size", sep, vh, vk+"spatial_merge_size")
		add("visual", vp+"merger.linear_fc2.bias", "vision", []int64{v.OutHidden}, false, nil, vk+"out_hidden_size")
	}
	return out
}

// isVisionLinear reports whether a vision tower tensor is the weight of
// an nn.Linear (Qwen3_5VisionBlock attn.qkv, attn.proj, mlp.linear_fc1/2;
// the patch merger's linear_fc1/2): patch_embed is a Conv3d, pos_embed an
// Embedding, the norms LayerNorms.
func isVisionLinear(name string) bool {
	for _, s := range []string{".attn.qkv.weight", ".attn.proj.weight", ".linear_fc1.weight", ".linear_fc2.weight"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// addFunc is TensorsExcept's add.
type addFunc func(group, name, role string, shape []int64, fp8able bool, alt []numfmt.DType, keys ...string)

// moeMLP lists a sparse MoE block's tensors (transformers'
// Qwen3_5MoeSparseMoeBlock): the router mlp.gate [E, H], the experts
// (fused gate_up_proj [E, 2I, H] and down_proj [E, H, I], or one
// gate/up/down projection per expert), the shared expert's projections
// and its sigmoid gate mlp.shared_expert_gate [1, H]. The router and the
// shared-expert gate are never FP8 (the FP8 releases keep them bf16).
func (q *Qwen35) moeMLP(add addFunc, group, pre string) {
	m, tp, H := q.MoE, q.TextPath, q.Hidden
	kH, kE, kI, kS := tp+"hidden_size", tp+"num_experts", tp+"moe_intermediate_size", tp+"shared_expert_intermediate_size"
	mp := pre + "mlp."
	add(group, mp+"gate.weight", "router", []int64{m.Experts, H}, false, nil, kE, sep, kH)
	if m.PerExpert {
		for e := int64(0); e < m.Experts; e++ {
			ep := mp + "experts." + strconv.FormatInt(e, 10) + "."
			add(group, ep+"gate_proj.weight", "linear", []int64{m.Intermediate, H}, true, nil, kI, sep, kH)
			add(group, ep+"up_proj.weight", "linear", []int64{m.Intermediate, H}, true, nil, kI, sep, kH)
			add(group, ep+"down_proj.weight", "linear", []int64{H, m.Intermediate}, true, nil, kH, sep, kI)
		}
	} else {
		add(group, mp+"experts.gate_up_proj", "experts", []int64{m.Experts, 2 * m.Intermediate, H}, true, nil, kE, sep, kI, sep, kH)
		add(group, mp+"experts.down_proj", "experts", []int64{m.Experts, H, m.Intermediate}, true, nil, kE, sep, kH, sep, kI)
	}
	if m.SharedIntermediate > 0 {
		add(group, mp+"shared_expert.gate_proj.weight", "linear", []int64{m.SharedIntermediate, H}, true, nil, kS, sep, kH)
		add(group, mp+"shared_expert.up_proj.weight", "linear", []int64{m.SharedIntermediate, H}, true, nil, kS, sep, kH)
		add(group, mp+"shared_expert.down_proj.weight", "linear", []int64{H, m.SharedIntermediate}, true, nil, kH, sep, kS)
		add(group, mp+"shared_expert_gate.weight", "router", []int64{1, H}, false, nil, sep, kH)
	}
}

// firstFullAttention is the index of the first full-attention layer (the
// layer the qwen36 MTP head is built as), -1 for none.
func (q *Qwen35) firstFullAttention() int64 {
	for i, t := range q.LayerTypes {
		if t == "full_attention" {
			return int64(i)
		}
	}
	return -1
}

// sep separates the keys of consecutive dimensions in the key lists of
// TensorsExcept.
const sep = "|"

// splitDimKeys splits a key list on sep into one list per dimension.
func splitDimKeys(rank int, keys []string) [][]string {
	out := make([][]string, rank)
	d := 0
	for _, k := range keys {
		if k == sep {
			d++
			continue
		}
		if d < rank {
			out[d] = append(out[d], k)
		}
	}
	return out
}

func flatKeys(dimKeys [][]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, ks := range dimKeys {
		for _, k := range ks {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

func ceil(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}

package synth

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"golang.org/x/sync/errgroup"
)

// Options shape a generated Qwen3.5-style hybrid checkpoint.
type Options struct {
	Hidden, Intermediate, Layers, Heads, KVHeads, HeadDim int
	LinKHeads, LinVHeads, LinKDim, LinVDim                int
	Vocab                                                 int
	MTP                                                   bool
	Vision                                                bool
	// VisionSize sizes the vision tower (with Vision); the zero value is
	// the default tiny tower (one block, hidden 32, 2 heads of 16,
	// intermediate 64), whose hidden size splits into whole tiles on no
	// mesh.
	VisionSize VisionSize
	FP8        bool
	Block      [2]int       // weight_block_size
	ScaleDType numfmt.DType // BF16 by default
	// Recipe quantises the FP8 weights (numfmt.FP8Ckpt by default). The
	// transformers recipes write the config of transformers'
	// FineGrainedFP8 save (TransformersFP8Config) with F32 scales, or
	// F8_E8M0 scales and scale_fmt "ue8m0" for FP8TransformersUE8M0 (its
	// powers of two as F32 when ScaleDType is F32, as DeepSeek-V3.1 stores
	// them); ScaleDType is ignored otherwise.
	Recipe         numfmt.FP8Recipe
	LayersPerShard int // 0: one single file
	Seed           uint64
	// FineTune makes the light fine-tune of the base with the same options:
	// a few tensors changed, the MTP head shipped as its bf16 master values
	// (no scales), everything else byte-identical.
	FineTune bool
	// FineTuneAll (with FineTune) perturbs every tensor instead, keeping
	// the base's dtypes: the worst case for diff, where nothing is identical.
	FineTuneAll bool
	// DType is the dtype of the unquantised tensors, as save_pretrained
	// writes a model of that dtype, declared as transformers 5 declares
	// it: the top-level dtype ("float32", ...; text_config.dtype too).
	// "" is BF16 declared as the releases do, in text_config.dtype only.
	DType numfmt.DType
	// TextOnly is the layout of transformers' Qwen3_5ForCausalLM: a flat
	// config (model_type qwen3_5_text, architectures
	// [Qwen3_5ForCausalLM]), the text model under model. instead of
	// model.language_model., no vision tower (Vision is ignored).
	TextOnly bool
	// Experts > 0 makes a Qwen3.5-MoE checkpoint (model_type qwen3_5_moe,
	// Qwen3_5MoeForConditionalGeneration; qwen3_5_moe_text with TextOnly):
	// every decoder layer's MLP, and the MTP layer's, is a sparse MoE
	// block of Experts experts of MoEIntermediate rows (its router, fused
	// experts and a shared expert of SharedIntermediate rows with its
	// gate), and the config has no dense intermediate_size.
	Experts, MoEIntermediate, SharedIntermediate, TopK int
	// PerExpert stores the experts one tensor per expert and projection
	// (mlp.experts.{i}.gate_proj.weight ..., as transformers 5.23 saves
	// them) instead of fused (mlp.experts.gate_up_proj [E, 2I, H],
	// mlp.experts.down_proj [E, H, I], the releases' layout). With FP8
	// both are quantised: per expert as 2-D block weights, fused as 3-D
	// stacks with one block grid per expert (ckpt.BlockScaleShape).
	PerExpert bool
	// Variant names the files as save_pretrained(variant=Variant) does:
	// model.V.safetensors, or model.V-0000k-of-0000n.safetensors with
	// model.safetensors.index.V.json (ckpt.VariantFiles).
	Variant string
	// TransformersFP8 (with FP8) writes the FP8 checkpoint as transformers'
	// FineGrainedFP8 quantizer saves it (transformers.go) instead of the
	// release layout; NotConvert is then its modules_to_not_convert (nil:
	// null, transformers' default).
	TransformersFP8 bool
	NotConvert      []string
	// Resaved writes config.json as transformers' save_pretrained writes
	// it back after from_pretrained (transformers.go): the same model,
	// with the defaults filled in.
	Resaved bool
}

// VisionSize is the shape of a generated vision tower; zero fields take
// the defaults of the tiny tower (Depth 1, Hidden 32, Heads 2,
// Intermediate 64).
type VisionSize struct {
	Depth, Hidden, Heads, Intermediate int
}

// TinyVision is a vision tower whose hidden size splits into whole tiles
// on 1x2 and 1x4 meshes (128: 32 per device at 1x4), with heads of 16
// (padded to 32 by the qwen36 demo) that divide by 4, and an intermediate
// size (130) that the demo pads to 192 at 1x2 and to 256 at 1x4, where
// the last device holds padding only; two blocks.
func TinyVision() VisionSize {
	return VisionSize{Depth: 2, Hidden: 128, Heads: 8, Intermediate: 130}
}

func (v VisionSize) withDefaults() VisionSize {
	def := func(x *int, d int) {
		if *x == 0 {
			*x = d
		}
	}
	def(&v.Depth, 1)
	def(&v.Hidden, 32)
	def(&v.Heads, 2)
	def(&v.Intermediate, 64)
	return v
}

// Small is the default tiny base: 4 layers (3 linear-attention, 1 full),
// hidden 128, block-FP8 with [32, 32] blocks, MTP head and a one-block
// vision tower, sharded two layers per file.
func Small() Options {
	return Options{Hidden: 128, Intermediate: 320, Layers: 4, Heads: 4, KVHeads: 2, HeadDim: 32,
		LinKHeads: 2, LinVHeads: 4, LinKDim: 32, LinVDim: 32, Vocab: 512, MTP: true, Vision: true,
		FP8: true, Block: [2]int{32, 32}, ScaleDType: numfmt.BF16, LayersPerShard: 2, Seed: 1}
}

// Small4 is Small with every sharded count divisible by 4 (attention and
// KV heads, GDN key and value heads, intermediate tiles) and the tiny
// vision tower whose hidden size splits into whole tiles on 4 devices
// (TinyVision), so that the built-in profiles plan it, text and vision
// folder, on a 1x4 mesh (P150x4) as well as on 1x2.
func Small4() Options {
	o := Small()
	o.Heads, o.KVHeads, o.LinKHeads, o.LinVHeads, o.Intermediate = 8, 4, 4, 8, 512
	o.VisionSize = TinyVision()
	return o
}

// SmallMoE is the tiny Qwen3.5-MoE base: Small's hybrid layers with 8
// experts of 64 rows (top 2: two experts per device at 1x4) and a 64-row shared expert in every layer,
// head counts that divide by 4 devices except the 2 KV heads (replicated
// at 1x4, as the 35B-A3B's), no vision tower; block-FP8 with [32, 32]
// blocks, fused experts (PerExpert for the other layout).
func SmallMoE() Options {
	o := Small()
	o.Intermediate, o.Vision = 0, false
	o.LinKHeads, o.LinVHeads = 4, 8
	o.Experts, o.MoEIntermediate, o.SharedIntermediate, o.TopK = 8, 64, 64, 2
	return o
}

// Large is a ~1.2 GB FP8 checkpoint for benchmarks (hidden 2048, 16 layers).
func Large() Options {
	o := Small()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 2048, 8192, 16, 16, 4, 128
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 8, 16, 128, 128, 32768
	o.Block = [2]int{128, 128}
	o.Vision, o.LayersPerShard = false, 4
	return o
}

// LargeOdd is a ~0.6 GB FP8 benchmark checkpoint of awkward widths: hidden
// 2112 and intermediate 8128 are not multiples of the 128-wide FP8 blocks
// (a partial scale block ends every row and column) and give odd tile
// counts (127 tiles per device of the intermediate), 8 layers. The
// built-in profiles need both to be multiples of 64 (32-row units split
// over two devices), so this is as ragged as it maps at 1x2. Its MLP
// weights map to BFLOAT4_B targets, like Large's.
func LargeOdd() Options {
	o := Large()
	o.Hidden, o.Intermediate, o.Layers = 2112, 8128, 8
	return o
}

// ConfigJSON returns config.json contents for o.
func ConfigJSON(o Options) map[string]any {
	lt := make([]string, o.Layers)
	for i := range lt {
		lt[i] = "linear_attention"
		if (i+1)%4 == 0 {
			lt[i] = "full_attention"
		}
	}
	mtp := 0
	if o.MTP {
		mtp = 1
	}
	text := map[string]any{
		"model_type": "qwen3_5_text", "hidden_size": o.Hidden, "intermediate_size": o.Intermediate,
		"num_hidden_layers": o.Layers, "layer_types": lt, "full_attention_interval": 4,
		"num_attention_heads": o.Heads, "num_key_value_heads": o.KVHeads, "head_dim": o.HeadDim,
		"linear_num_key_heads": o.LinKHeads, "linear_num_value_heads": o.LinVHeads,
		"linear_key_head_dim": o.LinKDim, "linear_value_head_dim": o.LinVDim, "linear_conv_kernel_dim": 4,
		"vocab_size": o.Vocab, "mtp_num_hidden_layers": mtp, "tie_word_embeddings": false,
		"attn_output_gate": true, "rms_norm_eps": 1e-6, "hidden_act": "silu", "partial_rotary_factor": 0.25,
		"max_position_embeddings": 4096, "dtype": "bfloat16", "attention_bias": false,
	}
	if o.DType != "" {
		text["dtype"] = torchName(o.DType)
	}
	arch, mt := "Qwen3_5", "qwen3_5"
	if o.Experts > 0 {
		arch, mt = "Qwen3_5Moe", "qwen3_5_moe"
		text["model_type"] = "qwen3_5_moe_text"
		delete(text, "intermediate_size")
		text["num_experts"], text["num_experts_per_tok"] = o.Experts, max(o.TopK, 1)
		text["moe_intermediate_size"], text["shared_expert_intermediate_size"] = o.MoEIntermediate, o.SharedIntermediate
		text["router_aux_loss_coef"], text["output_router_logits"] = 0.001, false
	}
	cfg := map[string]any{
		"architectures": []string{arch + "ForConditionalGeneration"}, "model_type": mt,
		"tie_word_embeddings": false, "text_config": text,
	}
	if o.DType != "" {
		cfg["dtype"] = torchName(o.DType)
	}
	if o.TextOnly {
		cfg = text // flat: Qwen3_5TextConfig at the top level
		cfg["architectures"] = []string{arch + "ForCausalLM"}
	}
	if o.Vision && !o.TextOnly {
		vs := o.VisionSize.withDefaults()
		cfg["vision_config"] = map[string]any{"model_type": "qwen3_5_vision", "depth": vs.Depth, "hidden_size": vs.Hidden,
			"intermediate_size": vs.Intermediate, "num_heads": vs.Heads, "in_channels": 3, "patch_size": 4, "temporal_patch_size": 2,
			"spatial_merge_size": 2, "num_position_embeddings": 16, "out_hidden_size": o.Hidden,
			"deepstack_visual_indexes": []int{}}
	}
	if o.FP8 {
		var skip []string
		for _, t := range expected(o, false) {
			if !isFP8Module(t) && strings.HasSuffix(t.Name, ".weight") {
				skip = append(skip, strings.TrimSuffix(t.Name, ".weight"))
			}
		}
		if o.Experts == 0 {
			// An MoE leftover that names no tensor: it must not match mlp.gate_proj.
			skip = append(skip, textPrefix(o)+"layers.0.mlp.gate")
		}
		if o.FineTune && !o.FineTuneAll && o.MTP {
			for _, t := range expected(o, false) {
				if t.Group == "mtp" && isFP8Module(t) {
					skip = append(skip, strings.TrimSuffix(t.Name, ".weight"))
				}
			}
		}
		sort.Strings(skip)
		cfg["quantization_config"] = map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
			"weight_block_size": []int{o.Block[0], o.Block[1]}, "modules_to_not_convert": skip}
		if o.transformers() {
			cfg["quantization_config"] = TransformersFP8Config(o.Block, o.Recipe == numfmt.FP8TransformersUE8M0, skip)
		}
		if o.TransformersFP8 {
			cfg["quantization_config"] = TransformersFP8Config(o.Block, o.Recipe == numfmt.FP8TransformersUE8M0, o.NotConvert)
		}
	}
	return cfg
}

// TransformersFP8Config is the quantization_config transformers' save
// writes for a FineGrainedFP8Config (its to_dict, as 5.23.0 writes it:
// huggingface/transformers:src/transformers/utils/quantization_config.py
// @v5.23.0): quant_method "fp8", modules_to_not_convert,
// modules_to_convert null, activation_scheme "dynamic", weight_block_size,
// dequantize false, scale_fmt "float" or "ue8m0", expert_dtype "fp8"; no
// fmt.
func TransformersFP8Config(block [2]int, ue8m0 bool, notConvert []string) map[string]any {
	sf := "float"
	if ue8m0 {
		sf = "ue8m0"
	}
	return map[string]any{"quant_method": "fp8", "modules_to_not_convert": notConvert, "modules_to_convert": nil,
		"activation_scheme": "dynamic", "weight_block_size": []int{block[0], block[1]}, "dequantize": false,
		"scale_fmt": sf, "expert_dtype": "fp8"}
}

// transformers reports whether o uses a transformers recipe or layout
// (and so its config layout and F32 scales).
func (o Options) transformers() bool {
	return o.Recipe == numfmt.FP8Transformers || o.Recipe == numfmt.FP8TransformersUE8M0 || o.TransformersFP8
}

// recipe is the recipe o quantises with: transformers' for the
// TransformersFP8 layout unless another transformers recipe is asked for.
func (o Options) recipe() numfmt.FP8Recipe {
	if o.TransformersFP8 && o.Recipe == numfmt.FP8Ckpt {
		return numfmt.FP8Transformers
	}
	return o.Recipe
}

// scaleDType is the dtype of the FP8 scales o writes.
func (o Options) scaleDType() numfmt.DType {
	switch {
	case o.Recipe == numfmt.FP8TransformersUE8M0 && o.ScaleDType == numfmt.F32:
		return numfmt.F32
	case o.Recipe == numfmt.FP8TransformersUE8M0:
		return numfmt.F8E8M0
	case o.transformers():
		return numfmt.F32
	case o.ScaleDType == "":
		return numfmt.BF16
	}
	return o.ScaleDType
}

// textPrefix is where o stores the text model.
func textPrefix(o Options) string {
	if o.TextOnly {
		return "model."
	}
	return "model.language_model."
}

// torchName is the torch name of a float dtype, as config.json gives it.
func torchName(d numfmt.DType) string {
	switch d {
	case numfmt.F32:
		return "float32"
	case numfmt.F16:
		return "float16"
	case numfmt.F64:
		return "float64"
	}
	return "bfloat16"
}

func isFP8Module(t arch.Tensor) bool {
	return (t.Role == "linear" || t.Role == "experts") && !strings.HasPrefix(t.Name, "mtp.fc") &&
		!strings.Contains(t.Name, "in_proj_a") && !strings.Contains(t.Name, "in_proj_b")
}

func expected(o Options, fp8 bool) []arch.Tensor {
	raw, _ := json.Marshal(ConfigJSON(Options{Hidden: o.Hidden, Intermediate: o.Intermediate, Layers: o.Layers, Heads: o.Heads,
		KVHeads: o.KVHeads, HeadDim: o.HeadDim, LinKHeads: o.LinKHeads, LinVHeads: o.LinVHeads, LinKDim: o.LinKDim,
		LinVDim: o.LinVDim, Vocab: o.Vocab, MTP: o.MTP, Vision: o.Vision, VisionSize: o.VisionSize, TextOnly: o.TextOnly,
		Experts: o.Experts, MoEIntermediate: o.MoEIntermediate, SharedIntermediate: o.SharedIntermediate, TopK: o.TopK}))
	cfg, err := ckpt.ParseConfig(raw, "config.json")
	if err != nil {
		panic(err) // generated config: cannot happen
	}
	q, err := arch.ParseQwen35(cfg)
	if err != nil {
		panic(err)
	}
	if q.MoE != nil {
		q.MoE.PerExpert = o.PerExpert
	}
	return q.Tensors(fp8, int64(o.Block[0]), int64(o.Block[1]))
}

// Master returns the deterministic float32 "training" values of a tensor
// (already representable in bf16).
func Master(o Options, t arch.Tensor) []float32 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	h := fnv.New64a()
	h.Write([]byte(canonicalName(o, t.Name))) // the same values in either layout
	rng := newRNG(h.Sum64() ^ o.Seed*0x9e3779b97f4a7c15)
	out := make([]float32, n)
	center, spread := float32(0), float32(0.05)
	switch {
	case t.Role == "gated_norm":
		center = 1
	case strings.HasSuffix(t.Name, "A_log"):
		center, spread = 1, 0.5
	case t.Role == "embedding" || t.Role == "lm_head":
		spread = 0.02
	}
	for i := range out {
		out[i] = numfmt.RoundTo(numfmt.BF16, center+spread*rng.sym())
	}
	return out
}

// expertValues are the values of one expert's projection of a per-expert
// checkpoint (PerExpert): its rows of the fused tensor's Master values,
// so that both layouts hold the same experts (nil for any other tensor).
func expertValues(o Options, t arch.Tensor) []float32 {
	pre, rest, ok := strings.Cut(t.Name, ".mlp.experts.")
	if !ok || o.Experts == 0 {
		return nil
	}
	idx, proj, ok := strings.Cut(rest, ".")
	e, err := strconv.Atoi(idx)
	if !ok || err != nil {
		return nil
	}
	E, I, H := int64(o.Experts), int64(o.MoEIntermediate), int64(o.Hidden)
	fused := arch.Tensor{Name: pre + ".mlp.experts.gate_up_proj", Shape: []int64{E, 2 * I, H}, Role: "experts"}
	off := int64(e) * 2 * I * H
	switch proj {
	case "gate_proj.weight":
	case "up_proj.weight":
		off += I * H
	case "down_proj.weight":
		fused = arch.Tensor{Name: pre + ".mlp.experts.down_proj", Shape: []int64{E, H, I}, Role: "experts"}
		off = int64(e) * H * I
	default:
		return nil
	}
	return Master(o, fused)[off : off+I*H]
}

// rng is xorshift64*, fast and deterministic.
type rng struct{ s uint64 }

func newRNG(seed uint64) *rng {
	if seed == 0 {
		seed = 0x2545f4914f6cdd1d
	}
	return &rng{seed}
}

func (r *rng) next() uint64 {
	r.s ^= r.s >> 12
	r.s ^= r.s << 25
	r.s ^= r.s >> 27
	return r.s * 0x2545f4914f6cdd1d
}

// sym returns a roughly bell-shaped value in (-2, 2).
func (r *rng) sym() float32 {
	v := r.next()
	a := float32(v&0xffffff) / (1 << 24)
	b := float32((v>>24)&0xffffff) / (1 << 24)
	return (a + b - 1) * 2
}

// canonicalName is a tensor's name in the releases' layout
// (model.language_model.*), whatever o's layout.
func canonicalName(o Options, name string) string {
	if rest, ok := strings.CutPrefix(name, textPrefix(o)); ok {
		return "model.language_model." + rest
	}
	return name
}

// fineTuneChanged lists the tensors a fine-tune perturbs (the same ones
// in either layout).
func fineTuneChanged(o Options, name string) bool {
	name = canonicalName(o, name)
	return strings.HasSuffix(name, "layers.1.mlp.down_proj.weight") && !strings.HasPrefix(name, "mtp.") ||
		strings.HasSuffix(name, "language_model.layers.2.post_attention_layernorm.weight") ||
		strings.HasSuffix(name, "language_model.layers.0.linear_attn.in_proj_a.weight")
}

// tensorData produces the stored tensors for one expected weight: the
// weight and, for FP8, its scale.
func tensorData(o Options, t arch.Tensor) []ckpt.MemTensor {
	vals := expertValues(o, t)
	if vals == nil {
		vals = Master(o, t)
	}
	if o.FineTune && (o.FineTuneAll || fineTuneChanged(o, t.Name)) {
		for i := 0; i < len(vals); i += 7 {
			vals[i] = numfmt.RoundTo(numfmt.BF16, vals[i]*1.01+0.001)
		}
	}
	shipBF16 := !t.FP8 || (o.FineTune && !o.FineTuneAll && strings.HasPrefix(t.Name, "mtp."))
	rows, cols := int64(0), int64(0)
	if len(t.Shape) == 2 {
		rows, cols = t.Shape[0], t.Shape[1]
	} else if len(t.Shape) == 3 { // a stack of experts: each expert's block grid
		rows, cols = t.Shape[1], t.Shape[2]
	}
	bm, bn := int64(o.Block[0]), int64(o.Block[1])
	if shipBF16 || o.TransformersFP8 && (rows%bm != 0 || cols%bn != 0) {
		d := o.DType
		if d == "" {
			d = numfmt.BF16
		}
		data := make([]byte, d.Bits()/8*len(vals))
		numfmt.EncodeFloat32(d, vals, data)
		out := []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: t.Name, DType: d, Shape: t.Shape}, Data: data}}
		if !shipBF16 {
			out = append(out, orphanScale(t, bm, bn, o.scaleDType()))
		}
		return out
	}
	// A 3-D stack of experts [E, R, C] is E 2-D block weights, each with
	// its own block grid (ckpt.BlockScaleShape).
	stack := int64(1)
	if len(t.Shape) == 3 {
		stack, rows, cols = t.Shape[0], t.Shape[1], t.Shape[2]
	}
	codes := make([]byte, stack*rows*cols)
	sr, sc := (rows+bm-1)/bm, (cols+bn-1)/bn
	scales := make([]float32, stack*sr*sc)
	sd := o.scaleDType()
	for e := int64(0); e < stack; e++ {
		n, m := e*rows*cols, e*sr*sc
		numfmt.QuantizeBlockFP8Recipe(o.recipe(), vals[n:n+rows*cols], rows, cols, bm, bn, sd, codes[n:n+rows*cols], scales[m:m+sr*sc])
	}
	sdata := make([]byte, len(scales)*sd.Bits()/8)
	numfmt.EncodeFloat32(sd, scales, sdata)
	sshape := []int64{sr, sc}
	if len(t.Shape) == 3 {
		sshape = []int64{stack, sr, sc}
	}
	return []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: t.Name, DType: numfmt.F8E4M3, Shape: t.Shape}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(t.Name), DType: sd, Shape: sshape}, Data: sdata},
	}
}

// shardOf assigns a tensor to a shard key: "layers-K" for decoder layers,
// "mtp", or "outside".
func shardOf(o Options, name string) string {
	if o.LayersPerShard <= 0 {
		return "model"
	}
	g, _, layer := ckpt.GroupOf(name)
	switch {
	case g == ckpt.GroupMTP:
		return "mtp"
	case g == ckpt.GroupText:
		return fmt.Sprintf("layers-%d", layer/o.LayersPerShard)
	}
	return "outside"
}

// Write writes the checkpoint described by o into dir (created if needed):
// config.json, and either model.safetensors or model-0000k-of-0000n shards
// with model.safetensors.index.json.
func Write(dir string, o Options) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cfgMap := ConfigJSON(o)
	if o.Resaved {
		cfgMap = Resaved(cfgMap)
	}
	cfg, _ := json.MarshalIndent(cfgMap, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		return err
	}
	ts := expected(o, false)
	byShard := map[string][]arch.Tensor{}
	var keys []string
	for _, t := range ts {
		if o.FP8 && isFP8Module(t) && !o.TransformersFP8 {
			t.FP8 = true
		}
		if o.FP8 && o.TransformersFP8 {
			t.FP8 = transformersConverts(o, t)
		}
		k := shardOf(o, t.Name)
		if _, ok := byShard[k]; !ok {
			keys = append(keys, k)
		}
		byShard[k] = append(byShard[k], t)
	}
	sort.Slice(keys, func(i, j int) bool {
		return shardRank(keys[i]) < shardRank(keys[j]) || shardRank(keys[i]) == shardRank(keys[j]) && ckpt.NaturalLess(keys[i], keys[j])
	})
	names := map[string]string{}
	stem := "model"
	if o.Variant != "" {
		stem += "." + o.Variant
	}
	single, index := ckpt.VariantFiles(o.Variant)
	for i, k := range keys {
		names[k] = fmt.Sprintf("%s-%05d-of-%05d.safetensors", stem, i+1, len(keys))
	}
	if o.LayersPerShard <= 0 {
		names["model"] = single
	}
	weightMap := map[string]string{}
	var total int64
	var g errgroup.Group
	g.SetLimit(2)
	sizes := make([]int64, len(keys))
	for i, k := range keys {
		for _, t := range byShard[k] {
			weightMap[t.Name] = names[k]
			if t.FP8 && !(o.FineTune && !o.FineTuneAll && strings.HasPrefix(t.Name, "mtp.")) {
				weightMap[ckpt.ScaleName(t.Name)] = names[k]
			}
		}
		g.Go(func() error {
			var mts []ckpt.MemTensor
			for _, t := range byShard[k] {
				for _, mt := range tensorData(o, t) {
					mts = append(mts, mt)
					sizes[i] += int64(len(mt.Data))
				}
			}
			return ckpt.WriteFile(filepath.Join(dir, names[k]), mts, map[string]string{"format": "pt"})
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, s := range sizes {
		total += s
	}
	if o.LayersPerShard <= 0 {
		return nil
	}
	idx, _ := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	return os.WriteFile(filepath.Join(dir, index), idx, 0o644)
}

func shardRank(k string) int {
	switch {
	case strings.HasPrefix(k, "layers-"):
		return 0
	case k == "mtp":
		return 1
	}
	return 2
}

// Pair writes the small base to dir/base and its fine-tune to dir/ft and
// returns both paths.
func Pair(dir string) (base, ft string, err error) {
	base, ft = filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	if err = Write(base, Small()); err != nil {
		return
	}
	o := Small()
	o.FineTune = true
	err = Write(ft, o)
	return
}

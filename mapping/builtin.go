package mapping

import (
	"fmt"
	"sort"
)

// BuiltinName is the name of the built-in profile.
const BuiltinName = "qwen3_5-tt"

// Builtin returns a built-in profile by name (a fresh copy each call).
func Builtin(name string) (*Profile, error) {
	switch name {
	case BuiltinName:
		return qwen35TT(), nil
	}
	return nil, fmt.Errorf("unknown profile %q (built-in: %s)", name, BuiltinName)
}

// BuiltinNames lists the built-in profiles.
func BuiltinNames() []string {
	n := []string{BuiltinName}
	sort.Strings(n)
	return n
}

// Upstream revisions the built-in profile transcribes. The stored index of
// tenstorrent/tt-metal holds no single commit with every file of the MTP
// spec-decode line, so each file is pinned at the revision it was read at;
// every one of them has the switches and names of that line.
const (
	ttMetal = "tenstorrent/tt-metal"
	// prHead is the head of tt-metal PR #55548 (Qwen MTP spec decode), the
	// line the profile stands for.
	prHead = "96f3f04102028cd85c23c2162914d5a0e7b37cc6"
	qwen36 = "models/demos/blackhole/qwen36/tt/"
)

// Profile variables of the built-in profile (the qwen36 config switches).
const (
	VarProj1DDecode = "proj_1d_decode"
	VarMLP1DDecode  = "mlp_1d_decode"
	VarGateUpAGMM   = "mlp_gateup_agmm_enabled"
	VarRopePermuted = "rope_permuted_enabled"
)

// Builders for the built-in profile's rules.

func roundBF16() Step { return Step{Op: "round", DType: "BF16"} }
func addOne() Step {
	one := 1.0
	return Step{Op: "add", Value: &one}
}
func transposeStep() Step              { return Step{Op: "transpose"} }
func reshapeStep(shape ...string) Step { return Step{Op: "reshape", Shape: shape} }
func fuse(parts ...Part) Step          { return Step{Op: "fuse", Parts: parts} }

var (
	colParallel = Placement{Kind: "shard", Dim: -1, Split: "rows"}
	rowParallel = Placement{Kind: "shard", Dim: 0, Split: "cols"}
	replicated  = Placement{Kind: "replicate"}
	// meshCols2D is ShardTensor2dMesh(dims=(None, d)) on a 1×N mesh:
	// replicated along the rows axis, sharded along the columns axis.
	meshCols2D = []string{AxisReplicate, AxisShard}
)

func on(v string) Condition  { return Condition{Var: v, Op: "true"} }
func off(v string) Condition { return Condition{Var: v, Op: "false"} }

const (
	textPrefix = "model.language_model."
	layerPfx   = textPrefix + "layers.{L}."
	// mtpLayer is the cache name of the MTP decoder layer: it is built as
	// the first full-attention decoder layer, under the mtp/ cache root.
	mtpLayer = "layers.{" + FirstFullAttentionLayer + "}"
)

// gdnQKVParts splits a fused [q | k | v] GDN stream (in_proj_qkv rows or
// conv1d channels) into key heads (q, k) and value heads (v).
func gdnQKVParts(src int) []Part {
	return []Part{
		{Source: src, Label: "q (linear_num_key_heads heads)", Units: "linear_num_key_heads", UnitRows: "linear_key_head_dim"},
		{Source: src, Label: "k (linear_num_key_heads heads)", Offset: "linear_num_key_heads*linear_key_head_dim", Units: "linear_num_key_heads", UnitRows: "linear_key_head_dim"},
		{Source: src, Label: "v (linear_num_value_heads heads)", Offset: "2*linear_num_key_heads*linear_key_head_dim", Units: "linear_num_value_heads", UnitRows: "linear_value_head_dim"},
	}
}

// matmulWeight is a 2-D projection cached as shard_w does it: bf16, then
// [out, in] → [in, out], then sharded or replicated.
func matmulWeight(id, target, src string, pl Placement, dtype, mem string, extra ...Step) Rule {
	steps := []Step{roundBF16()}
	steps = append(steps, extra...)
	steps = append(steps, transposeStep())
	return Rule{ID: id, Target: target, Sources: []string{src}, Transform: steps, Placement: pl, DType: dtype, Layout: Tile, Memory: mem}
}

// scope is where a group of rules applies: the rule id prefix, the cache
// directory prefix ("" or "mtp/"), the decoder layer's cache name, the
// source prefix, the decoder layer type of {L} (empty for a fixed layer)
// and the conditions every rule of the group carries.
type scope struct {
	id, dir, layer, src, layerType string
	when                           Conditions
}

// with returns the scope's conditions plus more.
func (s scope) with(more ...Condition) Conditions {
	out := append(Conditions(nil), s.when...)
	return append(out, more...)
}

func (s scope) rule(r Rule) Rule {
	r.LayerType, r.Required = s.layerType, true
	if r.When == nil {
		r.When = s.with()
	}
	if len(r.When) == 0 {
		r.When = nil
	}
	return r
}

// rmsNorm is a zero-centred RMSNorm weight cached by models/common/rmsnorm.py
// (add_unit_offset): [dim] → [1,1,dim/32,32], +1.0 added in bf16, ROW_MAJOR
// bf16, replicated (ReplicateTensorToMesh: one unsharded file); plus the
// _distributed copy, ShardTensor2dMesh(dims=(None, 2)): a 2-D mapper, rows
// of 32 split over the columns of the mesh.
func rmsNorm(s scope, id, target, src string) []Rule {
	steps := []Step{roundBF16(), addOne(), roundBF16(), reshapeStep("1", "1", "rows/32", "32")}
	rep := s.rule(Rule{ID: s.id + id, Target: s.dir + target, Sources: []string{s.src + src},
		Transform: steps, Placement: replicated, DType: BFloat16, Layout: RowMajor, Memory: DRAMInterleaved})
	dist := rep
	dist.ID += "_distributed"
	dist.Target += "_distributed"
	dist.Transform = []Step{roundBF16(), addOne(), roundBF16(),
		fuse(Part{Source: 0, Label: "hidden_size/32 rows of 32", Units: "hidden_size/32", UnitRows: "32"}),
		reshapeStep("1", "1", "rows/32", "32")}
	dist.Placement = Placement{Kind: "shard", Dim: 2, Split: "rows", MeshAxes: meshCols2D}
	dist.Note = "written whenever RMSNorm gets is_distributed (a bound method, so always at TP>1): ShardTensor2dMesh dims (None, 2)"
	return []Rule{rep, dist}
}

// attentionRules are one gated full-attention layer as attention/tp.py
// load_attention_weights_tp caches it under <layer>/tp/ (the fused
// de-interleaved [q | k | v | gate] in-projection, and wo).
func attentionRules(s scope) []Rule {
	sa := s.src + "self_attn."
	wqkv := Rule{Sources: []string{sa + "q_proj.weight", sa + "k_proj.weight", sa + "v_proj.weight"},
		Transform: []Step{roundBF16(), fuse(
			Part{Source: 0, Label: "q (num_attention_heads heads)", Units: "num_attention_heads", UnitRows: "head_dim", Stride: "2*head_dim"},
			Part{Source: 1, Label: "k (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim"},
			Part{Source: 2, Label: "v (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim"},
			Part{Source: 0, Label: "gate (num_attention_heads heads)", Offset: "head_dim", Units: "num_attention_heads", UnitRows: "head_dim", Stride: "2*head_dim"},
		), transposeStep()},
		Placement: colParallel, DType: BFloat8B, Layout: Tile,
		Note: "q_proj rows hold [q_h | gate_h] per head; per device [all q | k | v | all gate], then transposed"}
	il, ds := wqkv, wqkv
	tp := s.dir + s.layer + "/tp/"
	il.ID, il.Target, il.Memory, il.When = s.id+"attn.wqkv.il", tp+"wqkv_fused_qkvg.il", DRAMInterleaved, s.with(on(VarProj1DDecode))
	ds.ID, ds.Target, ds.Memory, ds.When = s.id+"attn.wqkv.dramshard", tp+"wqkv_fused_qkvg.dramshard", DRAMWidthSharded, s.with(off(VarProj1DDecode))
	wo := matmulWeight(s.id+"attn.wo", tp+"wo", sa+"o_proj.weight", rowParallel, BFloat8B, DRAMInterleaved)
	return []Rule{s.rule(il), s.rule(ds), s.rule(wo)}
}

// mlpRules are one dense MLP as mlp.py load_mlp_weights (TP arm) caches it
// under <layer>/: gate/up bfp4 column-parallel (interleaved with
// mlp_1d_decode, else DRAM-width-sharded .dramshard), down bfp8
// row-parallel, and the prefill fused-SwiGLU gate_up weight when the
// gate/up all-gather matmul is enabled.
func mlpRules(s scope) []Rule {
	mlp := s.src + "mlp."
	dir := s.dir + s.layer + "/"
	var out []Rule
	for _, n := range []string{"gate_proj", "up_proj"} {
		units := fuse(Part{Source: 0, Label: n + " (intermediate_size rows)", Units: "intermediate_size"})
		il := matmulWeight(s.id+"mlp."+n, dir+"mlp."+n+".weight.tp", mlp+n+".weight", colParallel, BFloat4B, DRAMInterleaved, units)
		il.When = s.with(on(VarMLP1DDecode))
		ds := matmulWeight(s.id+"mlp."+n+".dramshard", dir+"mlp."+n+".weight.dramshard.tp", mlp+n+".weight", colParallel, BFloat4B, DRAMWidthSharded, units)
		ds.When = s.with(off(VarMLP1DDecode))
		out = append(out, s.rule(il), s.rule(ds))
	}
	out = append(out, s.rule(matmulWeight(s.id+"mlp.down_proj", dir+"mlp.down_proj.weight.tp", mlp+"down_proj.weight", rowParallel, BFloat8B, DRAMInterleaved)))
	out = append(out, s.rule(Rule{ID: s.id + "mlp.gate_up", Target: dir + "mlp.gate_up.weight.swiglu.tp",
		Sources: []string{mlp + "gate_proj.weight", mlp + "up_proj.weight"}, When: s.with(on(VarGateUpAGMM)),
		Transform: []Step{roundBF16(), {Op: "fuse", Interleave: true, Parts: []Part{
			{Source: 0, Label: "gate (intermediate_size/32 tiles)", Units: "intermediate_size/32", UnitRows: "32"},
			{Source: 1, Label: "up (intermediate_size/32 tiles)", Units: "intermediate_size/32", UnitRows: "32"},
		}}, transposeStep()},
		Placement: colParallel, DType: BFloat4B, Layout: Tile, Memory: DRAMInterleaved,
		Note: "prefill fused-SwiGLU weight: per device, 32-wide column tiles of gate^T and up^T alternate, gate first"}))
	return out
}

// decoderNorms are a decoder layer's two RMSNorms (tt/layer.py _make_norm,
// state_dict_prefix "layers.N."), at the scope's cache directory:
// <dir>layers.N.{input,post_attention}_layernorm.weight.
func decoderNorms(s scope) []Rule {
	var out []Rule
	for _, n := range []string{"input_layernorm", "post_attention_layernorm"} {
		out = append(out, rmsNorm(s, "norm."+n, s.layer+"."+n+".weight", n+".weight")...)
	}
	return out
}

func qwen35TT() *Profile {
	p := &Profile{
		Name: BuiltinName,
		Description: "Qwen3.5/3.6-style hybrid (Gated DeltaNet + gated full attention + MTP) on a 1xN Blackhole mesh, as the tt-metal qwen36 " +
			"tensor-parallel loader of the MTP spec-decode line (PR #55548) caches it",
		Pinned: &Pinned{Repo: ttMetal, Commit: prHead, Path: "models/demos/blackhole/qwen36",
			Files: map[string]string{
				qwen36 + "model_config.py":                          "009f48d45918d773b0023cb6b71f91a4c6f35712",
				qwen36 + "gdn/tp.py":                                "53e404baed2ec4a51eb27e34e8b3db9e5703a87c",
				qwen36 + "attention/tp.py":                          "01c6e8ed4a20a142e6eacf0b94cd217c4b7d9fec",
				qwen36 + "layer.py":                                 "002e83d4d0f4da3622aca7307230b15045d48fbd",
				qwen36 + "model.py":                                 "015056e66cf13d87a2b18471a4e06c68090b576f",
				qwen36 + "tp_common.py":                             "00ef57aa80a26290c3516bfcb556b569a1cb396c",
				qwen36 + "mlp.py":                                   "stored version with _build_gate_up(..., use_gateup_agmm) and forward(x, mode); the index does not expose its commit",
				qwen36 + "mtp.py":                                   "stored tensor-parallel Qwen36MTP versions (tp_common.shard_w fc, cache root mtp/); the index does not expose their commits",
				"models/common/rmsnorm.py":                          "01229001dc0cd8388e4e99e006b051ac914787a8",
				"models/tt_transformers/tt/embedding.py":            "093e581fb790338f638ef4e3a94cb75950742a5a",
				"ttnn/ttnn/distributed/distributed.py":              "012af9b07e4d4bd4d649b9619ab7ce3d624a5822",
				"ttnn/core/distributed/distributed_tensor.cpp":      "0104e87bcc12353d3a3461eaf4ccc2befd910d87",
				"ttnn/core/tensor/flatbuffer/tensor_flatbuffer.cpp": "1104590e4c497e044b2fcda6cfec04bfdc68f356",
				"tt_metal/impl/data_format/bfloat16.cpp":            "0266e6f1f3b025345ea752018469941cada53034",
			}},
		Arch: ArchBlackhole,
		Tag:  "bfp8",
		Variables: []Variable{
			{Name: VarProj1DDecode, Default: true,
				Doc:      "in-projections (GDN qkvzab, attention wqkv_fused_qkvg) cached DRAM-interleaved under .il names; false: DRAM-width-sharded under .dramshard names",
				Upstream: qwen36 + "model_config.py@009f48d4 (_init_tp_config), read by gdn/tp.py@53e404ba and attention/tp.py@01c6e8ed"},
			{Name: VarMLP1DDecode, Default: true,
				Doc:      "MLP gate/up cached DRAM-interleaved as mlp.{gate,up}_proj.weight.tp; false: DRAM-width-sharded as mlp.{gate,up}_proj.weight.dramshard.tp",
				Upstream: qwen36 + "model_config.py@009f48d4 (_init_tp_config), read by mlp.py load_mlp_weights"},
			{Name: VarGateUpAGMM, Default: true,
				Doc:      "every dense MLP also caches the prefill fused-SwiGLU weight mlp.gate_up.weight.swiglu.tp; false (QWEN36_NO_AGMM=1, or Wormhole in later revisions): no such file",
				Upstream: qwen36 + "tp_common.py mlp_gateup_agmm_enabled(num_devices), read by mlp.py load_mlp_weights"},
			{Name: VarRopePermuted, Default: false,
				Doc:         "permuted-head_dim RoPE folded into the q/k weights, with .rp.<sha256> content tags on the attention names",
				Upstream:    qwen36 + "attention/tp.py@01c6e8ed (rope_permuted_enabled; on only for the Wormhole N300 9B)",
				Unsupported: "the permuted layout (Wormhole N300 only) is not transcribed by this profile"},
		},
		Notes: []string{
			"Layout of the qwen36 tensor-parallel loader on a 1xN Blackhole mesh as of the MTP spec-decode line (tt-metal PR #55548); pinned.files names the revision each upstream file was read at (the stored index holds none of them at the PR head).",
			"Switches: proj_1d_decode and mlp_1d_decode (model_config sets both for every multi-device mesh) select the interleaved .il / .tp names; mlp_gateup_agmm_enabled adds the fused-SwiGLU gate_up file. Override with --set NAME=false to get the DRAM-width-sharded .dramshard names of stacks that turn them off.",
			"MTP head (Qwen36MTP, num_devices > 1) under mtp/: fc column-sharded bfp8 (shard_w); the norms pre_fc_norm_embedding, pre_fc_norm_hidden and norm as RMSNorm with state_dict_prefix mtp. (+1, each with its _distributed twin); the decoder layer mtp.layers.0 built as text layer first_full_attention_layer (3 for the 27B), so its files carry that layer's names under mtp/.",
			"tok_embeddings.weight (tt_transformers Embedding) and every *_distributed norm use ShardTensor2dMesh on the 1xN mesh: the file records distribution shape [1, N] and placements [Replicate, Shard(d)].",
			"output.weight.vshard (lm_head, vocab-sharded bfp8) and the final norm.weight come from model.py; model.py falls back to a replicated output.weight when vocab does not divide by the mesh, which this profile reports as an error instead.",
			"mlp.gate_up.weight.swiglu.tp: per device, 32-column tiles of gate^T and up^T alternate (weight tile 2p = gate tile p, 2p+1 = up tile p), taken from the fuse_swiglu matmul contract; prepare_for_fused_swiglu itself was not found in the index.",
			"Full-attention q_norm / k_norm (text and MTP) are not cached (attention/tp.py replicates them with cache path None). The GDN gated norm (norm_w) stores the plain scale, without +1.",
			"Values: FP8 weights are dequantised (code × block scale) and rounded to bf16 nearest-even, as the loader's bf16 dequant and shard_w's .to(bfloat16) do; NaN becomes 0x7FC0 as in torch and tt-metal's host conversion; norms add 1.0 in bf16 (torch bf16 arithmetic).",
			"Newer gdn/tp.py revisions add tap_stack and .padN / .pad{rows} / .abgap{n} suffixes that are empty on Blackhole; the pinned revision has none. With more devices than KV heads attention/tp.py replicates KV heads; this profile reports that mesh as indivisible. The T3K-only drafter LM head output.weight.vshard.bfp4 of later mtp.py revisions is not written on Blackhole.",
		},
	}
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	lin, full := "linear_attention", "full_attention"
	la := layerPfx + "linear_attn."

	// Gated DeltaNet layers: layers.{L}/tp/ (tt/gdn/tp.py load_gdn_weights_tp).
	qkvzab := Rule{LayerType: lin, Required: true,
		Sources: []string{la + "in_proj_qkv.weight", la + "in_proj_z.weight", la + "in_proj_a.weight", la + "in_proj_b.weight"},
		Transform: []Step{roundBF16(), fuse(append(gdnQKVParts(0),
			Part{Source: 1, Label: "z (linear_num_value_heads heads)", Units: "linear_num_value_heads", UnitRows: "linear_value_head_dim"},
			Part{Source: 2, Label: "a (linear_num_value_heads heads)", Units: "linear_num_value_heads"},
			Part{Source: 3, Label: "b (linear_num_value_heads heads)", Units: "linear_num_value_heads"})...), transposeStep()},
		Placement: colParallel, DType: BFloat8B, Layout: Tile,
		Note: "per device [q_d | k_d | v_d | z_d | a_d | b_d] rows of the [out, in] weights, then transposed"}
	il, ds := qkvzab, qkvzab
	il.ID, il.Target, il.Memory, il.When = "gdn.qkvzab.il", "layers.{L}/tp/qkvzab.il", DRAMInterleaved, Conditions{on(VarProj1DDecode)}
	ds.ID, ds.Target, ds.Memory, ds.When = "gdn.qkvzab.dramshard", "layers.{L}/tp/qkvzab.dramshard", DRAMWidthSharded, Conditions{off(VarProj1DDecode)}
	add(il, ds)
	out := matmulWeight("gdn.out", "layers.{L}/tp/out", la+"out_proj.weight", rowParallel, BFloat8B, DRAMInterleaved)
	out.LayerType, out.Required = lin, true
	add(out)
	for _, n := range []string{"dt_bias", "A_log"} {
		add(Rule{ID: "gdn." + n, Target: "layers.{L}/tp/" + n, Sources: []string{la + n}, LayerType: lin, Required: true,
			Transform: []Step{roundBF16(), fuse(Part{Source: 0, Label: n + " (linear_num_value_heads heads)", Units: "linear_num_value_heads"}), reshapeStep("1", "1", "rows")},
			Placement: colParallel, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved})
	}
	add(Rule{ID: "gdn.norm_w", Target: "layers.{L}/tp/norm_w", Sources: []string{la + "norm.weight"}, LayerType: lin, Required: true,
		Transform: []Step{roundBF16(), reshapeStep("1", "1", "rows")},
		Placement: replicated, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved})
	for j := 0; j < 4; j++ {
		add(Rule{ID: fmt.Sprintf("gdn.tap%d", j), Target: fmt.Sprintf("layers.{L}/tp/tap%d", j), Sources: []string{la + "conv1d.weight"},
			LayerType: lin, Required: true, Assert: []string{"linear_conv_kernel_dim == 4"},
			Transform: []Step{roundBF16(), {Op: "select_cols", Start: fmt.Sprint(j), Count: "1"}, fuse(gdnQKVParts(0)...), reshapeStep("1", "1", "rows")},
			Placement: colParallel, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved,
			Note: "conv kernel tap j of every channel, channels reordered per device like qkv"})
	}

	// Gated full-attention layers (tt/attention/tp.py), the MLP of every
	// layer (tt/mlp.py) and the per-layer norms at the cache root
	// (tt/layer.py, models/common/rmsnorm.py).
	add(attentionRules(scope{layer: "layers.{L}", src: layerPfx, layerType: full})...)
	add(mlpRules(scope{layer: "layers.{L}", src: layerPfx, layerType: AnyLayer})...)
	add(decoderNorms(scope{layer: "layers.{L}", src: layerPfx, layerType: AnyLayer})...)

	// Embedding, final norm and LM head (tt/model.py).
	add(Rule{ID: "embed", Target: "tok_embeddings.weight", Sources: []string{textPrefix + "embed_tokens.weight"}, Required: true,
		Transform: []Step{roundBF16(), reshapeStep("1", "1", "rows", "cols")},
		Placement: Placement{Kind: "shard", Dim: 3, Split: "cols", MeshAxes: meshCols2D}, DType: BFloat16, Layout: RowMajor, Memory: DRAMInterleaved,
		Note: "tt_transformers Embedding: [1,1,vocab,hidden] bf16 ROW_MAJOR, ShardTensor2dMesh dims (None, 3)"})
	add(rmsNorm(scope{src: textPrefix}, "norm.final", "norm.weight", "norm.weight")...)
	lm := matmulWeight("lm_head", "output.weight.vshard", "lm_head.weight", colParallel, BFloat8B, DRAMInterleaved,
		fuse(Part{Source: 0, Label: "lm_head (vocab_size rows)", Units: "vocab_size"}))
	lm.When, lm.Required = Conditions{{Key: "tie_word_embeddings", Op: "false"}}, true
	add(lm)
	tied := lm
	tied.ID, tied.Sources = "lm_head.tied", []string{textPrefix + "embed_tokens.weight"}
	tied.When = Conditions{{Key: "tie_word_embeddings", Op: "true"}}
	tied.Note = "tied embeddings: the LM head is the embedding matrix"
	add(tied)

	// MTP head (tt/mtp.py Qwen36MTP, tensor parallel): cache root mtp/.
	mtp := scope{id: "mtp.", dir: "mtp/", src: "mtp.", when: Conditions{{Key: "mtp_num_hidden_layers", Op: "gt", Value: 0.0}}}
	fc := matmulWeight("mtp.fc", "mtp/fc", "mtp.fc.weight", colParallel, BFloat8B, DRAMInterleaved)
	fc.Note = "tp_common.shard_w(mtp.fc.weight, dim=-1, bfloat8_b, DRAM): [2H, H] column-sharded"
	add(mtp.rule(fc))
	for _, n := range []string{"pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"} {
		add(rmsNorm(mtp, "norm."+n, "mtp."+n+".weight", n+".weight")...)
	}
	layer := scope{id: "mtp.layer.", dir: "mtp/", layer: mtpLayer, src: "mtp.layers.0.", when: mtp.when}
	add(attentionRules(layer)...)
	add(mlpRules(layer)...)
	add(decoderNorms(layer)...)

	sa := layerPfx + "self_attn."
	p.Ignore = []Ignore{
		{Prefix: "model.visual.", Reason: "vision tower: not part of the text TP tensor cache (the qwen36 vision model is built separately and is not served by this cache)"},
		{Template: sa + "q_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + q_norm) with cache path None"},
		{Template: sa + "k_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + k_norm) with cache path None"},
		{Template: "mtp.layers.0.self_attn.q_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + q_norm) with cache path None"},
		{Template: "mtp.layers.0.self_attn.k_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + k_norm) with cache path None"},
	}
	return p
}

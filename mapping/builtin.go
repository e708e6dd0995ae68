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
)

const (
	textPrefix = "model.language_model."
	layerPfx   = textPrefix + "layers.{L}."
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

// layerNorm is a zero-centred RMSNorm weight cached by models/common/rmsnorm.py:
// [dim] → [1,1,dim/32,32], +1.0 added in bf16, ROW_MAJOR bf16, replicated;
// plus the _distributed copy sharded along dim 2.
func layerNorm(id, target, src string, layerType string) []Rule {
	steps := []Step{roundBF16(), addOne(), roundBF16(), reshapeStep("1", "1", "rows/32", "32")}
	rep := Rule{ID: id, Target: target, Sources: []string{src}, LayerType: layerType, Required: true,
		Transform: steps, Placement: replicated, DType: BFloat16, Layout: RowMajor, Memory: DRAMInterleaved}
	dist := rep
	dist.ID = id + "_distributed"
	dist.Target = target + "_distributed"
	dist.Transform = []Step{roundBF16(), addOne(), roundBF16(),
		fuse(Part{Source: 0, Label: "hidden_size/32 rows of 32", Units: "hidden_size/32", UnitRows: "32"}),
		reshapeStep("1", "1", "rows/32", "32")}
	dist.Placement = Placement{Kind: "shard", Dim: 2, Split: "rows"}
	dist.Note = "written whenever RMSNorm gets is_distributed (a callable, so always at TP>1): ShardTensor2dMesh dims (None, 2)"
	return []Rule{rep, dist}
}

// mtpPresent is the condition of the MTP rules (a fresh value per rule).
func mtpPresent() *Condition { return &Condition{Key: "mtp_num_hidden_layers", Op: "gt", Value: 0.0} }

// mtpWeight is an MTP projection as tt/mtp.py caches it: replicated, bfp8
// TILE, the transposed float32 of the (bf16 or dequantised) weight.
func mtpWeight(name, src string) Rule {
	return Rule{ID: "mtp." + name, Target: "mtp/mtp." + name, Sources: []string{src}, When: mtpPresent(), Required: true,
		Transform: []Step{roundBF16(), transposeStep()}, Placement: replicated, DType: BFloat8B, Layout: Tile, Memory: DRAMInterleaved}
}

// mtpNorm is an MTP norm: float32 weight (+1.0 in float32 when offset),
// bf16 TILE, replicated, kept 1-D.
func mtpNorm(name, src string, offset bool) Rule {
	steps := []Step{roundBF16()}
	if offset {
		steps = append(steps, addOne())
	}
	r := Rule{ID: "mtp." + name, Target: "mtp/mtp." + name, Sources: []string{src}, When: mtpPresent(), Required: true,
		Transform: steps, Placement: replicated, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved}
	if offset {
		r.Note = "+1.0 in float32; the float32→bf16 conversion is the device dtype step (host rounding mode: tt-cache.md open item 9)"
	}
	return r
}

func qwen35TT() *Profile {
	p := &Profile{
		Name:        BuiltinName,
		Description: "Qwen3.5/3.6-style hybrid (Gated DeltaNet + gated full attention + MTP) on a 1xN Tenstorrent mesh, as the tt-metal qwen36 demo caches it (tt-cache.md §4)",
		Pinned: &Pinned{Repo: "tenstorrent/tt-metal", Commit: "53e404baed2ec4a51eb27e34e8b3db9e5703a87c", Path: "models/demos/blackhole/qwen36",
			Files: map[string]string{
				"models/demos/blackhole/qwen36/tt/gdn/tp.py":       "53e404baed2ec4a51eb27e34e8b3db9e5703a87c",
				"models/demos/blackhole/qwen36/tt/mtp.py":          "572255b70ea7e501c1e904d541525210e9420d16",
				"models/demos/blackhole/qwen36/tt/tp_common.py":    "00ef57aa80a26290c3516bfcb556b569a1cb396c",
				"models/demos/blackhole/qwen36/tt/model_config.py": "009f48d45918d773b0023cb6b71f91a4c6f35712",
				"models/demos/blackhole/qwen36/tt/layer.py":        "002e83d4d0f4da3622aca7307230b15045d48fbd",
				"models/common/rmsnorm.py":                         "01229001dc0cd8388e4e99e006b051ac914787a8",
				"models/demos/blackhole/qwen36/tt/attention/tp.py": "unrecorded (stored version without replicate_kv_weight)",
				"models/demos/blackhole/qwen36/tt/mlp.py":          "unrecorded (stored version with _build_gate_up)",
				"models/demos/blackhole/qwen36/tt/model.py":        "unrecorded (stored version with output.weight.vshard)",
			}},
		Device: "P300",
		Tag:    "bfp8",
		Notes: []string{
			"The reference index holds no single tt-metal commit with every loader file; the pin is the gdn/tp.py revision tt-cache.md §4 cites, and pinned.files names the revision each other file was read at.",
			"In-projections use the DRAM-width-sharded names of tt-cache.md §4 (layers.N/tp/qkvzab.dramshard, wqkv_fused_qkvg.dramshard, mlp.*.weight.dramshard.tp). Later revisions turn proj_1d_decode and mlp_1d_decode on (model_config @009f48d4) and then write qkvzab.il, wqkv_fused_qkvg.il and interleaved mlp.gate_proj.weight.tp / mlp.up_proj.weight.tp instead: change those rules with --rules.",
			"The MTP head follows tt-cache.md §4 (mtp.py @572255b7): every weight replicated, named mtp.<name>. The mtp/ directory is assumed (tt-cache.md could not find where model.py creates it; newer mtp.py revisions also cache under tensor_cache_path/mtp, with other names and a TP-sharded fc).",
			"tok_embeddings.weight (bf16 ROW_MAJOR, [1,1,vocab,hidden] sharded on hidden) is inferred from the third-party run log of tt-cache.md §1; tt_transformers' Embedding was not read.",
			"output.weight.vshard (lm_head, vocab-sharded bfp8) and the final norm.weight come from model.py; model.py falls back to a replicated output.weight when vocab does not divide by the mesh, which this profile reports as an error instead.",
			"mlp.gate_up.weight.swiglu.tp: per device, 32-column tiles of gate^T and up^T alternate (weight tile 2p = gate tile p, 2p+1 = up tile p), taken from the fuse_swiglu matmul contract; prepare_for_fused_swiglu itself was not read.",
			"Full-attention q_norm / k_norm are not cached (attention/tp.py builds them with cache path None). The GDN gated norm (norm_w) stores the plain scale, without +1.",
			"Values: FP8 weights are dequantised (code × block scale) and rounded to bf16 nearest-even, as the loader's bf16 dequant and shard_w's .to(bfloat16) do; layer norms add 1.0 in bf16 (torch bf16 arithmetic), MTP norms in float32.",
			"Newer gdn/tp.py revisions add tap_stack and a .pad{N} suffix on qkvzab; the pinned revision has neither. With more devices than KV heads newer attention/tp.py replicates KV heads; this profile reports that mesh as indivisible.",
		},
	}
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	lin, full := "linear_attention", "full_attention"
	la := layerPfx + "linear_attn."
	sa := layerPfx + "self_attn."

	// Gated DeltaNet layers: layers.{L}/tp/ (tt/gdn/tp.py load_gdn_weights_tp).
	qkvzab := Rule{ID: "gdn.qkvzab", Target: "layers.{L}/tp/qkvzab.dramshard", LayerType: lin, Required: true,
		Sources: []string{la + "in_proj_qkv.weight", la + "in_proj_z.weight", la + "in_proj_a.weight", la + "in_proj_b.weight"},
		Transform: []Step{roundBF16(), fuse(append(gdnQKVParts(0),
			Part{Source: 1, Label: "z (linear_num_value_heads heads)", Units: "linear_num_value_heads", UnitRows: "linear_value_head_dim"},
			Part{Source: 2, Label: "a (linear_num_value_heads heads)", Units: "linear_num_value_heads"},
			Part{Source: 3, Label: "b (linear_num_value_heads heads)", Units: "linear_num_value_heads"})...), transposeStep()},
		Placement: colParallel, DType: BFloat8B, Layout: Tile, Memory: DRAMWidthSharded,
		Note: "per device [q_d | k_d | v_d | z_d | a_d | b_d] rows of the [out, in] weights, then transposed"}
	add(qkvzab)
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

	// Gated full-attention layers: layers.{L}/tp/ (tt/attention/tp.py).
	add(Rule{ID: "attn.wqkv", Target: "layers.{L}/tp/wqkv_fused_qkvg.dramshard", LayerType: full, Required: true,
		Sources: []string{sa + "q_proj.weight", sa + "k_proj.weight", sa + "v_proj.weight"},
		Transform: []Step{roundBF16(), fuse(
			Part{Source: 0, Label: "q (num_attention_heads heads)", Units: "num_attention_heads", UnitRows: "head_dim", Stride: "2*head_dim"},
			Part{Source: 1, Label: "k (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim"},
			Part{Source: 2, Label: "v (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim"},
			Part{Source: 0, Label: "gate (num_attention_heads heads)", Offset: "head_dim", Units: "num_attention_heads", UnitRows: "head_dim", Stride: "2*head_dim"},
		), transposeStep()},
		Placement: colParallel, DType: BFloat8B, Layout: Tile, Memory: DRAMWidthSharded,
		Note: "q_proj rows hold [q_h | gate_h] per head; per device [all q | k | v | all gate], then transposed"})
	wo := matmulWeight("attn.wo", "layers.{L}/tp/wo", sa+"o_proj.weight", rowParallel, BFloat8B, DRAMInterleaved)
	wo.LayerType, wo.Required = full, true
	add(wo)

	// MLP of every layer: layers.{L}/ (tt/mlp.py load_mlp_weights, TP arm).
	mlp := layerPfx + "mlp."
	for _, n := range []string{"gate_proj", "up_proj"} {
		r := matmulWeight("mlp."+n, "layers.{L}/mlp."+n+".weight.dramshard.tp", mlp+n+".weight", colParallel, BFloat4B, DRAMWidthSharded,
			fuse(Part{Source: 0, Label: n + " (intermediate_size rows)", Units: "intermediate_size"}))
		r.LayerType, r.Required = AnyLayer, true
		add(r)
	}
	down := matmulWeight("mlp.down_proj", "layers.{L}/mlp.down_proj.weight.tp", mlp+"down_proj.weight", rowParallel, BFloat8B, DRAMInterleaved)
	down.LayerType, down.Required = AnyLayer, true
	add(down)
	add(Rule{ID: "mlp.gate_up", Target: "layers.{L}/mlp.gate_up.weight.swiglu.tp", LayerType: AnyLayer, Required: true,
		Sources: []string{mlp + "gate_proj.weight", mlp + "up_proj.weight"},
		Transform: []Step{roundBF16(), {Op: "fuse", Interleave: true, Parts: []Part{
			{Source: 0, Label: "gate (intermediate_size/32 tiles)", Units: "intermediate_size/32", UnitRows: "32"},
			{Source: 1, Label: "up (intermediate_size/32 tiles)", Units: "intermediate_size/32", UnitRows: "32"},
		}}, transposeStep()},
		Placement: colParallel, DType: BFloat4B, Layout: Tile, Memory: DRAMInterleaved,
		Note: "prefill fused-SwiGLU weight: per device, 32-wide column tiles of gate^T and up^T alternate, gate first"})

	// Per-layer norms at the cache root (models/common/rmsnorm.py).
	add(layerNorm("norm.input_layernorm", "layers.{L}.input_layernorm.weight", layerPfx+"input_layernorm.weight", AnyLayer)...)
	add(layerNorm("norm.post_attention_layernorm", "layers.{L}.post_attention_layernorm.weight", layerPfx+"post_attention_layernorm.weight", AnyLayer)...)

	// Embedding, final norm and LM head (tt/model.py).
	add(Rule{ID: "embed", Target: "tok_embeddings.weight", Sources: []string{textPrefix + "embed_tokens.weight"}, Required: true,
		Transform: []Step{roundBF16(), reshapeStep("1", "1", "rows", "cols")},
		Placement: Placement{Kind: "shard", Dim: 3, Split: "cols"}, DType: BFloat16, Layout: RowMajor, Memory: DRAMInterleaved,
		Note: "assumed from tt-cache.md §1 (third-party log): bf16 ROW_MAJOR, sharded along hidden"})
	final := layerNorm("norm.final", "norm.weight", textPrefix+"norm.weight", "")
	for i := range final {
		final[i].LayerType = ""
	}
	add(final...)
	lm := matmulWeight("lm_head", "output.weight.vshard", "lm_head.weight", colParallel, BFloat8B, DRAMInterleaved,
		fuse(Part{Source: 0, Label: "lm_head (vocab_size rows)", Units: "vocab_size"}))
	lm.When, lm.Required = &Condition{Key: "tie_word_embeddings", Op: "false"}, true
	add(lm)
	tied := lm
	tied.ID, tied.Sources = "lm_head.tied", []string{textPrefix + "embed_tokens.weight"}
	tied.When = &Condition{Key: "tie_word_embeddings", Op: "true"}
	tied.Note = "tied embeddings: the LM head is the embedding matrix"
	add(tied)

	// MTP head (tt/mtp.py @572255b7): everything replicated under mtp/.
	ml := "mtp.layers.0."
	add(mtpNorm("pre_fc_norm_hidden", "mtp.pre_fc_norm_hidden.weight", true),
		mtpNorm("pre_fc_norm_embedding", "mtp.pre_fc_norm_embedding.weight", true),
		mtpWeight("fc", "mtp.fc.weight"),
		mtpNorm("input_norm", ml+"input_layernorm.weight", true),
		mtpNorm("post_attn_norm", ml+"post_attention_layernorm.weight", true),
		mtpWeight("attn.wqg", ml+"self_attn.q_proj.weight"),
		mtpWeight("attn.wk", ml+"self_attn.k_proj.weight"),
		mtpWeight("attn.wv", ml+"self_attn.v_proj.weight"),
		mtpWeight("attn.wo", ml+"self_attn.o_proj.weight"),
		mtpNorm("attn.q_norm_flat", ml+"self_attn.q_norm.weight", false),
		mtpNorm("attn.k_norm_flat", ml+"self_attn.k_norm.weight", false),
		mtpWeight("mlp.gate", ml+"mlp.gate_proj.weight"),
		mtpWeight("mlp.up", ml+"mlp.up_proj.weight"),
		mtpWeight("mlp.down", ml+"mlp.down_proj.weight"),
		mtpNorm("final_norm", "mtp.norm.weight", true))

	p.Ignore = []Ignore{
		{Prefix: "model.visual.", Reason: "vision tower: not part of the text TP tensor cache (the qwen36 vision model is built separately and is not served by this cache)"},
		{Template: sa + "q_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + q_norm) with cache path None (tt-cache.md §4)"},
		{Template: sa + "k_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + k_norm) with cache path None (tt-cache.md §4)"},
	}
	return p
}

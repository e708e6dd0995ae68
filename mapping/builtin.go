package mapping

import (
	"fmt"
	"sort"
	"strings"
)

// Built-in profiles: one per upstream line of the qwen36 tensor-parallel
// loader (tenstorrent/tt-metal models/demos/blackhole/qwen36), each named
// for what it is: <model>[-variant]@<line>.
const (
	// ProfileMTP is the MTP speculative-decoding line (PR #55548): it
	// caches the MTP head under mtp/. It is the default (BuiltinName):
	// the checkpoints ckpt serves carry a 15-tensor MTP head, and this is
	// the only line that loads it; main skips every mtp.* key.
	ProfileMTP = "qwen36-mtp@pr55548"
	// ProfileMain is the newest main that could be placed (the base of
	// branch atupe/qwen38-optimizations, 2026-10): a column-parallel
	// out.colpar copy of every GDN out-projection, no mtp/ files.
	ProfileMain = "qwen36@main-2026-10"
)

// BuiltinName is the name of the default built-in profile.
const BuiltinName = ProfileMTP

// formerNames maps names built-in profiles had before to their profile
// today, so that caches whose manifests name them still verify.
var formerNames = map[string]string{"qwen3_5-tt": ProfileMTP}

// Builtin returns a built-in profile by name (a fresh copy each call). A
// former name gives the profile it became.
func Builtin(name string) (*Profile, error) {
	if now, ok := formerNames[name]; ok {
		name = now
	}
	switch name {
	case ProfileMTP:
		return qwen36Profile(lineMTP), nil
	case ProfileMain:
		return qwen36Profile(lineMain), nil
	}
	return nil, fmt.Errorf("unknown profile %q (built-in: %s)", name, strings.Join(BuiltinNames(), ", "))
}

// BuiltinNames lists the built-in profiles (former names excluded).
func BuiltinNames() []string {
	n := []string{ProfileMTP, ProfileMain}
	sort.Strings(n)
	return n
}

// Upstream revisions the built-in profiles transcribe. The stored index of
// tenstorrent/tt-metal holds no single commit with every file of a line,
// so each file is pinned at the revision it was read at, and Pinned.Files
// says so where a file could not be read at a commit of the line.
const (
	ttMetal = "tenstorrent/tt-metal"
	// prHead is the last reviewed head of tt-metal PR #55548 (Qwen MTP
	// spec decode, open; 2026-09-10), the line ProfileMTP stands for. No
	// qwen36 file is stored at it.
	prHead = "acd4eaccf17adb2c3e17c4738cb1c4fa3aa783f5"
	// mainHead is the newest commit of main-based qwen36 code the index
	// holds: branch atupe/qwen38-optimizations (QWEN38_HANDOFF.md@db6dc348,
	// 2026-10-09), whose own switches are opt-in, so with them off it is
	// main.
	mainHead = "db6dc348aa32b978b8602682dbae1e4aab8b6511"
	// mainShort is mainHead as the docs cite it.
	mainShort = "db6dc348"
	qwen36    = "models/demos/blackhole/qwen36/tt/"
	// weightMapping is the revision weight_mapping.py, the loader's
	// state-dict remap (prefixes stripped, vision and MTP keys dropped),
	// was read at.
	weightMapping = "1b43246cf2e30d807c770a02d495cad87f95098e"
	// moeWeights is the revision the MoE loader's expert and router files
	// were read at (the expert-parallel _ep_swiglu layout; its
	// model_config.py has is_moe_layer and kv_replication).
	moeWeights = "09c98edaf24f0da9b3fe9cfe70221861b907f8f0"
	moeShort   = "09c98eda"
)

// qwen36Line is what distinguishes the upstream lines of the qwen36 loader.
type qwen36Line struct {
	name, description string
	pinned            *Pinned
	// mtp: the tensor-parallel MTP head is cached under mtp/ (else main's
	// loader drops every mtp.* key).
	mtp bool
	// outColpar: gdn/tp.py also caches a column-parallel copy of the GDN
	// out-projection (layers.N/tp/out.colpar) on meshes of more than one
	// device.
	outColpar bool
	// gateUpFixed: mlp_gateup_agmm_enabled(n) is simply n > 1, without the
	// QWEN36_NO_AGMM override.
	gateUpFixed bool
	// fusedDecode: gdn/tp.py also caches the fp32 constants of the fused
	// GDN decode (dt_bias_fp32, neg_exp_A_fp32) under the
	// QWEN36_GDN_FUSED_DECODE switch.
	fusedDecode bool
}

var pinsShared = map[string]string{
	"models/common/rmsnorm.py":                          "01229001dc0cd8388e4e99e006b051ac914787a8",
	"models/tt_transformers/tt/embedding.py":            "093e581fb790338f638ef4e3a94cb75950742a5a",
	"ttnn/ttnn/distributed/distributed.py":              "012af9b07e4d4bd4d649b9619ab7ce3d624a5822",
	"ttnn/core/distributed/distributed_tensor.cpp":      "0104e87bcc12353d3a3461eaf4ccc2befd910d87",
	"ttnn/core/tensor/flatbuffer/tensor_flatbuffer.cpp": "1104590e4c497e044b2fcda6cfec04bfdc68f356",
	"tt_metal/impl/data_format/bfloat16.cpp":            "0266e6f1f3b025345ea752018469941cada53034",
	// The MoE loader (Qwen3.5/3.6-MoE, 35B-A3B), the same on both lines.
	qwen36 + "moe/weights.py": moeWeights + " (load_expert_weights: expert-parallel ShardTensorToMesh(dim=1), " +
		"moe.experts.{gate,up,down}_proj_ep_swiglu{tp}, gate/up BFLOAT4_B, down BFLOAT8_B, as_tensor(preprocess=_gate/_up/_down); " +
		"_stack_per_expert stacks {i}.gate_proj/up_proj/down_proj.weight into the fused layout)",
	qwen36 + "moe/router.py": moeWeights + " (Qwen36Router: moe.router.weight, [E, H] -> [1, 1, H, E] bf16 TILE, replicated)",
	qwen36 + "moe/shared.py": "19273ca2bd161a8409284f8873f0a046d0d8c3b0 (Qwen36SharedExpert: Qwen36MLP under shared_expert/ with " +
		"use_gateup_agmm=False; moe.shared_expert_gate.weight, [1, H] -> [1, 1, H, 1] bf16 TILE, replicated)",
	qwen36 + "moe/moe.py": "58878fce98f0feeada615b5c31fa8efd6109f7f4 (Qwen36MoE: router from mlp.gate, experts from mlp.experts, " +
		"the shared expert when shared_intermediate_size; every file under the layer's MLP cache path)",
}

// pins are a line's pinned files (the shared ones included), the note on
// their coherence and what remains open; NotAtLine lists the files whose
// revision is not the line's commit.
func pins(commit, note string, files map[string]string, open []string) *Pinned {
	all := map[string]string{}
	for k, v := range pinsShared {
		all[k] = v
	}
	for k, v := range files {
		all[k] = v
	}
	var notAt []string
	for f, rev := range all {
		if !strings.HasPrefix(rev, commit) {
			notAt = append(notAt, f)
		}
	}
	sort.Strings(notAt)
	return &Pinned{Repo: ttMetal, Commit: commit, Path: "models/demos/blackhole/qwen36", Files: all, Note: note, NotAtLine: notAt, Open: open}
}

// What remains open on both lines.
var (
	openSwiGLU = "prepare_for_fused_swiglu (models/tt_dit/utils/tensor.py), which orders the tiles of mlp.gate_up.weight.swiglu.tp, is in no " +
		"stored version: the gate/up tile interleave comes from the fused matmul's contract"
	openReplicated = "the topology of a replicated (unsharded) file and the alignment of ROW_MAJOR files are inferred from ttnn 0.81.1's own files, " +
		"not read from a cache the stack wrote"
	openMoE = "the MoE loader (moe/weights.py, router.py @" + moeShort + ", shared.py @19273ca2, moe.py @58878fce) is stored at neither line's " +
		"commit: the newest stored revisions with the expert-parallel _ep_swiglu layout were read, for both lines; the Wormhole branch of " +
		"load_expert_weights (one fused moe.experts.gate_up_proj_ep_swiglu{N}) is not transcribed"
	openMTPKeys = "whether the stack's FP8 loader keeps the mtp.* tensors: weight_mapping.py@1b43246c drops them, the MTP line's drafter loads them"
)

var (
	lineMTP = qwen36Line{name: ProfileMTP, mtp: true,
		description: "Qwen3.5/3.6-style hybrid (Gated DeltaNet + gated full attention + MTP) on a 1xN Blackhole mesh, as the tt-metal qwen36 " +
			"tensor-parallel loader of the MTP spec-decode line (PR #55548, open) caches it: the MTP head under mtp/",
		pinned: pins(prHead, "no qwen36 file is stored at the PR head "+prHead+": the files below are versions that have the MTP line's switches "+
			"and names, read at the commits given", map[string]string{
			qwen36 + "model_config.py": "009f48d45918d773b0023cb6b71f91a4c6f35712",
			qwen36 + "gdn/tp.py":       "53e404baed2ec4a51eb27e34e8b3db9e5703a87c",
			qwen36 + "attention/tp.py": "01c6e8ed4a20a142e6eacf0b94cd217c4b7d9fec",
			qwen36 + "layer.py":        "002e83d4d0f4da3622aca7307230b15045d48fbd",
			qwen36 + "model.py":        "015056e66cf13d87a2b18471a4e06c68090b576f",
			qwen36 + "tp_common.py":    "00ef57aa80a26290c3516bfcb556b569a1cb396c",
			qwen36 + "mlp.py": mainHead + " (the stored revision read that writes mlp.gate_up.weight.swiglu.tp: _build_gate_up when " +
				"tp_common.mlp_gateup_agmm_enabled(tp) and use_gateup_agmm; the MTP line's own versions of that block are stored without a commit. " +
				"mlp.py@0740b8081708b3af60442c9463955e3ba5aa3f81 predates the fused SwiGLU and writes no such file, but layer.py@002e83d4 " +
				"skips the ff-norm all-gather whenever mlp_gateup_agmm_enabled, which only an mlp.py with the fused weight serves)",
			qwen36 + "mtp.py": "stored tensor-parallel Qwen36MTP versions (tp_common.shard_w fc, cache root mtp/); the index does not expose their commits",
		}, []string{
			"every file: no qwen36 file is stored at the PR head " + prHead + " (nor at 96f3f041), so no file could be read at the line",
			"the commits of the tensor-parallel mtp.py and of the MTP line's mlp.py (both stored, without a commit)",
			openSwiGLU, openReplicated, openMTPKeys, openMoE,
		})}
	lineMain = qwen36Line{name: ProfileMain, outColpar: true, gateUpFixed: true, fusedDecode: true,
		description: "Qwen3.5/3.6-style hybrid (Gated DeltaNet + gated full attention) on a 1xN Blackhole mesh, as tt-metal main's qwen36 " +
			"tensor-parallel loader (2026-10) caches it: out.colpar for every GDN layer, the fused GDN decode's fp32 dt_bias_fp32 and " +
			"neg_exp_A_fp32, fused-SwiGLU gate_up on every multi-device mesh, no MTP head (main drops mtp.*)",
		pinned: pins(mainHead, "base of branch atupe/qwen38-optimizations (eac0c9b30aa, 755a0d6461d, "+mainShort+"; QWEN38_HANDOFF.md@"+mainShort+" is "+
			"dated 2026-10-09 and measures against main); its opt-in switches are off here, its default-on QWEN36_GDN_FUSED_DECODE is on "+
			"(gdn_fused_decode_enabled); the files not stored at "+mainShort+" were read at the revisions given", map[string]string{
			qwen36 + "gdn/tp.py": mainHead + " (out.colpar when num_devices > 1; dt_bias_fp32 and neg_exp_A_fp32, FLOAT32 TILE ShardTensorToMesh(-1), " +
				"when gdn_fused_decode_enabled() and gdn_conv_kernel_size == 4)",
			qwen36 + "mlp.py":       mainHead + " (_build_gate_up with as_tensor(preprocess=...), prepare_for_fused_swiglu(ndev=tp, gate_is_first=True))",
			qwen36 + "tp_common.py": mainHead + " (mlp_gateup_agmm_enabled(n) = n > 1; the BFP4 / BFP8 dtype switches default off)",
			qwen36 + "model.py": mainHead + " (tt_transformers Embedding; RMSNorm weight_key norm, is_distributed at TP > 1; output.weight.vshard " +
				"when the vocabulary divides by the mesh: the names of the MTP line)",
			qwen36 + "attention/tp.py": mainHead + " (wqkv_fused_qkvg.il / .dramshard and wo, q_norm / k_norm not cached: the names of the MTP line; " +
				"no .rp content tag in this revision)",
			qwen36 + "weight_mapping.py": weightMapping + " (not stored at " + mainShort + "; load_qwen36_state_dict_fp8 " +
				"dequantises FP8 to bf16, passes other tensors through in their own dtype and skips every key that starts with mtp)",
			qwen36 + "model_config.py": "009f48d45918d773b0023cb6b71f91a4c6f35712 (not stored at " + mainShort + "; here proj_1d_decode and " +
				"mlp_1d_decode are set for every multi-device mesh, as in every stored version that has them, and gdn_out_weight_memcfg / " +
				"attn_wo_weight_memcfg are None, giving out and wo; some stored versions DRAM-shard them instead: out.dramshard, wo.dramshard)",
			qwen36 + "layer.py": "002e83d4d0f4da3622aca7307230b15045d48fbd (not stored at " + mainShort + "; here the norms are RMSNorm with " +
				"state_dict_prefix layers.N. at the cache root, the TP weights go under layers.N/tp and the MLP under layers.N, with the " +
				"constructor model.py@" + mainShort + " calls; model.py@" + mainShort + " shares a decode all-reduce with its layers that " +
				"this revision lacks, so the line's layer.py differs from it outside the cache paths)",
		}, []string{
			"layer.py, model_config.py and weight_mapping.py: not stored at " + mainShort + " nor at the branch's other commits (the index names " +
				"eac0c9b30aa and 755a0d6461d only by these prefixes); read at the revisions pinned",
			"neg_exp_A_fp32 values: −exp is computed in float64 and rounded to float32; torch's float32 exp (2.15.0 measured) differs from " +
				"that in the last bit for about 1 % of inputs, so such a value can be one unit in the last place from the stack's; " +
				"cache compare, cache identify --source and cache verify --read-data hold these files within 1 ulp (op neg_exp) and say so, " +
				"every other file byte for byte",
			openSwiGLU, openReplicated, openMoE,
		})}
)

// Profile variables of the built-in profile (the qwen36 config switches).
const (
	VarProj1DDecode = "proj_1d_decode"
	VarMLP1DDecode  = "mlp_1d_decode"
	VarGateUpAGMM   = "mlp_gateup_agmm_enabled"
	VarRopePermuted = "rope_permuted_enabled"
	// VarOutColpar is not a switch upstream: main's gdn/tp.py writes
	// out.colpar whenever the mesh has more than one device.
	VarOutColpar = "gdn_out_colpar"
	// VarGDNFusedDecode is gdn/tp.py's gdn_fused_decode_enabled() (the
	// environment variable QWEN36_GDN_FUSED_DECODE, on unless "0"): the
	// fused GDN decode's fp32 dt_bias_fp32 and neg_exp_A_fp32.
	VarGDNFusedDecode = "gdn_fused_decode_enabled"
)

// Builders for the built-in profile's rules.

func roundBF16() Step { return Step{Op: OpRound, DType: "BF16"} }
func addOne() Step {
	one := 1.0
	return Step{Op: OpAdd, Value: &one}
}
func transposeStep() Step              { return Step{Op: OpTranspose} }
func reshapeStep(shape ...string) Step { return Step{Op: OpReshape, Shape: shape} }
func fuse(parts ...Part) Step          { return Step{Op: OpFuse, Parts: parts} }

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
		{Source: src, Label: "k (linear_num_key_heads heads)", Offset: "linear_num_key_heads*linear_key_head_dim", Units: "linear_num_key_heads",
			UnitRows: "linear_key_head_dim"},
		{Source: src, Label: "v (linear_num_value_heads heads)", Offset: "2*linear_num_key_heads*linear_key_head_dim",
			Units: "linear_num_value_heads", UnitRows: "linear_value_head_dim"},
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
	// mlpLayer names the decoder layer whose MLP kind (Rule.MLP) a
	// fixed-layer scope's MLP rules follow (the MTP layer: the layer it
	// is built as).
	mlpLayer string
}

// with returns the scope's conditions plus more.
func (s scope) with(more ...Condition) Conditions {
	out := append(Conditions(nil), s.when...)
	return append(out, more...)
}

func (s scope) rule(r Rule) Rule {
	r.LayerType, r.Required = s.layerType, true
	if r.MLP != "" && s.layerType == "" {
		r.MLPLayer = s.mlpLayer
	}
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
			Part{Source: 1, Label: "k (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim", Replicate: true},
			Part{Source: 2, Label: "v (num_key_value_heads heads)", Units: "num_key_value_heads", UnitRows: "head_dim", Replicate: true},
			Part{Source: 0, Label: "gate (num_attention_heads heads)", Offset: "head_dim", Units: "num_attention_heads", UnitRows: "head_dim", Stride: "2*head_dim"},
		), transposeStep()},
		Placement: colParallel, DType: BFloat8B, Layout: Tile,
		Note: "q_proj rows hold [q_h | gate_h] per head; per device [all q | k | v | all gate], then transposed; with more devices than KV " +
			"heads device d takes KV head floor(d·kv_heads/N) whole (tp_common.replicate_kv_weight, called by attention/tp.py@01c6e8ed and " +
			"attention/tp.py@" + mainShort + " load_attention_weights_tp)"}
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
// gate/up all-gather matmul is enabled. On a MoE model it applies to the
// dense layers only.
func mlpRules(s scope) []Rule {
	out := tpMLP(s, s.id+"mlp.", s.dir+s.layer+"/", s.src+"mlp.", "intermediate_size", true)
	for i := range out {
		out[i].MLP = MLPDense
		out[i] = s.rule(out[i])
	}
	return out
}

// tpMLP is the tensor-parallel Qwen36MLP (mlp.py load_mlp_weights) of the
// projections under src, cached under dir with rule ids under id; units
// is the config variable of its intermediate size; gateUp adds the
// fused-SwiGLU weight (use_gateup_agmm).
func tpMLP(s scope, id, dir, src, units string, gateUp bool) []Rule {
	var out []Rule
	for _, n := range []string{"gate_proj", "up_proj"} {
		parts := fuse(Part{Source: 0, Label: n + " (" + units + " rows)", Units: units})
		il := matmulWeight(id+n, dir+"mlp."+n+".weight.tp", src+n+".weight", colParallel, BFloat4B, DRAMInterleaved, parts)
		il.When = s.with(on(VarMLP1DDecode))
		ds := matmulWeight(id+n+".dramshard", dir+"mlp."+n+".weight.dramshard.tp", src+n+".weight", colParallel, BFloat4B, DRAMWidthSharded, parts)
		ds.When = s.with(off(VarMLP1DDecode))
		out = append(out, il, ds)
	}
	out = append(out, matmulWeight(id+"down_proj", dir+"mlp.down_proj.weight.tp", src+"down_proj.weight", rowParallel, BFloat8B, DRAMInterleaved))
	if gateUp {
		out = append(out, Rule{ID: id + "gate_up", Target: dir + "mlp.gate_up.weight.swiglu.tp",
			Sources: []string{src + "gate_proj.weight", src + "up_proj.weight"}, When: s.with(on(VarGateUpAGMM)),
			Transform: []Step{roundBF16(), {Op: OpFuse, Interleave: true, Parts: []Part{
				{Source: 0, Label: "gate (" + units + "/32 tiles)", Units: units + "/32", UnitRows: "32"},
				{Source: 1, Label: "up (" + units + "/32 tiles)", Units: units + "/32", UnitRows: "32"},
			}}, transposeStep()},
			Placement: colParallel, DType: BFloat4B, Layout: Tile, Memory: DRAMInterleaved,
			Note: "prefill fused-SwiGLU weight: per device, 32-wide column tiles of gate^T and up^T alternate, gate first"})
	}
	return out
}

// Expert parallelism: the experts are split over the devices along the
// expert dimension (dim 1 of [1, E, in, out]), whole on each device.
var expertParallel = Placement{Kind: "shard", Dim: 1, Split: "rows"}

// moeRules are one sparse MoE block as the qwen36 MoE loader caches it
// under <layer>/ (moe/moe.py, moe/weights.py, moe/router.py,
// moe/shared.py): the routed experts expert-parallel, from the fused
// layout (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E,
// H, I]) or stacked from one tensor per expert (_stack_per_expert: the
// same files); the router and the shared expert's sigmoid gate
// replicated; the shared expert a tensor-parallel MLP under shared_expert/
// without the fused-SwiGLU weight.
func moeRules(s scope) []Rule {
	mlp := s.src + "mlp."
	dir := s.dir + s.layer + "/"
	var out []Rule
	add := func(r Rule) {
		r.MLP = MLPMoE
		out = append(out, s.rule(r))
	}
	const ep = "_ep_swiglu{num_devices}"
	wsrc := qwen36 + "moe/weights.py@" + moeShort + " load_expert_weights"
	for _, p := range []struct {
		name, dtype, offset, note string
	}{
		{"gate_proj", BFloat4B, "", "_gate: rows [:I] of each expert's [2I, H], transposed: [1, E, H, I]"},
		{"up_proj", BFloat4B, "moe_intermediate_size", "_up: rows [I:] of each expert's [2I, H], transposed: [1, E, H, I]"},
	} {
		steps := func(part Part) []Step {
			return []Step{roundBF16(), fuse(part), transposeStep(), reshapeStep("1", "rows/hidden_size", "hidden_size", "cols")}
		}
		label := p.name + " (num_experts experts)"
		fused := Rule{ID: s.id + "moe.experts." + p.name, Target: dir + "moe.experts." + p.name + ep,
			Sources: []string{mlp + "experts.gate_up_proj"},
			Transform: steps(Part{Source: 0, Label: label, Offset: p.offset, Units: "num_experts", UnitRows: "moe_intermediate_size",
				Stride: "2*moe_intermediate_size"}),
			Batch: "moe_intermediate_size", Placement: expertParallel, DType: p.dtype, Layout: Tile, Memory: DRAMInterleaved,
			Note: wsrc + ": " + p.note + ", ShardTensorToMesh(dim=1): num_experts/N whole experts per device"}
		add(fused)
		stacked := fused
		stacked.ID += ".per_expert"
		stacked.Sources = []string{mlp + "experts.{X}." + p.name + ".weight"}
		stacked.Stack = &Stack{Capture: "X", Count: "num_experts"}
		stacked.Transform = steps(Part{Source: 0, Label: label, Units: "num_experts", UnitRows: "moe_intermediate_size"})
		stacked.Note = wsrc + ": _stack_per_expert cats {i}.gate_proj and {i}.up_proj into the fused [E, 2I, H], so " +
			"the file is the fused layout's: " + p.note
		add(stacked)
	}
	down := Rule{ID: s.id + "moe.experts.down_proj", Target: dir + "moe.experts.down_proj" + ep,
		Sources: []string{mlp + "experts.down_proj"},
		Transform: []Step{roundBF16(), fuse(Part{Source: 0, Label: "down_proj (num_experts experts)", Units: "num_experts", UnitRows: "hidden_size"}),
			transposeStep(), reshapeStep("1", "rows/moe_intermediate_size", "moe_intermediate_size", "cols")},
		Batch: "hidden_size", Placement: expertParallel, DType: BFloat8B, Layout: Tile, Memory: DRAMInterleaved,
		Note: wsrc + ": _down: each expert's [H, I] transposed: [1, E, I, H], ShardTensorToMesh(dim=1)"}
	add(down)
	downStacked := down
	downStacked.ID += ".per_expert"
	downStacked.Sources = []string{mlp + "experts.{X}.down_proj.weight"}
	downStacked.Stack = &Stack{Capture: "X", Count: "num_experts"}
	downStacked.Note = wsrc + ": _stack_per_expert stacks {i}.down_proj.weight into the fused [E, H, I]; each expert transposed: [1, E, I, H]"
	add(downStacked)

	router := Rule{ID: s.id + "moe.router", Target: dir + "moe.router.weight", Sources: []string{mlp + "gate.weight"},
		Transform: []Step{roundBF16(), transposeStep(), reshapeStep("1", "1", "rows", "cols")},
		Placement: replicated, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved,
		Note: qwen36 + "moe/router.py@" + moeShort + " Qwen36Router: preprocess t.to(bfloat16).transpose(-2, -1).unsqueeze(0).unsqueeze(0), " +
			"[E, H] -> [1, 1, H, E], ReplicateTensorToMesh"}
	add(router)
	shared := Conditions{{Key: "shared_expert_intermediate_size", Op: "gt", Value: 0.0}}
	gate := Rule{ID: s.id + "moe.shared_expert_gate", Target: dir + "moe.shared_expert_gate.weight", Sources: []string{mlp + "shared_expert_gate.weight"},
		When:      s.with(shared...),
		Transform: []Step{roundBF16(), transposeStep(), reshapeStep("1", "1", "rows", "cols")},
		Placement: replicated, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved,
		Note: qwen36 + "moe/shared.py@19273ca2 Qwen36SharedExpert: preprocess t.to(bfloat16).transpose(-2, -1).unsqueeze(0).unsqueeze(0), " +
			"[1, H] -> [1, 1, H, 1], ReplicateTensorToMesh"}
	add(gate)
	for _, r := range tpMLP(s, s.id+"moe.shared_expert.", dir+"shared_expert/", mlp+"shared_expert.", "shared_expert_intermediate_size", false) {
		if r.When == nil {
			r.When = s.with()
		}
		r.When = append(r.When, shared...)
		r.Note = strings.TrimPrefix(r.Note+"; ", "; ") + "the shared expert: Qwen36MLP(shared_state, tensor_cache_path / \"shared_expert\", " +
			"use_gateup_agmm=False) (" + qwen36 + "moe/shared.py@19273ca2)"
		add(r)
	}
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

func qwen36Profile(line qwen36Line) *Profile {
	p := &Profile{
		Name:        line.name,
		Description: line.description,
		Pinned:      line.pinned,
		Arch:        ArchBlackhole,
		Tag:         "bfp8",
		// Qwen3_5ForConditionalGeneration (the releases) and
		// Qwen3_5ForCausalLM (text only) configs, and their MoE forms
		// (Qwen3_5MoeForConditionalGeneration, Qwen3_5MoeForCausalLM).
		ModelTypes: []string{"qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"},
		Aliases: []Alias{{Prefix: "model.", As: textPrefix,
			Note: "text-only checkpoints (Qwen3_5ForCausalLM) store the text model under model.: the loader strips model.language_model. or " +
				"model. alike (" + qwen36 + "weight_mapping.py@" + weightMapping + ": remap_qwen36_state_dict, load_qwen36_state_dict_fp8)"}},
		Variables: []Variable{
			{Name: VarProj1DDecode, Default: true,
				Doc: "in-projections (GDN qkvzab, attention wqkv_fused_qkvg) cached DRAM-interleaved under .il names; false: DRAM-width-sharded " +
					"under .dramshard names",
				Upstream: qwen36 + "model_config.py@009f48d4 (_init_tp_config), read by gdn/tp.py@53e404ba and attention/tp.py@01c6e8ed"},
			{Name: VarMLP1DDecode, Default: true,
				Doc:      "MLP gate/up cached DRAM-interleaved as mlp.{gate,up}_proj.weight.tp; false: DRAM-width-sharded as mlp.{gate,up}_proj.weight.dramshard.tp",
				Upstream: qwen36 + "model_config.py@009f48d4 (_init_tp_config), read by mlp.py load_mlp_weights"},
			gateUpVar(line),
			{Name: VarRopePermuted, Default: false,
				Doc:         "permuted-head_dim RoPE folded into the q/k weights, with .rp.<sha256> content tags on the attention names",
				Upstream:    qwen36 + "attention/tp.py@01c6e8ed (rope_permuted_enabled; on only for the Wormhole N300 9B)",
				Unsupported: "the permuted layout (Wormhole N300 only) is not transcribed by this profile"},
		},
		Notes: []string{
			lineNote(line),
			"Qwen3.5/3.6-MoE (model_type qwen3_5_moe): a layer is MoE when num_experts > 0, it is not in mlp_only_layers and (L+1) % " +
				"decoder_sparse_step == 0 (model_config.py@" + moeShort + " is_moe_layer); it has no dense mlp.* files but, under layers.L/, " +
				"moe.experts.{gate,up,down}_proj_ep_swiglu{N} (expert-parallel, ShardTensorToMesh(dim=1), each expert transposed), " +
				"moe.router.weight, moe.shared_expert_gate.weight and the shared expert as a TP MLP under shared_expert/; fused " +
				"(mlp.experts.gate_up_proj, down_proj) and per-expert (mlp.experts.{i}.*_proj.weight) checkpoints give the same files.",
			"Switches: proj_1d_decode and mlp_1d_decode (model_config sets both for every multi-device mesh) select the interleaved .il / .tp names; " +
				"mlp_gateup_agmm_enabled adds the fused-SwiGLU gate_up file. Override with --set NAME=false to get the DRAM-width-sharded .dramshard " +
				"names of stacks that turn them off.",
			mtpNote(line),
			"tok_embeddings.weight (tt_transformers Embedding) and every *_distributed norm use ShardTensor2dMesh on the 1xN mesh: the file records " +
				"distribution shape [1, N] and placements [Replicate, Shard(d)].",
			"output.weight.vshard (lm_head, vocab-sharded bfp8) and the final norm.weight come from model.py; model.py falls back to a replicated " +
				"output.weight when vocab does not divide by the mesh, which this profile reports as an error instead.",
			"mlp.gate_up.weight.swiglu.tp: per device, 32-column tiles of gate^T and up^T alternate (weight tile 2p = gate tile p, 2p+1 = up tile " +
				"p), taken from the fuse_swiglu matmul contract; prepare_for_fused_swiglu itself was not found in the index.",
			"Full-attention q_norm / k_norm (text and MTP) are not cached (attention/tp.py replicates them with cache path None). The GDN gated norm " +
				"(norm_w) stores the plain scale, without +1.",
			"Values: FP8 weights are dequantised (code × block scale) and rounded to bf16 nearest-even, as the loader's bf16 dequant and shard_w's " +
				".to(bfloat16) do; a NaN torch produces (cast, dequantisation, bf16 arithmetic) gets the bits cache build --nan names (0xFFFF from the " +
				"vectorised kernels of AVX2/AVX-512 hosts, or 0x7FC0), a bf16 NaN only cast to bf16 keeps its bits; norms add 1.0 in bf16 (torch bf16 arithmetic).",
			"Newer gdn/tp.py revisions add tap_stack and .padN / .pad{rows} / .abgap{n} suffixes that are empty on Blackhole; the pinned revision " +
				"has none. With more devices than KV heads attention/tp.py replicates KV heads (tp_common.replicate_kv_weight): device d holds KV " +
				"head floor(d·kv_heads/N) of wqkv_fused_qkvg. The " +
				"T3K-only drafter LM head output.weight.vshard.bfp4 of later mtp.py revisions is not written on Blackhole.",
		},
	}
	addGDNRules(p, line)
	if line.fusedDecode {
		addGDNFusedDecode(p)
	}
	addDecoderRules(p, line)

	p.Vision = visionProfile()
	sa := layerPfx + "self_attn."
	p.Ignore = []Ignore{
		visionIgnore(),
		{Template: sa + "q_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + q_norm) with cache path None"},
		{Template: sa + "k_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + k_norm) with cache path None"},
	}
	if line.mtp {
		p.Ignore = append(p.Ignore,
			Ignore{Template: "mtp.layers.0.self_attn.q_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + q_norm) with cache path None"},
			Ignore{Template: "mtp.layers.0.self_attn.k_norm.weight", Reason: "not cached: attention/tp.py replicates (1 + k_norm) with cache path None"})
	} else {
		p.Ignore = append(p.Ignore, Ignore{Prefix: "mtp.",
			Reason: "MTP head: this line has no tensor-parallel MTP and its loader drops every mtp.* key " +
				"(weight_mapping.load_qwen36_state_dict_fp8); use profile " + ProfileMTP + " to cache it"})
	}
	return p
}

// addGDNRules appends the rules of the Gated DeltaNet layers to p, and
// the out.colpar variable of a line that has it.
func addGDNRules(p *Profile, line qwen36Line) {
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	lin := "linear_attention"
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
	if line.outColpar {
		colpar := matmulWeight("gdn.out.colpar", "layers.{L}/tp/out.colpar", la+"out_proj.weight", colParallel, BFloat8B, DRAMInterleaved)
		colpar.LayerType, colpar.Required, colpar.When = lin, true, Conditions{on(VarOutColpar)}
		colpar.Note = "column-parallel copy of the out-projection for prefill (decode keeps the row-sharded out): shard_w(out_proj.weight, dim=-1, bfloat8_b, DRAM)"
		add(colpar)
		p.Variables = append(p.Variables, Variable{Name: VarOutColpar, Default: true,
			Doc:         "every GDN layer also caches the column-parallel out-projection layers.N/tp/out.colpar on a mesh of more than one device",
			Upstream:    qwen36 + "gdn/tp.py@" + mainShort + " (load_gdn_weights_tp: if num_devices > 1)",
			Unsupported: "not a switch upstream: written whenever the mesh has more than one device"})
	}
	for _, n := range []string{"dt_bias", "A_log"} {
		add(Rule{ID: "gdn." + n, Target: "layers.{L}/tp/" + n, Sources: []string{la + n}, LayerType: lin, Required: true,
			Transform: []Step{roundBF16(), fuse(Part{Source: 0, Label: n + " (linear_num_value_heads heads)", Units: "linear_num_value_heads"}),
				reshapeStep("1", "1", "rows")},
			Placement: colParallel, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved})
	}
	add(Rule{ID: "gdn.norm_w", Target: "layers.{L}/tp/norm_w", Sources: []string{la + "norm.weight"}, LayerType: lin, Required: true,
		Transform: []Step{roundBF16(), reshapeStep("1", "1", "rows")},
		Placement: replicated, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved})
	for j := 0; j < 4; j++ {
		add(Rule{ID: fmt.Sprintf("gdn.tap%d", j), Target: fmt.Sprintf("layers.{L}/tp/tap%d", j), Sources: []string{la + "conv1d.weight"},
			LayerType: lin, Required: true, Assert: []string{"linear_conv_kernel_dim == 4"},
			Transform: []Step{roundBF16(), {Op: OpSelectCols, Start: fmt.Sprint(j), Count: "1"}, fuse(gdnQKVParts(0)...), reshapeStep("1", "1", "rows")},
			Placement: colParallel, DType: BFloat16, Layout: Tile, Memory: DRAMInterleaved,
			Note: "conv kernel tap j of every channel, channels reordered per device like qkv"})
	}
}

// addGDNFusedDecode appends the rules of the fused decode's float32
// constants of the Gated DeltaNet layers to p, and their variable.
func addGDNFusedDecode(p *Profile) {
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	lin := "linear_attention"
	la := layerPfx + "linear_attn."
	for _, f := range []struct {
		name, src string
		steps     []Step
		note      string
	}{
		{"dt_bias_fp32", "dt_bias", nil, "_shard_small_fp32(dt_bias): the source's values in float32 (.float()), no bf16 rounding"},
		{"neg_exp_A_fp32", "A_log", []Step{{Op: OpNegExp}}, "_shard_small_fp32(-torch.exp(A_log.float())): −exp in float32, no bf16 rounding"},
	} {
		steps := append(append([]Step(nil), f.steps...), fuse(Part{Source: 0, Label: f.src + " (linear_num_value_heads heads)", Units: "linear_num_value_heads"}),
			reshapeStep("1", "1", "rows"))
		add(Rule{ID: "gdn." + f.name, Target: "layers.{L}/tp/" + f.name, Sources: []string{la + f.src}, LayerType: lin, Required: true,
			When: Conditions{on(VarGDNFusedDecode)}, Assert: []string{"linear_conv_kernel_dim == 4"},
			Transform: steps, Placement: colParallel, DType: Float32, Layout: Tile, Memory: DRAMInterleaved,
			Note: f.note + "; [1, 1, heads], ShardTensorToMesh(dim=-1)"})
	}
	p.Variables = append(p.Variables, Variable{Name: VarGDNFusedDecode, Default: true,
		Doc: "every GDN layer also caches the fused decode's float32 constants layers.N/tp/dt_bias_fp32 and layers.N/tp/neg_exp_A_fp32 " +
			"(FLOAT32 TILE, sharded like dt_bias); false (QWEN36_GDN_FUSED_DECODE=0): no such files",
		Upstream: qwen36 + "gdn/tp.py@" + mainShort + " (gdn_fused_decode_enabled(): QWEN36_GDN_FUSED_DECODE, default \"1\"; load_gdn_weights_tp " +
			"writes them when it is on and gdn_conv_kernel_size == 4)"})
}

// addDecoderRules appends to p the rules of the full-attention layers,
// the MLP and norms of every layer, the embedding, final norm and LM head,
// and the MTP head of a line that has one.
func addDecoderRules(p *Profile, line qwen36Line) {
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	full := "full_attention"

	// Gated full-attention layers (tt/attention/tp.py), the MLP of every
	// layer (tt/mlp.py) and the per-layer norms at the cache root
	// (tt/layer.py, models/common/rmsnorm.py).
	add(attentionRules(scope{layer: "layers.{L}", src: layerPfx, layerType: full})...)
	add(mlpRules(scope{layer: "layers.{L}", src: layerPfx, layerType: AnyLayer})...)
	add(moeRules(scope{layer: "layers.{L}", src: layerPfx, layerType: AnyLayer})...)
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

	if line.mtp {
		add(mtpRules()...)
	}
}

// mtpRules are the MTP head as the MTP line's tt/mtp.py (Qwen36MTP,
// tensor parallel) caches it, under the cache root mtp/.
func mtpRules() []Rule {
	var out []Rule
	add := func(rs ...Rule) { out = append(out, rs...) }
	mtp := scope{id: "mtp.", dir: "mtp/", src: "mtp.", when: Conditions{{Key: "mtp_num_hidden_layers", Op: "gt", Value: 0.0}}}
	fc := matmulWeight("mtp.fc", "mtp/fc", "mtp.fc.weight", colParallel, BFloat8B, DRAMInterleaved)
	fc.Note = "tp_common.shard_w(mtp.fc.weight, dim=-1, bfloat8_b, DRAM): [2H, H] column-sharded"
	add(mtp.rule(fc))
	for _, n := range []string{"pre_fc_norm_embedding", "pre_fc_norm_hidden", "norm"} {
		add(rmsNorm(mtp, "norm."+n, "mtp."+n+".weight", n+".weight")...)
	}
	layer := scope{id: "mtp.layer.", dir: "mtp/", layer: mtpLayer, src: "mtp.layers.0.", when: mtp.when, mlpLayer: FirstFullAttentionLayer}
	add(attentionRules(layer)...)
	add(mlpRules(layer)...)
	add(moeRules(layer)...)
	add(decoderNorms(layer)...)

	return out
}

// gateUpVar is the fused-SwiGLU switch as the line has it.
func gateUpVar(line qwen36Line) Variable {
	v := Variable{Name: VarGateUpAGMM, Default: true,
		Doc: "every dense MLP also caches the prefill fused-SwiGLU weight mlp.gate_up.weight.swiglu.tp; false (QWEN36_NO_AGMM=1, or Wormhole " +
			"in later revisions): no such file",
		Upstream: qwen36 + "tp_common.py mlp_gateup_agmm_enabled(num_devices), read by mlp.py load_mlp_weights"}
	if line.gateUpFixed {
		v.Doc = "every dense MLP also caches the prefill fused-SwiGLU weight mlp.gate_up.weight.swiglu.tp on a mesh of more than one device"
		v.Upstream = qwen36 + "tp_common.py@" + mainShort + " (mlp_gateup_agmm_enabled(n) is n > 1), read by mlp.py@" + mainShort
		v.Unsupported = "not a switch on this line: mlp_gateup_agmm_enabled(n) is n > 1, without the QWEN36_NO_AGMM override"
	}
	return v
}

func lineNote(line qwen36Line) string {
	if line.mtp {
		return "Layout of the qwen36 tensor-parallel loader on a 1xN Blackhole mesh as of the MTP spec-decode line (tt-metal PR #55548); " +
			"pinned.files names the revision each upstream file was read at (the stored index holds none of them at the PR head)."
	}
	return "Layout of tt-metal main's qwen36 tensor-parallel loader on a 1xN Blackhole mesh (2026-10: the base of branch " +
		"atupe/qwen38-optimizations, with that branch's opt-in switches off); pinned.files says which files were read at that line and which only at other revisions."
}

func mtpNote(line qwen36Line) string {
	if line.mtp {
		return "MTP head (Qwen36MTP, num_devices > 1) under mtp/: fc column-sharded bfp8 (shard_w); the norms pre_fc_norm_embedding, " +
			"pre_fc_norm_hidden and norm as RMSNorm with state_dict_prefix mtp. (+1, each with its _distributed twin); the decoder layer " +
			"mtp.layers.0 built as text layer first_full_attention_layer (3 for the 27B), so its files carry that layer's names under mtp/."
	}
	return "No MTP head: main has no tensor-parallel MTP and weight_mapping.load_qwen36_state_dict_fp8 skips every key that starts with mtp; " +
		"the mtp.* tensors are listed as ignored with that reason (profile " + ProfileMTP + " caches them). GDN layers also get out.colpar, the " +
		"column-parallel out-projection used in prefill, and with gdn_fused_decode_enabled (QWEN36_GDN_FUSED_DECODE, on by default) the " +
		"fused decode's float32 dt_bias_fp32 and neg_exp_A_fp32 (= −exp(A_log), computed in float32)."
}

// ProfileInfo describes a built-in profile for listings (ckpt map
// --list-profiles): its name, whether it is the default, the names it had
// before, what it stands for, its upstream pins and its variables.
type ProfileInfo struct {
	Name        string     `json:"name"`
	Default     bool       `json:"default"`
	FormerNames []string   `json:"former_names,omitempty"`
	Description string     `json:"description"`
	Pinned      *Pinned    `json:"pinned"`
	Variables   []Variable `json:"variables"`
}

// defaultReason says why BuiltinName is the default.
const defaultReason = "the checkpoints ckpt is made for carry a 15-tensor MTP head; " + ProfileMTP +
	" is the only line that caches it (main's loader drops every mtp.* key), so a cache built for the default serves speculative decoding"

// builtinProfiles lists the built-in profiles, in name order.
func builtinProfiles() []ProfileInfo {
	var out []ProfileInfo
	for _, name := range BuiltinNames() {
		p, err := Builtin(name)
		if err != nil {
			continue // cannot happen: BuiltinNames lists what Builtin makes
		}
		info := ProfileInfo{Name: name, Default: name == BuiltinName, Description: p.Description, Pinned: p.Pinned, Variables: p.Variables}
		for old, now := range formerNames {
			if now == name {
				info.FormerNames = append(info.FormerNames, old)
			}
		}
		sort.Strings(info.FormerNames)
		out = append(out, info)
	}
	return out
}

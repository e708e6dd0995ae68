package mapping

// The vision tower of a Qwen3.5/3.6 checkpoint (model.visual.*). The
// qwen36 demo caches it in a folder of its own beside the text model's
// (docs/tensor-cache-layout.md, "The vision tower"): the built-in profiles
// carry it as their vision part (Profile.Vision), a second profile planned
// into that folder, and the text plan lists the tower's tensors as ignored
// with a reason that names it.

// visionPrefix is the name prefix of the vision tower's tensors.
const visionPrefix = "model.visual."

// VisionInstructTag is the tag of the vision folder with instruct set.
const VisionInstructTag = "instruct_bfp8"

// PartVision is the Plan.Part (and cache manifest part) of a vision part.
const PartVision = "vision"

// Variables of the vision part.
const (
	// VarInstruct is tt_transformers' ModelArgs.instruct: the vision
	// folder is tensor_cache_instruct_bfp8 instead of tensor_cache_bfp8.
	VarInstruct = "instruct"
	// VarHostVisionEmbed is upstream's QWEN36_HOST_VISION_EMBED=1: the
	// tower embeds patches and positions on the host (the reference
	// model's patch_embed and fast_pos_embed_interpolate), so VisionEmbed
	// is not built and the three embedding files are not written.
	VarHostVisionEmbed = "host_vision_embed"
	// VisionReplicatedActs is the condition upstream calls
	// vision_replicated_acts: hidden_size / N is not a whole number of
	// tiles, so the tower keeps its activations replicated.
	visionReplicatedActs = "roundup(hidden_size, 32*N) - hidden_size"
)

// visionIgnore is the ignore rule of the built-in text profiles for the
// vision tower: the vision part plans it, into its own folder.
func visionIgnore() Ignore {
	return Ignore{Prefix: visionPrefix, Reason: "vision tower: the qwen36 demo caches it in its own folder <device>/tensor_cache_bfp8 " +
		"(tensor_cache_instruct_bfp8 with --set instruct=true, when HF_MODEL contains \"instruct\" or \"it\"); the profile's vision part " +
		"plans it there (docs/tensor-cache-layout.md, The vision tower)"}
}

// Upstream revisions of the vision part (models/demos/blackhole/qwen36/tt/vision/).
const (
	qwen36Vision = qwen36 + "vision/"
	visionAttn   = "14f34ccba06bb676f58f7ff53724fe178e4dfffc"
	visionMLP    = "3b721b87ebc20a0f4a9696bbfe0632d3373d6322"
	visionNorm   = "0abb35c657de59215a23539c04335f498eeaa810"
	visionBlock  = "1848d13c87cab7e1f433ea9ff2ccd65ad24034cd"
	visionMerger = "1a6b64e03908f3ef0493692a2a6017f74ae06796"
	visionEmbed  = "1c6e8f62e6b6c2e213b1e24e4116dc7a20781731"
	visionConfig = "1a6b64e03908f3ef0493692a2a6017f74ae06796"
	// visionModel is the stored model.py that builds VisionEmbed (the
	// embedding on the device unless QWEN36_HOST_VISION_EMBED=1);
	// visionModelHost the stored one that embeds on the host only.
	visionModel     = "00c023afa53f9bf3793bb395f62a38be16adab91"
	visionModelHost = "d49bb17261dbfb4601cfc2014a1dd6b87f06206f"
	loadCkpts       = "009c27a3b2394128cb35a0a1e5d5d73680abaf35"
)

// visionProfile is the vision part of the built-in profiles: the files
// DropInVisionTransformer writes (docs/tensor-cache-layout.md, The vision
// tower), under <device>/tensor_cache_bfp8.
func visionProfile() *Profile {
	p := &Profile{
		Name: "qwen36-vision",
		Description: "the qwen36 demo's tensor-parallel vision tower (DropInVisionTransformer) on a 1xN Blackhole mesh, in its own cache " +
			"folder <device>/tensor_cache_bfp8 beside the text model's",
		Pinned: &Pinned{Repo: ttMetal, Path: "models/demos/blackhole/qwen36/tt/vision", Files: map[string]string{
			qwen36Vision + "vision_attention.py": visionAttn,
			qwen36Vision + "vision_mlp.py":       visionMLP,
			qwen36Vision + "vision_layernorm.py": visionNorm,
			qwen36Vision + "vision_block.py":     visionBlock,
			qwen36Vision + "patch_merger.py":     visionMerger,
			qwen36Vision + "patch_embed.py":      visionEmbed,
			qwen36Vision + "model.py": visionModel + " (DropInVisionTransformer: VisionEmbed writes the embedding files unless " +
				"QWEN36_HOST_VISION_EMBED=1 or transformers lacks vision_utils.get_vision_bilinear_indices_and_weights; " +
				visionModelHost[:8] + " embeds on the host and writes none: --set " + VarHostVisionEmbed + "=true)",
			qwen36Vision + "vision_model_config.py": visionConfig + " (hidden_dim: intermediate_size rounded up to 32·N; padded_head_dim); " +
				"vision_replicated_acts ((hidden_size / N) % 32 != 0) as the stored versions that have it",
			"models/tt_transformers/tt/load_checkpoints.py": loadCkpts + " (standardize_hf_keys_multimodal, convert_hf_to_meta: qkv split, " +
				"q/k reverse_permute)",
			"models/tt_transformers/tt/model_config.py": "0039cbf0 (weight_cache_path: tensor_cache_bfp8, tensor_cache_instruct_bfp8 when instruct)",
		}, Note: "the vision files are stored at commits of their own, not at either text line's: both lines write the same vision files",
			Open: []string{"which stored version of vision_model_config.py, vision_attention.py and model.py a stack runs (22, 12 and 13 " +
				"versions): the index dates none of them and the repository's history could not be had, so the newest by commit date is " +
				"not known; model.py@" + visionModel[:8] + " describes its device embedding as replacing the host path model.py@" +
				visionModelHost[:8] + " has (the default follows it; --set " + VarHostVisionEmbed + "=true the host path)"}},
		Arch:      ArchBlackhole,
		Tag:       "bfp8",
		Folder:    FolderUnmeshed,
		Config:    "vision_config",
		Scope:     visionPrefix,
		TagSwitch: &TagSwitch{Var: VarInstruct, Tag: VisionInstructTag},
		Variables: []Variable{{Name: VarInstruct, Doc: "tt_transformers' ModelArgs.instruct (HF_MODEL, lower-cased, contains \"instruct\" or " +
			"\"it\"): the vision folder is tensor_cache_instruct_bfp8", Upstream: "models/tt_transformers/tt/model_config.py@0039cbf0 (weight_cache_path)"},
			{Name: VarHostVisionEmbed, Doc: "the patch and position embedding run on the host (upstream: QWEN36_HOST_VISION_EMBED=1, or a " +
				"stack at model.py@" + visionModelHost[:8] + "): no visual.patch_embed_proj_w/b or visual.pos_embed_w_rm files, their three " +
				"tensors ignored; false: VisionEmbed caches them",
				Upstream: qwen36Vision + "model.py@" + visionModel[:8] + " (DropInVisionTransformer.__init__: VisionEmbed unless " +
					"os.environ QWEN36_HOST_VISION_EMBED == \"1\"); model.py@" + visionModelHost[:8] + " has no VisionEmbed"}},
		Notes: []string{
			"Every sharded file uses ShardTensor2dMesh(dims=(None, d)) on the 1xN mesh, every replicated one ReplicateTensorToMesh; all DRAM interleaved.",
			"Heads: head_dim = hidden_size / num_heads, padded with zero rows (zero input columns for wo) to a multiple of 32; q and k rows " +
				"reordered per head from rotate-half to interleaved (reverse_permute). MLP: intermediate_size padded with zeros to a multiple of 32·N.",
			"When hidden_size / N is not a whole number of tiles (vision_replicated_acts), the out-projection biases are replicated (wo_bias_repl, " +
				"linear_fc2_b_repl) and so are the three embedding files.",
		},
	}
	blk := visionPrefix + "blocks.{L}."
	tblk := "visual.blocks.{L}."
	tp := ".tp{" + NumDevices + "}"
	hd := "hidden_size/num_heads"
	pad := "roundup(" + hd + ", 32) - " + hd
	hidden := "roundup(intermediate_size, 32*N)"
	col2D := Placement{Kind: "shard", Dim: -1, Split: "rows", MeshAxes: meshCols2D}
	row2D := Placement{Kind: "shard", Dim: -2, Split: "cols", MeshAxes: meshCols2D}
	repl := Condition{Expr: visionReplicatedActs, Op: "ne", Value: 0.0}
	frac := Condition{Expr: visionReplicatedActs, Op: "eq", Value: 0.0}
	r := visionRule
	block := func(rl Rule) Rule {
		rl.LayerType = AnyLayer
		return rl
	}
	tile4 := reshapeStep("1", "1", "rows", "cols")
	vec := reshapeStep("rows")
	heads := func(ordered bool) []Part {
		q := Part{Source: 0, Label: "q (num_heads heads)", Units: "num_heads", UnitRows: hd, Pad: pad}
		k := Part{Source: 0, Label: "k (num_heads heads)", Offset: "hidden_size", Units: "num_heads", UnitRows: hd, Pad: pad}
		v := Part{Source: 0, Label: "v (num_heads heads)", Offset: "2*hidden_size", Units: "num_heads", UnitRows: hd, Pad: pad}
		if ordered {
			q.Order, k.Order = OrderInterleaveHalves, OrderInterleaveHalves
		}
		return []Part{q, k, v}
	}
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	attnNote := "vision_attention.py@" + visionAttn[:8]
	add(block(r("attn.wqkv", tblk+"attention.wqkv_col"+tp, blk+"attn.qkv.weight", col2D, BFloat8B, Tile, nil,
		attnNote+": per device [q | k | v] of its heads, each head padded to a multiple of 32 rows, q and k reverse_permuted; transposed",
		fuse(heads(true)...), transposeStep(), tile4)))
	add(block(r("attn.wqkv_bias", tblk+"attention.wqkv_bias_col"+tp, blk+"attn.qkv.bias", col2D, BFloat8B, Tile, nil,
		attnNote+": the bias in the order of wqkv_col", fuse(heads(true)...), vec)))
	add(block(r("attn.wo", tblk+"attention.wo_row"+tp, blk+"attn.proj.weight", row2D, BFloat8B, Tile, nil,
		attnNote+": proj transposed, each head's input rows padded to a multiple of 32",
		Step{Op: OpSelectCols, Start: "0", Count: "hidden_size", Unit: hd, Pad: pad}, transposeStep(), tile4)))
	add(block(r("attn.wo_bias_frac", tblk+"attention.wo_bias_frac"+tp, blk+"attn.proj.bias", col2D, BFloat8B, Tile, Conditions{frac},
		attnNote+": proj.bias, fractured like the block output", vec)))
	add(block(r("attn.wo_bias_repl", tblk+"attention.wo_bias_repl"+tp, blk+"attn.proj.bias", replicated, BFloat8B, Tile, Conditions{repl},
		attnNote+": proj.bias, replicated (vision_replicated_acts)", vec)))
	mlpNote := "vision_mlp.py@" + visionMLP[:8]
	add(block(r("mlp.fc1", tblk+"feed_forward.linear_fc1_w_col"+tp, blk+"mlp.linear_fc1.weight", col2D, BFloat8B, Tile, nil,
		mlpNote+": linear_fc1 transposed, its output width padded with zeros to hidden_dim (a multiple of 32·N)",
		Step{Op: OpPad, Rows: hidden}, transposeStep(), tile4)))
	add(block(r("mlp.fc1_bias", tblk+"feed_forward.linear_fc1_b_col"+tp, blk+"mlp.linear_fc1.bias", col2D, BFloat16, Tile, nil,
		mlpNote+": the bias padded to hidden_dim", Step{Op: OpPad, Rows: hidden}, vec)))
	add(block(r("mlp.fc2", tblk+"feed_forward.linear_fc2_w_row"+tp, blk+"mlp.linear_fc2.weight", row2D, BFloat8B, Tile, nil,
		mlpNote+": linear_fc2 transposed, its input rows padded with zeros to hidden_dim", Step{Op: OpPad, Cols: hidden}, transposeStep(), tile4)))
	add(block(r("mlp.fc2_bias_frac", tblk+"feed_forward.linear_fc2_b_frac"+tp, blk+"mlp.linear_fc2.bias", col2D, BFloat16, Tile, Conditions{frac},
		mlpNote+": the bias, fractured like the block output", vec)))
	add(block(r("mlp.fc2_bias_repl", tblk+"feed_forward.linear_fc2_b_repl"+tp, blk+"mlp.linear_fc2.bias", replicated, BFloat16, Tile, Conditions{repl},
		mlpNote+": the bias, replicated (vision_replicated_acts)", vec)))
	layerNorm := func(id, target, src string, blockRule bool) Rule {
		rl := r(id, target, src, replicated, BFloat16, Tile, nil,
			"vision_layernorm.py@"+visionNorm[:8]+": the vector expanded to [1, 32, hidden_size], cache name prefix + \"weight\" / \"bias\"",
			Step{Op: OpSelectCols, Start: "0", Count: "1", Repeat: "32"}, transposeStep(), reshapeStep("1", "rows", "cols"))
		if blockRule {
			rl = block(rl)
		}
		return rl
	}
	for _, n := range []string{"norm1", "norm2"} {
		for _, wb := range []string{"weight", "bias"} {
			add(layerNorm(n+"."+wb, tblk+n+wb, blk+n+"."+wb, true))
		}
	}
	mg, tmg := visionPrefix+"merger.", "visual.merger."
	mgNote := "patch_merger.py@" + visionMerger[:8]
	for _, wb := range []string{"weight", "bias"} {
		add(layerNorm("merger.norm."+wb, tmg+"norm"+wb, mg+"norm."+wb, false))
	}
	add(r("merger.fc1", tmg+"linear_fc1_w_col"+tp, mg+"linear_fc1.weight", col2D, BFloat8B, Tile, nil, mgNote+": linear_fc1 transposed",
		transposeStep(), tile4))
	add(r("merger.fc1_bias", tmg+"linear_fc1_b_col"+tp, mg+"linear_fc1.bias", col2D, BFloat16, Tile, nil, mgNote, vec))
	add(r("merger.fc2", tmg+"linear_fc2_w_row"+tp, mg+"linear_fc2.weight", row2D, BFloat8B, Tile, nil, mgNote+": linear_fc2 transposed",
		transposeStep(), tile4))
	add(r("merger.fc2_bias", tmg+"linear_fc2_b_frac"+tp, mg+"linear_fc2.bias", col2D, BFloat16, Tile, nil, mgNote, vec))
	addVisionEmbed(p, tp, col2D, frac, repl, tile4)
	return p
}

// visionRule is a required rule of the vision part: the source rounded to
// bf16, then steps, in DRAM.
func visionRule(id, target, src string, pl Placement, dt, layout string, when Conditions, note string, steps ...Step) Rule {
	return Rule{ID: "vision." + id, Target: target, Sources: []string{src}, Transform: append([]Step{roundBF16()}, steps...),
		Placement: pl, DType: dt, Layout: layout, Memory: DRAMInterleaved, When: when, Required: true, Note: note}
}

// addVisionEmbed appends to p the rules of the patch and position
// embedding files (fractured under frac, replicated under repl; tp is the
// cache names' device suffix) and their ignores on the host path.
func addVisionEmbed(p *Profile, tp string, col2D Placement, frac, repl Condition, tile4 Step) {
	r := visionRule
	add := func(rs ...Rule) { p.Rules = append(p.Rules, rs...) }
	embNote := "patch_embed.py@" + visionEmbed[:8]
	// The embedding files: written by VisionEmbed, which model.py@00c023af
	// builds unless QWEN36_HOST_VISION_EMBED=1; on the host path (that
	// switch, or model.py@d49bb172) the three tensors are read by the
	// reference model only and cached nowhere.
	device, host := off(VarHostVisionEmbed), on(VarHostVisionEmbed)
	hostReason := "not cached with --set " + VarHostVisionEmbed + "=true: DropInVisionTransformer embeds on the host (the reference model's " +
		"patch_embed and fast_pos_embed_interpolate) when QWEN36_HOST_VISION_EMBED=1 (" + qwen36Vision + "model.py@" + visionModel[:8] +
		"), as model.py@" + visionModelHost[:8] + " always does, and VisionEmbed writes no file"
	for _, n := range []string{"patch_embed.proj.weight", "patch_embed.proj.bias", "pos_embed.weight"} {
		p.Ignore = append(p.Ignore, Ignore{Template: visionPrefix + n, Reason: hostReason, When: Conditions{host}})
	}
	for _, rp := range []struct {
		sfx  string
		pl   Placement
		when Condition
	}{{"", col2D, frac}, {".repl", replicated, repl}} {
		pw := r("patch_embed.w"+rp.sfx, "visual.patch_embed_proj_w"+tp, visionPrefix+"patch_embed.proj.weight", rp.pl, BFloat16, Tile, Conditions{device, rp.when},
			embNote+": the Conv3d weight flattened to [in_channels·temporal_patch_size·patch_size², hidden_size]", transposeStep(), tile4)
		pw.Flat = true // proj.weight.reshape(embed_dim, -1)
		add(pw)
		add(r("patch_embed.b"+rp.sfx, "visual.patch_embed_proj_b"+tp, visionPrefix+"patch_embed.proj.bias", rp.pl, BFloat16, Tile, Conditions{device, rp.when},
			embNote+": [1, 1, 1, hidden_size]", transposeStep(), tile4))
		pos := rp.pl
		if pos.Kind == "shard" {
			pos = Placement{Kind: "shard", Dim: -1, Split: "cols", MeshAxes: meshCols2D}
		}
		add(r("pos_embed"+rp.sfx, "visual.pos_embed_w_rm"+tp, visionPrefix+"pos_embed.weight", pos, BFloat16, RowMajor, Conditions{device, rp.when},
			embNote+": ROW_MAJOR for ttnn.embedding"))
	}
}

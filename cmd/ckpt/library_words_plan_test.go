package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
)

// TestLibraryOptionWords holds, byte for byte, the lines of the CLI that
// libraries word with an option of the command (mapping's device and
// architecture problems, as map, cache verify and cache identify print
// them; the variant warning of ckpt.Open; a glob of the config's subset
// that does not compile), which the
// libraries spell through the CLI's ckpt.Words.
func TestLibraryOptionWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	llama := filepath.Join(dir, "llama")
	require.NoError(t, synth.Write(llama, synth.Small()))
	editJSON(t, filepath.Join(llama, "config.json"), func(m map[string]any) {
		m["model_type"], m["architectures"] = "llama", []any{"LlamaForCausalLM"}
	})
	cacheOut := filepath.Join(dir, "cache")
	buildSmall(t, src, cacheOut, "1x2")
	vo := bf16Save()
	vo.DType, vo.Variant = numfmt.F16, "fp16"
	variant := writeSynth(t, vo)
	subset := filepath.Join(dir, "subset")
	require.NoError(t, synth.Write(subset, synth.Small()))
	editJSON(t, filepath.Join(subset, "config.json"), func(m map[string]any) {
		m["ckpt_subset"] = map[string]any{"match": []any{"["}}
	})

	tests := []struct {
		name string
		env  map[string]string
		args []string
		mark string
		want string
	}{
		{"map: mesh larger than the board", map[string]string{"MESH_DEVICE": "N300"}, []string{"map", src, "--mesh", "1x4"}, "problem (",
			"problem (device): device folder N300 is a Wormhole board with 2 chip(s): a 1x4 mesh of 4 devices does not open on it (a mesh of at most 2 devices, or the device folder of a larger system: --device or MESH_DEVICE) (2 times)\n" +
				"problem (device): device folder N300 is a Wormhole board, and profile qwen36-mtp@pr55548 plans for Blackhole: on Wormhole the serving stack runs another line of the model (other file names and memory configs, not transcribed), so this would not be the cache it loads (a Blackhole device folder: --device or MESH_DEVICE; or a profile whose arch is wormhole_b0)\n" +
				"problem (indivisible): target layers.0/tp/tap0: q (linear_num_key_heads heads) has 2 units (linear_num_key_heads) along the sharded dimension, which do not divide by the 4 devices of mesh 1x4; the same for 14 more target(s): layers.0/tp/tap1, layers.0/tp/tap2, layers.0/tp/tap3 and 11 more\n" +
				"problem (indivisible): target layers.0/mlp.gate_up.weight.swiglu.tp: gate (intermediate_size/32 tiles) has 10 units (intermediate_size/32) along the sharded dimension, which do not divide by the 4 devices of mesh 1x4; the same for 4 more target(s): layers.1/mlp.gate_up.weight.swiglu.tp, layers.2/mlp.gate_up.weight.swiglu.tp, layers.3/mlp.gate_up.weight.swiglu.tp and 1 more\n" +
				"problem (device): device folder N300 is a Wormhole board, and profile qwen36-vision plans for Blackhole: on Wormhole the serving stack runs another line of the model (other file names and memory configs, not transcribed), so this would not be the cache it loads (a Blackhole device folder: --device or MESH_DEVICE; or a profile whose arch is wormhole_b0)\n" +
				"problem (indivisible): target visual.blocks.0.attention.wqkv_bias_col.tp4: q (num_heads heads) has 2 units (num_heads) along the sharded dimension, which do not divide by the 4 devices of mesh 1x4; the same for 1 more target(s): visual.blocks.0.attention.wqkv_col.tp4"},
		{"map: board of another architecture", map[string]string{"MESH_DEVICE": "N300"}, []string{"map", src}, "problem (",
			"problem (device): device folder N300 is a Wormhole board, and profile qwen36-mtp@pr55548 plans for Blackhole: on Wormhole the serving stack runs another line of the model (other file names and memory configs, not transcribed), so this would not be the cache it loads (a Blackhole device folder: --device or MESH_DEVICE; or a profile whose arch is wormhole_b0)\n" +
				"problem (device): device folder N300 is a Wormhole board, and profile qwen36-vision plans for Blackhole: on Wormhole the serving stack runs another line of the model (other file names and memory configs, not transcribed), so this would not be the cache it loads (a Blackhole device folder: --device or MESH_DEVICE; or a profile whose arch is wormhole_b0)"},
		{"map: no device folder upstream", nil, []string{"map", src, "--mesh", "1x3"}, "problem (",
			"problem (device): no blackhole device folder for 3 devices upstream (it names meshes of 1, 2, 4, 8, 32 devices); choose one with --device (2 times)\n" +
				"problem (indivisible): target output.weight.vshard: lm_head (vocab_size rows) has 512 units (vocab_size) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3\n" +
				"problem (indivisible): target tok_embeddings.weight: 128 columns of model.language_model.embed_tokens.weight along the sharded dimension do not divide by the 3 devices of mesh 1x3; the same for 6 more target(s): layers.0/tp/out, layers.1/tp/out, layers.2/tp/out and 3 more\n" +
				"problem (indivisible): target layers.0.input_layernorm.weight_distributed: hidden_size/32 rows of 32 has 4 units (hidden_size/32) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 13 more target(s): layers.0.post_attention_layernorm.weight_distributed, layers.1.input_layernorm.weight_distributed, layers.1.post_attention_layernorm.weight_distributed and 10 more\n" +
				"problem (indivisible): target layers.0/tp/A_log: A_log (linear_num_value_heads heads) has 4 units (linear_num_value_heads) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 2 more target(s): layers.1/tp/A_log, layers.2/tp/A_log\n" +
				"problem (indivisible): target layers.0/tp/tap0: q (linear_num_key_heads heads) has 2 units (linear_num_key_heads) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 14 more target(s): layers.0/tp/tap1, layers.0/tp/tap2, layers.0/tp/tap3 and 11 more\n" +
				"problem (indivisible): target layers.0/tp/dt_bias: dt_bias (linear_num_value_heads heads) has 4 units (linear_num_value_heads) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 2 more target(s): layers.1/tp/dt_bias, layers.2/tp/dt_bias\n" +
				"problem (indivisible): target layers.0/mlp.down_proj.weight.tp: 320 columns of model.language_model.layers.0.mlp.down_proj.weight along the sharded dimension do not divide by the 3 devices of mesh 1x3; the same for 4 more target(s): layers.1/mlp.down_proj.weight.tp, layers.2/mlp.down_proj.weight.tp, layers.3/mlp.down_proj.weight.tp and 1 more\n" +
				"problem (indivisible): target layers.0/mlp.gate_proj.weight.tp: gate_proj (intermediate_size rows) has 320 units (intermediate_size) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 4 more target(s): layers.1/mlp.gate_proj.weight.tp, layers.2/mlp.gate_proj.weight.tp, layers.3/mlp.gate_proj.weight.tp and 1 more\n" +
				"problem (indivisible): target layers.0/mlp.gate_up.weight.swiglu.tp: gate (intermediate_size/32 tiles) has 10 units (intermediate_size/32) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 4 more target(s): layers.1/mlp.gate_up.weight.swiglu.tp, layers.2/mlp.gate_up.weight.swiglu.tp, layers.3/mlp.gate_up.weight.swiglu.tp and 1 more\n" +
				"problem (indivisible): target layers.0/mlp.up_proj.weight.tp: up_proj (intermediate_size rows) has 320 units (intermediate_size) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 4 more target(s): layers.1/mlp.up_proj.weight.tp, layers.2/mlp.up_proj.weight.tp, layers.3/mlp.up_proj.weight.tp and 1 more\n" +
				"problem (indivisible): target layers.3/tp/wqkv_fused_qkvg.il: q (num_attention_heads heads) has 4 units (num_attention_heads) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 1 more target(s): mtp/layers.3/tp/wqkv_fused_qkvg.il\n" +
				"problem (indivisible): target mtp/fc: rows of mtp.fc.weight has 128 units (rows) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 3 more target(s): visual.merger.linear_fc1_b_col.tp3, visual.merger.linear_fc1_w_col.tp3, visual.merger.linear_fc2_b_frac.tp3\n" +
				"problem (indivisible): target visual.blocks.0.attention.wo_row.tp3: 64 columns of model.visual.blocks.0.attn.proj.weight along the sharded dimension do not divide by the 3 devices of mesh 1x3\n" +
				"problem (indivisible): target visual.blocks.0.attention.wqkv_bias_col.tp3: q (num_heads heads) has 2 units (num_heads) along the sharded dimension, which do not divide by the 3 devices of mesh 1x3; the same for 1 more target(s): visual.blocks.0.attention.wqkv_col.tp3"},
		{"map: architecture", nil, []string{"map", llama}, "problem (",
			"problem (architecture): profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)"},
		{"cache verify: architecture", nil, []string{"cache", "verify", cacheOut, "--source", llama, "--progress", "none", "--format", "text"}, "model_type",
			"stale: the source no longer maps with the cache's profile qwen36-mtp@pr55548 on mesh 1x2: problem (architecture): profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)\n" +
				"stale: the source no longer maps with the cache's profile qwen36-mtp@pr55548 on mesh 1x2: problem (architecture): profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)"},
		{"cache identify: architecture", nil, []string{"cache", "identify", cacheOut, "--source", llama, "--progress", "none"}, "model_type",
			"qwen36-mtp@pr55548   (defaults)                                                               does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  (defaults)                                                               does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36-mtp@pr55548   proj_1d_decode=false                                                     does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36-mtp@pr55548   mlp_1d_decode=false                                                      does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36-mtp@pr55548   mlp_gateup_agmm_enabled=false                                            does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  proj_1d_decode=false                                                     does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36@main-2026-10  mlp_1d_decode=false                                                      does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36@main-2026-10  gdn_fused_decode_enabled=false                                           does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36-mtp@pr55548   mlp_1d_decode=false proj_1d_decode=false                                 does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36-mtp@pr55548   mlp_gateup_agmm_enabled=false proj_1d_decode=false                       does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36-mtp@pr55548   mlp_1d_decode=false mlp_gateup_agmm_enabled=false                        does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  mlp_1d_decode=false proj_1d_decode=false                                 does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36@main-2026-10  gdn_fused_decode_enabled=false proj_1d_decode=false                      does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36@main-2026-10  gdn_fused_decode_enabled=false mlp_1d_decode=false                       does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36-mtp@pr55548   mlp_1d_decode=false mlp_gateup_agmm_enabled=false proj_1d_decode=false   does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  gdn_fused_decode_enabled=false mlp_1d_decode=false proj_1d_decode=false  does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36-mtp@pr55548   (defaults)              does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  (defaults)              does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  \n" +
				"qwen36-mtp@pr55548   host_vision_embed=true  does not map: 1 plan problem(s), first: profile qwen36-mtp@pr55548 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                   \n" +
				"qwen36@main-2026-10  host_vision_embed=true  does not map: 1 plan problem(s), first: profile qwen36@main-2026-10 serves model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text, not model_type \"llama\" (architectures LlamaForCausalLM): no mapping profile serves this architecture (built-in: qwen36-mtp@pr55548 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); qwen36@main-2026-10 (model_type qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text); a profile of your own: --rules FILE)                  "},
		{"verify: variant", nil, []string{"verify", variant, "--progress", "none", "--format", "text"}, "variant",
			"warn    index.variant           VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"inspect: variant", nil, []string{"inspect", variant}, "variant",
			"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"contract: variant", nil, []string{"contract", variant, "-o", filepath.Join(dir, "c.json"), "--progress", "none"}, "variant",
			"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"diff: variant", nil, []string{"diff", variant, variant, "--progress", "none"}, "variant",
			"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning\n" +
				"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"map: variant", nil, []string{"map", variant, "--summary"}, "variant",
			"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"extract: variant", nil, []string{"extract", variant, "--match", "**", "--out", filepath.Join(dir, "x.safetensors"), "--progress", "none"}, "variant",
			"ckpt: warning: VARIANT holds no model.safetensors.index.json and no model.safetensors, only the variant \"fp16\" (model.safetensors.index.fp16.json): ckpt reads it, as transformers' from_pretrained(variant=\"fp16\") does (without variant= it finds no weights here); --variant fp16 says so and silences this warning"},
		{"verify: subset glob", nil, []string{"verify", subset, "--progress", "none", "--format", "text"}, "glob",
			"fail    arch.config             config ckpt_subset: invalid --match glob \"[\": glob: syntax error at 1: unexpected end of input\n" +
				"skip    arch.missing            not checked: invalid --match glob \"[\": glob: syntax error at 1: unexpected end of input\n" +
				"skip    arch.unexpected         not checked: invalid --match glob \"[\": glob: syntax error at 1: unexpected end of input\n" +
				"skip    arch.shape              not checked: invalid --match glob \"[\": glob: syntax error at 1: unexpected end of input\n" +
				"skip    arch.dtype              not checked: invalid --match glob \"[\": glob: syntax error at 1: unexpected end of input"},
		{"verify json: subset glob", nil, []string{"verify", subset, "--progress", "none", "--format", "json"}, "glob",
			"      \"message\": \"config ckpt_subset: invalid --match glob \\\"[\\\": glob: syntax error at 1: unexpected end of input\",\n" +
				"      \"message\": \"not checked: invalid --match glob \\\"[\\\": glob: syntax error at 1: unexpected end of input\",\n" +
				"      \"message\": \"not checked: invalid --match glob \\\"[\\\": glob: syntax error at 1: unexpected end of input\",\n" +
				"      \"message\": \"not checked: invalid --match glob \\\"[\\\": glob: syntax error at 1: unexpected end of input\",\n" +
				"      \"message\": \"not checked: invalid --match glob \\\"[\\\": glob: syntax error at 1: unexpected end of input\","},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, stdout, stderr := runAppEnv(t, tc.env, tc.args...)
			got := strings.Join(linesWith(stdout+stderr, tc.mark), "\n")
			got = strings.ReplaceAll(strings.ReplaceAll(got, variant, "VARIANT"), dir, "DIR")
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestSchemeNotLaidOutWords holds, byte for byte, the plan problem of a
// weight of a scheme map and cache build do not lay out (a per-channel
// compressed-tensors FP8 weight, read by extract --dtype), which
// ckpt.BlockScale words with the caller's words.
func TestSchemeNotLaidOutWords(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(src, synth.Small()))
	var found bool
	for _, tc := range scaleCases(t) {
		if tc.name == "compressed-tensors per-channel weight_scale" {
			tc.mutate(src)
			found = true
		}
	}
	require.True(t, found)
	const w = "model.language_model.layers.1.mlp.down_proj.weight"
	want := "problem (scale): target layers.1/mlp.down_proj.weight.tp: tensor \"" + w + "\" (F8_E4M3) of " + filepath.Join(src, "model-00001-of-00004.safetensors") +
		" has scale companion \"" + w + "_scale\" (F32 [128 1]): FP8 per channel (compressed-tensors) is read by extract --dtype and diff, " +
		"not laid out by map and cache build; refusing to read it (ckpt dequantises block FP8 with weight_scale_inv, and MXFP4, NVFP4 and " +
		"compressed-tensors FP8 with the companions their config declares)"
	for _, args := range [][]string{{"map", src, "--mesh", "1x2"}, {"cache", "build", src, "--out", filepath.Join(t.TempDir(), "c"), "--progress", "none"}} {
		_, stdout, stderr := runApp(t, args...)
		assert.Equal(t, want, strings.Join(linesWith(stdout+stderr, "not laid out"), "\n"), args[0])
	}
}

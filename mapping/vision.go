package mapping

// The vision tower of a Qwen3.5/3.6 checkpoint (model.visual.*). The
// qwen36 demo caches it in a folder of its own beside the text model's
// (docs/tensor-cache-layout.md, "The vision tower"); the built-in profiles
// plan one cache folder, so they list the tower's tensors as ignored with a
// reason that says where the stack writes them.

// VisionPrefix is the name prefix of the vision tower's tensors.
const VisionPrefix = "model.visual."

// VisionFolder is the cache folder the qwen36 vision tower writes under a
// device folder: tt_transformers' ModelArgs.weight_cache_path for
// bfloat8_b weights (models/tt_transformers/tt/model_config.py@0039cbf0),
// without the mesh suffix of the text model's folder, and with "instruct"
// when ModelArgs.instruct is set (HF_MODEL, lower-cased, contains
// "instruct" or "it").
func VisionFolder(device string, instruct bool) string {
	if instruct {
		return device + "/tensor_cache_instruct_bfp8"
	}
	return device + "/tensor_cache_bfp8"
}

// visionIgnore is the ignore rule of the built-in profiles for the vision
// tower: the stack caches it, in another folder than the plan's.
func visionIgnore() Ignore {
	return Ignore{Prefix: VisionPrefix, Reason: "vision tower: the qwen36 demo caches it in its own folder <device>/tensor_cache_bfp8 " +
		"(tensor_cache_instruct_bfp8 when HF_MODEL contains \"instruct\" or \"it\"), not in this plan's folder; ckpt does not " +
		"build that folder yet (docs/tensor-cache-layout.md, The vision tower)"}
}

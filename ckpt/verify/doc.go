// Package verify checks a safetensors checkpoint's contract and reports
// every finding, not just the first: shard/index integrity, the strict
// header format, the block-FP8 scale rules, the tensors an architecture's
// config implies (profile qwen3_5), and with CheckOptions.ReadData the tensor
// data (scale values, NaN codes, NaN/Inf, per-tensor xxh3) and the file
// digests of a Hugging Face cache snapshot. It also holds a checkpoint
// against a structural contract (package contract: contract.Compare). It
// never prints.
//
// Open a checkpoint with ckpt.Open and ckpt.Options{Lenient: true} (missing
// shards and shards whose size disagrees with their header become findings),
// then call Check (the workflow Run does all of this from a source, and
// adds the comparison with a contract of Options.Against).
// Each Check (a ckpt.Finding) has a stable id, a ckpt.FindingID constant
// declared beside its check (IndexTotalSize, FP8ScaleMissing, ...; the
// index.* ids Open records and file.size are ckpt's: ckpt.IndexShardMissing,
// ckpt.FileSize, ...):
//
//	index.shard_name        a weight_map shard name escapes the directory
//	index.shard_missing     a shard named by weight_map cannot be opened
//	index.duplicate_key     a tensor is listed twice in weight_map
//	index.tensor_missing    a weight_map tensor is not in its shard
//	index.tensor_unlisted   a stored tensor is not in weight_map
//	index.tensor_duplicate  a tensor is stored in two shards
//	index.single_file       both an index and a model.safetensors it does not
//	                        consist of (warn: loaders disagree on which to read)
//	index.variant           no default checkpoint, one variant (warn: it is read,
//	                        as from_pretrained(variant=NAME) would; --variant NAME)
//	index.total_size        metadata.total_size differs from the payload bytes
//	file.size               a file's size differs from 8 + header + data (truncated download)
//	header.dtype            a tensor has an unknown dtype
//	header.lint             strict-format deviations (warn): header not starting
//	                        with '{', padding other than spaces, tensors not in
//	                        the reference writer's order
//	fp8.config              F8_E4M3 tensors without an fp8 quantization_config
//	                        with a valid weight_block_size (or a wrong fmt)
//	fp8.scale_missing       an F8_E4M3 weight without <name>_scale_inv
//	fp8.scale_shape         a scale not of shape [ceil(R/bm), ceil(C/bn)]
//	fp8.scale_dtype         a scale not F32, BF16, F16 or F8_E8M0 (a warning
//	                        for F8_E8M0 without scale_fmt "ue8m0")
//	fp8.scale_orphan        a scale whose weight is absent or not F8_E4M3
//	fp8.rank                an F8_E4M3 tensor that is not 2-D
//	fp8.not_convert         an F8_E4M3 weight that modules_to_not_convert keeps
//	                        unconverted, read as transformers reads the list
//	                        (quant.NotConvertList)
//	fp8.compressed_tensors  compressed-tensors naming (weight_scale, input_scale)
//	scheme.config           (instead of fp8.*, for MXFP4, NVFP4 and compressed-
//	                        tensors FP8, see quant.Spec) the scheme, named
//	scheme.weight_shape     stored codes not of the scheme's shape
//	scheme.companion_missing a quantised weight without a companion it needs
//	scheme.companion_dtype  a companion of the wrong dtype
//	scheme.companion_shape  a companion not of the shape its weight implies
//	scheme.companion_orphan a scale that belongs to no quantised weight
//	scheme.ignored          a quantised weight inside the ignore list
//	scheme.scale_values     --read-data: an E8M0 scale 0xFF (NaN), a global
//	                        scale not finite and > 0
//	arch.config             the profile cannot read the config, or a config
//	                        value disagrees with the tensors (layer counts,
//	                        layer kinds, a dimension all tensors agree on)
//	arch.missing            tensors the config implies that are absent
//	arch.unexpected         tensors the config does not imply
//	arch.shape              a tensor's shape differs from the config's, naming
//	                        the config keys behind the differing dimensions
//	arch.dtype              a tensor's dtype is not an accepted one; warn: a float
//	                        tensor's is not the dtype the config declares
//	                        (ckpt/arch DTypeRule, shared with map and cache build)
//	data.scale_values       scale values not finite and > 0 (--read-data)
//	data.fp8_nan            NaN codes 0x7f/0xff in F8_E4M3 tensors
//	data.float_nonfinite    NaN/Inf in BF16/F16/F32/F64/F8_E5M2 tensors
//	data.hash               per-tensor xxh3-64 of the raw bytes
//	data.read               tensors that could not be read
//	cache.partial           a partial download in a cache snapshot (PartialStore)
//	cache.sha256            a file whose SHA-256 differs from the recorded one
//	                        (DigestStore, --read-data)
//
// contract.Compare adds contract.key_added, contract.key_removed, contract.dtype,
// contract.shape, contract.hash, contract.config, contract.fp8_scheme and
// contract.fp8_not_convert. contract.config is one finding per config key
// that differs (fail, or pass when CompareOptions.AllowConfig accepts it),
// a pass line counting the keys compared when none fails, and a warning
// for a version-1 contract, which did not record the whole config.
//
// A check that found nothing appears once with status pass; a check that
// does not apply appears with status skip and says why.
package verify

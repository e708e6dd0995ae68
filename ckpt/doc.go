// Package ckpt reads safetensors checkpoints lazily: headers first, tensor
// data only on demand and in bounded chunks.
//
// A Checkpoint is one .safetensors file, or a directory with a
// model.safetensors.index.json and its shards, opened through a Store (a
// local directory, the Hugging Face cache, or HTTP). Headers and the index are
// read by one strict JSON reader (jsonscan.go) as the reference's serde_json
// and the loaders' json.load read them, so that file order and exact 64-bit
// offsets are kept and nothing is picked where readers would disagree
// (docs/formats.md section 5); every rule of the reference implementation is
// validated. A tensor stored in two shards is compared at open: different
// copies fail the open, identical ones are a warning (Checkpoint.Issues). Tensor data is read
// through section readers and decoded to float32 (BF16, F16, F32, FP8
// variants), with block-FP8 weights dequantised by their weight_scale_inv
// companions one block row at a time. QuantScheme is the one rule for a
// quantised weight (its codes plus its scale): one whose scale is missing
// or of a scheme not supported is refused (ErrScale: *MissingScaleError,
// *UnknownScaleError), never read from its codes alone. The schemes and
// the recipe a config declares (QuantRecipe) are described by package quant.
//
// It is also the home of what every other package shares: the one finding
// type (Finding, Status), the names of the dtypes and scalar number formats
// (F32ToBF16, EncodeE4M3, DecodeFloat32..., implemented in the leaf package
// numfmt), the tensor groups (GroupOf), the size
// parser (ParseSize), the shape and byte formatters and the typed errors:
// ErrMalformed (*FormatError, *UnknownDTypeError) for bad input and atomicfile.ErrWrite (*atomicfile.WriteError) for failures
// to write our own output. Options.Lenient opens a damaged checkpoint as far
// as it can and records the damage in Checkpoint.Issues.
//
// Subpackages: numfmt (the number formats and their kernels), quant (the quantisation schemes and recipes), source (hf:, hf://, https:// stores),
// verify (every check), contract (structural contracts), arch (the tensors a config implies), extract (subsets,
// dequantised), inspect (the inspect workflow), ckpttest (generated fixtures).
//
// The package never prints; every function returns values and errors, and
// errors name the file, the tensor and the byte offset where they apply.
package ckpt

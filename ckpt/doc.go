// Package ckpt reads safetensors checkpoints lazily: headers first, tensor
// data only on demand and in bounded chunks.
//
// A Checkpoint is one .safetensors file, or a directory with a
// model.safetensors.index.json and its shards, opened through a Store (a
// local directory, the Hugging Face cache, or HTTP). Headers are parsed as a
// JSON token stream so that file order and exact 64-bit offsets are kept, and
// every rule of the reference implementation is validated. Tensor data is read
// through section readers and decoded to float32 (BF16, F16, F32, FP8
// variants), with block-FP8 weights dequantised by their weight_scale_inv
// companions one block row at a time.
//
// The package never prints; every function returns values and errors, and
// errors name the file, the tensor and the byte offset where they apply.
package ckpt

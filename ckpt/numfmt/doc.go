// Package numfmt is the one home of the number formats the module reads
// and writes: the safetensors dtypes (DType), the scalar codecs (bfloat16,
// IEEE half, F8_E4M3, F8_E5M2, F8_E8M0 to and from float32), bfloat16
// rounding with the NaN policy as a parameter (NaNPolicy), the NaN/Inf
// scanner (ScanNonFinite), block-FP8 dequantisation (BlockScales, with
// the per-scale lookup tables of ScaleTable16/ScaleTable32), the block-FP8
// quantisation recipes (scaleFor, QuantizeBlockFP8, requantDivMismatches;
// quant_fp8.go: FP8Recipe, ckpt's and the ecosystem's others) and
// the named FP4 recipes (quant_fp4.go: EncodeE2M1, MXFP4Recipe ocp-floor /
// triton-round-up, ModelOpt's NVFP4; Quantize*, *Requant).
//
// It is a leaf: it imports only the standard library and
// golang.org/x/sys/cpu, never the reader package ckpt (which re-exports
// the dtypes and codecs under their old names), so that the tensor cache's
// tile encoders and the diff engine can use it without the reader.
//
// The layout follows hash/crc32: every kernel has a Go reference in a
// *_generic.go file (or beside its caller), an amd64 kernel in *_amd64.go
// and *_amd64.s built with `amd64 && !purego`, and a fallback in
// *_other.go for `!amd64 || purego`. CPU features come from
// golang.org/x/sys/cpu only (cpu.X86.HasAVX2, which also checks that the
// OS saves the YMM registers). Tests compare every kernel with its
// reference, bit for bit, including zero, denormal and NaN blocks.
package numfmt

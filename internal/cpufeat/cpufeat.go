// Package cpufeat reports the x86 SIMD extensions that the assembly
// kernels of ckpt use beyond the amd64 baseline (SSE2), so that each
// kernel can fall back to its Go loop on a CPU without them.
package cpufeat

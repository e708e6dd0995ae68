// Package synth writes synthetic safetensors checkpoints made by code, for
// the demo, the benchmarks and the tests: a Qwen3.5-style hybrid block-FP8
// base (sharded, with index and nested config) and a light fine-tune of it,
// the real 27B layout (embedded inventory) as sparse files or with seeded
// values, and a sparse fine-tune pair. Everything is generated from a seed;
// nothing large is committed.
package synth

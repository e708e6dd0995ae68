// Package ckpttest writes real, small safetensors checkpoints for tests,
// benchmarks and the demo: a Qwen3.5-style hybrid block-FP8 base (sharded,
// with index and nested config), a light fine-tune of it, corrupt variants
// for every format rule, and the full-scale 27B layout as sparse files.
// Everything is generated; nothing large is committed.
package ckpttest

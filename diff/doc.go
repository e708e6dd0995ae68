// Package diff compares two checkpoints — typically a base and its
// fine-tune — key by key, config path by config path and tensor by tensor.
//
// Every tensor of either checkpoint gets one relation (identical, changed,
// requant_identical, dtype_changed, shape_changed, only_in_base,
// only_in_ft) and, when data is compared as values, statistics over the
// dequantised float values accumulated in float64: changed_elems,
// max_abs_diff, rel_l2 and cosine. Block-FP8 weights are compared as
// values (codes × block scales) and their scale companions are also
// compared on their own; an FP8 weight against a wider float of the same
// shape is requant_identical when quantising the wider side with the
// recipe of the command contract (ckpt.QuantizeBlockFP8) reproduces the
// FP8 codes and scales exactly.
//
// Data is streamed in chunks aligned to the scale blocks, with bounded
// memory, on several goroutines across tensors and inside large ones; the
// statistics are merged in chunk order, so results do not depend on
// scheduling. Raw bytes are compared first and only differing chunks are
// decoded. The package never prints; cmd/ckpt renders a Result.
package diff

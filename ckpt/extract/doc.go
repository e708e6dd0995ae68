// Package extract writes a subset of a checkpoint as a valid safetensors
// file, or as a sharded directory with model.safetensors.index.json,
// optionally converting floats to one dtype and dequantising block-FP8
// weights with their weight_scale_inv companions.
//
// NewPlan decides, from headers alone, which tensors are written, in which
// dtype, how (raw copy, float conversion or FP8 dequantisation) and into
// which shard; Plan.Write then streams the data in bounded chunks (never a
// whole tensor in memory) through ckpt.NewWriter, which lays tensors out in
// the reference writer's order (dtype alignment descending, then name) with
// the header padded with spaces to 8 bytes. Output appears atomically: a
// single file is written under a temporary name, fsynced and renamed; a
// directory is assembled under a temporary name beside the target and
// renamed into place, so an error or a cancelled context leaves nothing
// behind. Plan.Report is the extract JSON document; failures to write the
// output are *ckpt.WriteError (exit 3 in the CLI), never input errors.
//
// The package never prints.
package extract

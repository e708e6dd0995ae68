// Package extract writes a subset of a checkpoint as a valid safetensors
// file, or as a sharded directory with model.safetensors.index.json,
// optionally converting floats to one dtype and dequantising block-FP8
// weights with their weight_scale_inv companions.
//
// NewPlan decides, from headers alone, which tensors are written, in which
// dtype, how (raw copy, float conversion or FP8 dequantisation) and into
// which shard; Plan.Write then lays each file out with ckpt.LayoutHeader
// (the reference writer's order: dtype alignment descending, then name;
// the header padded with spaces to 8 bytes) and cuts its tensors into
// pieces of at most the chunk size or 1 MiB (never a whole tensor in
// memory), which up to GOMAXPROCS (at most 4) workers claim in file order,
// convert into buffers of their own and write at their offsets
// (writeShardAt). Output appears atomically: a single file is written under a temporary name, fsynced and renamed; a
// directory is assembled under a temporary name beside the target and
// renamed into place, so an error or a cancelled context leaves nothing
// behind. Plan.Write's result is the extract JSON document (Result, which Run, the
// extract workflow, returns); failures to write the output are
// *atomicfile.WriteError (exit 3 in the CLI), never input errors.
//
// The package never prints.
package extract

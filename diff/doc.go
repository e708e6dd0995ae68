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
// recipe of the command contract (numfmt.QuantizeBlockFP8) reproduces the
// FP8 codes and scales exactly. MXFP4 and NVFP4 weights are compared by
// their dequantised values; against a wider float they are
// requant_identical when one of the scheme's recipes (numfmt:
// ocp-floor and triton-round-up; ModelOpt's, with the stored
// weight_scale_2) reproduces their codes and scales, and the row names
// the recipe (requantfp4.go, docs/formats.md).
//
// FP8 codes are compared by the value they decode to: +0 and -0 are
// equal, and so are two NaN codes, both for identical and for
// requant_identical (quantisers disagree on the sign of a zero); rows
// count such codes in zero_sign_codes.
//
// Data is streamed in chunks aligned to the scale blocks, on several
// goroutines across tensors and inside large ones; the statistics are
// merged in chunk order, so results do not depend on scheduling. A chunk
// larger than CompareOptions.ChunkBytes (a per-tensor FP8 weight's chunk is the
// whole tensor) is read in pieces of at most about ChunkBytes per side
// with the same results, so memory is bounded whatever the scheme. Raw bytes are compared first and only differing chunks are
// decoded. The package never prints; cmd/ckpt renders a Result.
//
// The pieces are copied into the buffers of the chunk's token by the
// sources' ReadAt (for local files a preadv2(RWF_NOWAIT) from the page
// cache, ckpt's file blobs), not mapped: mapping the files read-only,
// populated with MAP_POPULATE or madvise(MADV_POPULATE_READ) or by page
// faults, costs about as much CPU per page as the copy unless the page
// cache holds them in PMD-size folios (ckpt's BenchmarkCachedCopyVsMap;
// 0.16-0.19 s against 0.14 s for the 2.8 GB of the bench's pair), so the
// copy, about what cat of the same files costs, stays; with the default
// ChunkBytes a pair of local files is read in pieces of 256 KiB per side
// (localPieceBytes), which the comparison reads back from the L2 cache.
// Two block-FP8 weights go through e4m3BlocksInto: one kernel call per row
// of whole scale blocks, which adds each block's exact sums into its slot
// of the band's fold (e4m3fold.go: the rows of a row of scale blocks), each
// block then scaled and added into the chunk's statistics once, when the
// band ends; a chunk of equal sides (normChunk) through e4m3NormInto,
// which on AVX2 computes only Σv² of one side.
//
// With CompareOptions.SampleBytes (or SampleBudget, a total spread over the
// tensors) a comparison reads only a seeded sample of every tensor larger
// than its share: many short ranges spread over the tensor (runs of whole
// scale-column groups for block-FP8 weights), which makes diffs over HTTP
// practical: the ranges of a batch of tensors are read concurrently with
// ckpt.ReadSpans, then compared by the same engine from memory. A sampled
// tensor is changed, no_change_seen or requant_identical_seen, never
// identical, and reports the changed fraction of its sample
// (changed_elems over sampled_elems) with a 95 % interval that treats the
// ranges as clusters (ClusterInterval; docs/sampling.md). CompareOptions.Sample instead draws the
// tensors whose data is read, the headers of all being compared.
//
// Result.Groups and (CompareOptions.ByLayer) Result.Layers tally the rows
// per group and per decoder layer (and the mtp, visual and other groups):
// one count per relation, adding up to the tensors, and the statistics of
// the changed tensors only (Tally).
package diff

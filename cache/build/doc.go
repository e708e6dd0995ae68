// Package build writes a prebuilt Tenstorrent tensor cache (package cache
// is its format) from a checkpoint and a mapping plan. Run is the
// workflow of `ckpt cache build`: one Options (the source, its
// mapping.PlanOptions, the cache root), the plan made by mapping.Resolve,
// Write, and a Result whose Document is the JSON document.
//
// Write streams each source tensor once through the plan's transforms,
// a file per step (build.go: the Write loop, opening and finishing;
// resume.go: what an earlier build left that can stay, and the journal;
// gather.go: the source pieces each target needs, in bands; transform.go:
// streaming the bands through the value ops into the sinks; sink.go:
// assembling a target file at computed offsets; pack.go and transpose_*:
// packing and staging tiles; write.go: finishing and hashing one file;
// decode.go: decoding FP8 and BF16 bands; nonfinite.go: NaN and Inf) and
// writes every file through a temporary name, fsync and rename (package
// atomicfile); a journal makes an interrupted build resumable
// (folderbuild.go), and manifest.json, written last, records the plan
// entry, the source tensors' xxh3 and each file's header and data hashes.
// Source tensors holding NaN or Inf fail a build unless allowed (then the
// manifest records them). Memory stays bounded by the band size and the
// write windows' budget, not by tensor sizes.
//
// Compare builds a plan's files into a scratch folder and compares them
// with a cache's (package compare): the data comparison of cache identify
// --source and cache verify --read-data.
//
// The package never prints; a build reports through a nil-safe progress
// counter and honours context cancellation.
package build

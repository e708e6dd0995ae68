// Package mapping turns a checkpoint into the plan of a serving stack's
// tensor cache: which cache file each source tensor goes to, through which
// transforms (dequantise, round, per-device fuse/reorder, transpose, unit
// offset, reshape), with which placement on a 1×N device mesh, device dtype,
// layout and memory config — and which tensors are left out, and why.
//
// A Profile is declarative and JSON-serialisable. Its rules match source
// names by templates with captures ({L} for a layer index), compiled into a
// segment trie so each tensor is looked up once, without scanning rules.
// BuildWith resolves a profile against a checkpoint and a mesh into a Plan:
// one Entry per cache file with its full and per-device shapes and, per
// stored shard, the exact source rectangles (Pieces) to stack, the value
// operations and whether to transpose — enough for a converter to stream
// the file. Entry.Materialize is the slow in-memory reference of that
// recipe.
//
// A rule's transform chain is a list of Steps whose Op is one of a fixed
// vocabulary (OpRound, OpAdd, OpSelectCols, OpFuse, OpTranspose,
// OpReshape): the table in ops.go says what each takes and is the one
// place that checks, plans and describes a step; ValueOp.Elementwise is
// the one interpreter of the value ops a plan entry carries.
//
// Resolve is the one way the commands make a plan (PlanOptions: built-in
// profile or rules file, mesh, device, tag, settings, ignore globs and
// MESH_DEVICE, parsed by the caller; a wrong request is a usage error);
// Run is the workflow of `ckpt map` (one
// Options, one Result); Plan.Document is the map JSON document. FileName, CacheDir and CacheName are the one definition of
// cache file and directory names.
//
// A plan fails (PlanError, its problems are ckpt.Findings) when any source tensor is neither mapped nor
// ignored, when a required rule (or layer) matches nothing, when a fused
// target lacks a source, or when a sharded dimension (heads, tiles) does
// not divide by the mesh. The built-in profiles transcribe the tt-metal
// qwen36 tensor-parallel loader, one per upstream line: ProfileMTP (the
// default, formerly "qwen3_5-tt") the MTP spec-decode line, ProfileMain
// main as of 2026-10 (see Profile.Pinned for the revision of every file
// read and Profile.Notes for what is assumed; Profiles lists them). Profile variables stand for the serving stack's
// configuration switches (proj_1d_decode, ...); BuildWith takes overrides.
//
// The package does not print; cmd/ckpt's "map" command renders plans.
package mapping

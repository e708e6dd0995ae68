// Package cache builds, verifies, lists and archives a prebuilt Tenstorrent
// tensor cache: the .tensorbin files (package tensorbin, with data packed by
// package tile) that the serving stack's loader would write for a mapping
// plan (package mapping), laid out under
// <root>/<device>/tensor_cache_<tag>_mesh<R>x<C>/.
//
// Each cache folder is independent: its own manifest.json, build journal
// and lock (LockFolder), so builds for other meshes, tags or devices share
// a root without touching each other (Folders and ResolveFolder find them).
//
// Build streams each source tensor once through the plan's transforms and
// writes every file through a temporary name, fsync and rename; a journal
// makes an interrupted build resumable, and manifest.json, written last,
// records the plan entry, the source tensors' xxh3 and each file's header
// and data hashes. Source tensors holding NaN or Inf fail a build unless
// allowed (then the manifest records them). Verify is fail-closed: it reports every missing, extra,
// truncated, corrupted or stale file as a finding. Pack and Unpack move a
// cache as one zstd-compressed tar with the manifest last.
//
// The workflows of the commands: mapping.Resolve then Build (cache build;
// BuildResult.Summary is its JSON document); Check (cache verify: memory,
// manifest, plan and Verify, every problem a ckpt.Finding in CheckResult);
// List (cache ls); Pack and Unpack. Files of this package: build.go, sink.go,
// gather.go, decode.go (the streaming build), verify.go, manifest.go,
// archive.go, list.go, meminfo.go, workflow.go (Check and the JSON
// documents). Cache file and directory names are mapping.FileName and
// mapping.CacheDir; failures to write are *ckpt.WriteError.
//
// The package never prints; long operations report through a nil-safe
// progress counter and honour context cancellation.
package cache

// Package cache is the on-disk format of a prebuilt Tenstorrent tensor
// cache: the .tensorbin files (package tensorbin, with data packed by
// package tile) that the serving stack's loader would write for a mapping
// plan (package mapping), laid out under
// <root>/<device>/tensor_cache_<tag>_mesh<R>x<C>/.
//
// Each cache folder is independent: its own manifest.json (Manifest,
// ReadManifest, WriteManifest), build journal (JournalName, ReadJournal)
// and lock (LockFolder, LockHolder), so builds for other meshes, tags or
// devices share a root without touching each other (Folders and
// ResolveFolder find them; CheckFinished tells a finished build from an
// unfinished one). The manifest records, per file, the plan entry
// (EntryHash), the source tensors' cheap identity and xxh3 (Identity,
// SameIdentity, HashTensor) and the hashes of the file's header and data
// regions (HashFile). HeaderFor is the .tensorbin header a plan entry
// produces, HeaderDiffs and DiffHeaders compare two headers, List reads the
// headers of a folder (cache ls, package cache/list). Temporary names
// (IsTempName) are those of package atomicfile and an unpack's staging
// folder.
//
// The packages beside it use the format: cache/build writes a cache from
// a checkpoint and a plan (cache build), cache/check verifies and compares
// caches (cache verify, cache compare, cache identify, the plan check of
// map --against-cache), cache/archive packs and unpacks one (cache pack,
// cache unpack), cache/list lists one (cache ls). Cache file and directory names are mapping.FileName and
// mapping.CacheDir; failures to write are *atomicfile.WriteError.
//
// The package never prints.
package cache

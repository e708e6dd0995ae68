// Package archive moves a built tensor cache folder (package cache is its
// format) as one zstd-compressed tar stream: Write writes manifest.json
// first, then every file of the manifest, checking each file's hashes on
// the way; Extract trusts nothing the archive says: it holds every entry
// against the manifest (name, type, declared size, header, hashes) before
// and while writing it into a staging folder beside the target folder,
// under the folder's lock, and only then swaps the staged folder in with
// one atomic rename, so that the folder is either as it was or the
// archive's, whole.
//
// A vision model's two folders (its main folder and the vision folder the
// main manifest names as its companion) are one archive: the main
// manifest, the vision manifest as <its cache_dir>/manifest.json, then the
// main folder's files, then the vision folder's. Extract stages both and
// places neither until both are complete (see Extract for the order of
// the two swaps). Pack (Write into a file placed atomically) and
// Unpack (Extract of a file) are the workflows of `ckpt cache pack` and
// `ckpt cache unpack`; Write and Extract are their engines, on a stream.
//
// The package never prints; failures to write are *atomicfile.WriteError, an
// archive at fault is *BadArchiveError (ckpt.ErrMalformed); warnings are
// returned in the results (Packed.Warnings, Unpacked.Warnings).
package archive

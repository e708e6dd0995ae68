// Package archive moves a built tensor cache folder (package cache is its
// format) as one zstd-compressed tar stream: Pack writes every file of the
// manifest, checking each file's hashes on the way, then manifest.json
// last; Unpack extracts into a staging folder, holds every file against
// the manifest and only then moves them into place under the folder's
// lock, the manifest last, so that a half-unpacked cache never looks
// complete. PackFile (Pack into a file placed atomically) and UnpackFile
// (Unpack of a file) are the workflows of `ckpt cache pack` and `ckpt
// cache unpack`.
//
// The package never prints; failures to write are *ckpt.WriteError.
package archive

// Package identify finds the profile and the settings of its variables
// whose plan reproduces a tensor cache (`ckpt cache identify`): Run is the
// workflow (the source from Options.Source or the folder's ckpt manifest,
// the vision folder of a model too), Dir the engine for one cache
// folder and an open checkpoint, DirNames the one for a cache the
// serving stack wrote, identified from its file names and headers alone.
// Every candidate is held against the cache by names and headers
// (compare.Headers); with a source, the closest candidate's files are also
// built into scratch and their data compared (build.Compare).
//
// It sits beside package check, above package build: both hold a cache
// against what a source builds to.
//
// The package never prints; long operations report through a nil-safe
// progress counter and honour context cancellation.
package identify

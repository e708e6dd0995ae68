// Package compare compares tensor caches without changing them: two cache
// directories file by file, header field by field and shard by shard
// (Dirs; Run is the workflow of `ckpt cache compare`), one pair of files
// (File), and a mapping plan against an existing cache by names and
// headers only (Headers: map --against-cache, cache identify). Its Report
// and Document (the JSON document) are what cache/build, cache/check and
// cache/identify add their data comparisons to.
//
// A file that a rule with a value op that is not exactly reproducible
// names (mapping.Tolerance) is compared within that op's tolerance
// (Tolerated); every other file byte for byte.
//
// The package never prints; long operations report through a nil-safe
// progress counter and honour context cancellation.
package compare

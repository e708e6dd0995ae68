// Package tensorbin reads and writes the .tensorbin container of the
// Tenstorrent tensor cache: a little-endian u64 header size, a FlatBuffer
// Tensor header (tensor spec: logical shape, data type, layout, tile,
// memory config, alignment; mesh shape; topology: distribution shape,
// placements, mesh coordinates; one shard record per device buffer), and a
// 64-byte aligned data region holding one buffer per shard, whose bytes are
// produced by package tile.
//
// The reader bounds every length and offset by the file size, so a hostile
// or truncated file yields an error naming the byte offset, never a panic.
// The names of cache files and directories belong to the plan
// (mapping.FileName, mapping.CacheDir). docs/formats.md describes the
// container with its upstream sources.
package tensorbin

// SchemaVersion names the upstream FlatBuffer schema the container follows (the
// header carries no version of its own).
const SchemaVersion = "tenstorrent/tt-metal tt_metal/impl/tensor/flatbuffer/tensor.fbs@e6209ddbd3833f43c5336fc77e1942e86ac89cd7"

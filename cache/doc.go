// Package cache implements the on-disk formats of the Tenstorrent tensor
// cache that ttnn.as_tensor reads and writes: the number formats of a tensor's
// host buffer (TILE ordering, BFLOAT16, FLOAT32, BFLOAT8_B and BFLOAT4_B tiles)
// and the .tensorbin container (a u64 header size, a FlatBuffer Tensor header
// and a 64-byte aligned data region holding one buffer per shard).
//
// Everything here is pure computation over byte slices and io interfaces; the
// package never prints and keeps no global mutable state.
//
// # Tile order
//
// A TILE tensor stores its padded 2-D view [H_pad, W_pad] (both multiples of
// 32) as 32x32 tiles, row-major over the tile grid. A tile is four 16x16 faces
// in the order top-left, top-right, bottom-left, bottom-right, and a face is
// its 16 rows in order. Face row r (0..63) of a tile is face r/16, row r%16.
//
// # Block floats
//
// BFLOAT8_B and BFLOAT4_B tiles share one 8-bit exponent per face row: 64
// exponent bytes, then the codes of the 1024 values in face-row order (one
// byte per value for BFLOAT8_B, one nibble for BFLOAT4_B, even lane in the low
// nibble). The packing rule is bit-exact with tt-metal's host packer; see
// PackTiles.
package cache

// Package tile implements the number formats of a Tenstorrent host tensor
// buffer, as ttnn.as_tensor writes them into a tensor cache: the data types
// (DType) and layouts (Layout), TILE ordering, and BFLOAT16, FLOAT32,
// BFLOAT8_B and BFLOAT4_B tile packing, bit-exact with tt-metal's host
// packer (testdata/ttbfp holds vectors produced by that packer).
//
// Everything here is pure computation over byte slices; the package never
// prints and keeps no global mutable state. Scalar float conversions
// (float32 ↔ bfloat16, FP8 codes) live in package ckpt/numfmt; this package packs
// whole tiles. docs/formats.md describes the formats with their upstream
// sources.
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
package tile

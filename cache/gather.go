package cache

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/cache/tile"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// valueOps is a compiled list of mapping value ops, applied to the valid
// values of a face row before encoding (padding stays zero, as in
// ttnn.from_torch, which pads after the model code's arithmetic).
type valueOps []mapping.ValueOp

func compileOps(ops []mapping.ValueOp) (valueOps, error) {
	for _, op := range ops {
		switch {
		case op.Op == "round" && op.DType == "BF16":
		case op.Op == "add":
		default:
			return nil, fmt.Errorf("unsupported value op %s %s", op.Op, op.DType)
		}
	}
	return valueOps(ops), nil
}

// apply applies the ops to v exactly as mapping.ApplyValues does.
func (ops valueOps) apply(v []float32) {
	for _, op := range ops {
		if op.Op == "add" {
			a := float32(op.Value)
			for i := range v {
				v[i] += a
			}
			continue
		}
		for i, x := range v {
			v[i] = ckpt.RoundBF16TT(x)
		}
	}
}

// roundOnly reports whether the ops are exactly one bf16 rounding (the
// common case: FP8 or bf16 weights as shard_w hands them over).
func (ops valueOps) roundOnly() bool {
	return len(ops) == 1 && ops[0].Op == "round"
}

// packTransposedTiles packs the transpose of a block of m rows (block rows
// = logical columns) and h columns (= logical rows) into TILE bytes of dt,
// without a transposed copy of the block: block row k, column j is
// src[k*stride+col+j]. ops are applied to every valid value. The output
// holds ceil(h/32) tile rows of ceil(m/32) tiles each, tile row after tile
// row (dst needs ceil(h/32)*ceil(m/32)*dt.TileBytes() bytes).
//
// Each tile's 32x32 source block is first copied row by row into a small
// local buffer (sequential reads, ops applied there), and the face rows are
// gathered from that buffer: gathering straight from src would read with a
// stride of a whole source row, which thrashes the L1 cache sets and TLB.
func packTransposedTiles(dt tile.DType, dst []byte, src []float32, stride, col, m, h int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (m + tile.TileDim - 1) / tile.TileDim
	ntr := (h + tile.TileDim - 1) / tile.TileDim
	roundOnly := ops.roundOnly()
	var blk [tile.TileDim * tile.TileDim]float32 // blk[k*32+j]: block row c*32+k, column t*32+j
	var tmp [tile.FaceDim]float32
	for c := 0; c < ntc; c++ {
		rows := min(tile.TileDim, m-c*tile.TileDim)
		for t := 0; t < ntr; t++ {
			cols := min(tile.TileDim, h-t*tile.TileDim)
			for k := 0; k < rows; k++ {
				in := src[(c*tile.TileDim+k)*stride+col+t*tile.TileDim:][:cols]
				out := blk[k*tile.TileDim : k*tile.TileDim+cols]
				if roundOnly {
					for j, x := range in {
						out[j] = ckpt.RoundBF16TT(x)
					}
				} else {
					copy(out, in)
					if len(ops) > 0 {
						ops.apply(out)
					}
				}
				clear(blk[k*tile.TileDim+cols : (k+1)*tile.TileDim])
			}
			clear(blk[rows*tile.TileDim:])
			tb1 := dst[(t*ntc+c)*tb : (t*ntc+c+1)*tb]
			for r := 0; r < tile.FaceRows; r++ {
				fr, fc := tile.FaceRowOrigin(r)
				// Logical row fr, logical columns fc..fc+15 = blk rows fc.., column fr.
				b := blk[fc*tile.TileDim+fr:]
				for k := range tmp {
					tmp[k] = b[k*tile.TileDim]
				}
				tile.EncodeFaceRow(dt, tb1, r, &tmp)
			}
		}
	}
}

// packRowTiles packs rows (≤ 32 per strip, any count) of w values
// (src[k*stride+col+j]) into TILE bytes of dt, applying ops to the valid
// values; strips follow each other in dst.
func packRowTiles(dt tile.DType, dst []byte, src []float32, stride, col, rows, w int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (w + tile.TileDim - 1) / tile.TileDim
	var tmp [tile.FaceDim]float32
	for s := 0; s*tile.TileDim < rows; s++ {
		for c := 0; c < ntc; c++ {
			tb1 := dst[(s*ntc+c)*tb : (s*ntc+c+1)*tb]
			for r := 0; r < tile.FaceRows; r++ {
				fr, fc := tile.FaceRowOrigin(r)
				i := s*tile.TileDim + fr
				j0 := c*tile.TileDim + fc
				n := 0
				if i < rows {
					n = min(tile.FaceDim, max(0, w-j0))
				}
				if n > 0 {
					copy(tmp[:n], src[i*stride+col+j0:i*stride+col+j0+n])
				}
				clear(tmp[n:])
				if len(ops) > 0 && n > 0 {
					ops.apply(tmp[:n])
				}
				tile.EncodeFaceRow(dt, tb1, r, &tmp)
			}
		}
	}
}

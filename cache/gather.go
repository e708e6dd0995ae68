package cache

import (
	"fmt"
	"math"

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
			v[i] = ckpt.BF16ToF32(ckpt.F32ToBF16(x))
		}
	}
}

// roundOnly reports whether the ops are exactly one bf16 rounding (the
// common case: FP8 or bf16 weights as shard_w hands them over).
func (ops valueOps) roundOnly() bool {
	return len(ops) == 1 && ops[0].Op == "round"
}

// roundBF16 rounds to bfloat16, nearest even, as ckpt.RoundTo(BF16, x).
// It is written branch-free (the NaN case is a select), which the compiler
// turns into a conditional move.
func roundBF16(x float32) float32 {
	u := math.Float32bits(x)
	r := (u + 0x7fff + (u>>16)&1) &^ 0xffff
	if u&0x7fffffff > 0x7f800000 {
		r = (u | 0x00400000) &^ 0xffff // quiet NaN, sign kept
	}
	return math.Float32frombits(r)
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
func packTransposedTiles(dt DType, dst []byte, src []float32, stride, col, m, h int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (m + TileDim - 1) / TileDim
	ntr := (h + TileDim - 1) / TileDim
	roundOnly := ops.roundOnly()
	var blk [TileDim * TileDim]float32 // blk[k*32+j]: block row c*32+k, column t*32+j
	var tmp [FaceDim]float32
	for c := 0; c < ntc; c++ {
		rows := min(TileDim, m-c*TileDim)
		for t := 0; t < ntr; t++ {
			cols := min(TileDim, h-t*TileDim)
			for k := 0; k < rows; k++ {
				in := src[(c*TileDim+k)*stride+col+t*TileDim:][:cols]
				out := blk[k*TileDim : k*TileDim+cols]
				if roundOnly {
					for j, x := range in {
						out[j] = roundBF16(x)
					}
				} else {
					copy(out, in)
					if len(ops) > 0 {
						ops.apply(out)
					}
				}
				clear(blk[k*TileDim+cols : (k+1)*TileDim])
			}
			clear(blk[rows*TileDim:])
			tile := dst[(t*ntc+c)*tb : (t*ntc+c+1)*tb]
			for r := 0; r < FaceRows; r++ {
				fr, fc := faceRowOrigin(r)
				// Logical row fr, logical columns fc..fc+15 = blk rows fc.., column fr.
				b := blk[fc*TileDim+fr:]
				for k := range tmp {
					tmp[k] = b[k*TileDim]
				}
				encodeFaceRow(dt, tile, r, &tmp)
			}
		}
	}
}

// packRowTiles packs rows (≤ 32 per strip, any count) of w values
// (src[k*stride+col+j]) into TILE bytes of dt, applying ops to the valid
// values; strips follow each other in dst.
func packRowTiles(dt DType, dst []byte, src []float32, stride, col, rows, w int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (w + TileDim - 1) / TileDim
	var tmp [FaceDim]float32
	for s := 0; s*TileDim < rows; s++ {
		for c := 0; c < ntc; c++ {
			tile := dst[(s*ntc+c)*tb : (s*ntc+c+1)*tb]
			for r := 0; r < FaceRows; r++ {
				fr, fc := faceRowOrigin(r)
				i := s*TileDim + fr
				j0 := c*TileDim + fc
				n := 0
				if i < rows {
					n = min(FaceDim, max(0, w-j0))
				}
				if n > 0 {
					copy(tmp[:n], src[i*stride+col+j0:i*stride+col+j0+n])
				}
				clear(tmp[n:])
				if len(ops) > 0 && n > 0 {
					ops.apply(tmp[:n])
				}
				encodeFaceRow(dt, tile, r, &tmp)
			}
		}
	}
}

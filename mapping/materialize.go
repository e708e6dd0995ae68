package mapping

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// maxMaterialize bounds the number of values Materialize produces over all
// shards (it holds them in memory).
const maxMaterialize = 1 << 27

// Materialize computes the entry's shards in memory, following the recipe
// of Entry: one row-major float32 slice per stored shard (N for a sharded
// target, 1 for a replicated one) and the per-shard logical shape. Values
// are what the serving code hands to ttnn.as_tensor before the device dtype
// conversion: FP8 dequantised in float32, then the entry's value ops (e.g.
// rounded to bf16 nearest-even, +1.0 for unit-offset norms). It is a slow
// reference for small tensors and for verifying a cache; it refuses
// entries of more than maxMaterialize values.
func (e *Entry) Materialize(ctx context.Context, c *ckpt.Checkpoint) ([][]float32, []int64, error) {
	per := e.MatrixRows * e.MatrixCols
	if per*int64(len(e.Shards)) > maxMaterialize {
		return nil, nil, fmt.Errorf("target %s: %d values are too many to materialise in memory", e.Target, per*int64(len(e.Shards)))
	}
	readers := make([]*ckpt.Values, len(e.Sources))
	reader := func(i int) (*ckpt.Values, error) {
		if readers[i] != nil {
			return readers[i], nil
		}
		s := e.Sources[i]
		v, err := c.Values(s.Tensor) // ckpt.QuantScheme, as the plan
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", e.Target, err)
		}
		if !e.Flat {
			v = v.Stacked() // the plan's view of the source (ckpt.StackedMatrix)
		}
		readers[i] = v
		return readers[i], nil
	}
	out := make([][]float32, len(e.Shards))
	var raw []byte
	var rowBuf []float32
	for s, pieces := range e.Shards {
		block := make([]float32, per)
		placed, rows, err := PlaceBands(pieces, e.MatrixCols)
		if err != nil {
			return nil, nil, fmt.Errorf("target %s: shard %d: %w", e.Target, s, err)
		}
		if rows != e.MatrixRows {
			return nil, nil, fmt.Errorf("target %s: shard %d has %d rows, expected %d", e.Target, s, rows, e.MatrixRows)
		}
		for _, p := range placed {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			if p.Zero {
				continue // the block is zero there: padding, no value op applies
			}
			if p.Source < 0 || p.Source >= len(e.Sources) {
				return nil, nil, fmt.Errorf("target %s: piece %+v names source %d of %d", e.Target, p.Piece, p.Source, len(e.Sources))
			}
			v, err := reader(p.Source)
			if err != nil {
				return nil, nil, err
			}
			if p.Col < 0 || p.Col+p.Cols > v.Cols || p.Row < 0 || p.Row+p.Rows > v.Rows {
				return nil, nil, fmt.Errorf("target %s: piece %+v does not fit %s (%d x %d) or the block width %d", e.Target, p.Piece,
					e.Sources[p.Source].Name, v.Rows, v.Cols, e.MatrixCols)
			}
			need := p.Rows * v.Cols
			if int64(cap(rowBuf)) < need {
				rowBuf = make([]float32, need)
			}
			if raw, err = v.ReadRows(p.Row, p.Rows, raw, rowBuf[:need]); err != nil {
				return nil, nil, fmt.Errorf("target %s: reading %s: %w", e.Target, e.Sources[p.Source].Name, err)
			}
			ops := opsAfterRead(e.Values, v.BF16Exact())
			for r := int64(0); r < p.Rows; r++ {
				dst := block[(p.BlockRow+r)*e.MatrixCols+p.At:][:p.Cols]
				copy(dst, rowBuf[r*v.Cols+p.Col:r*v.Cols+p.Col+p.Cols])
				if err := applyValues(ops, dst); err != nil {
					return nil, nil, fmt.Errorf("target %s: %w", e.Target, err)
				}
			}
		}
		if e.Transpose {
			block = TransposeBlock(block, e.MatrixRows, e.MatrixCols, e.BatchRows)
		}
		out[s] = block
	}
	return out, append([]int64(nil), e.DeviceShape...), nil
}

// opsAfterRead returns the value ops to apply to values read from a
// source: all of ops, or without a leading bf16 round when the values are
// already stored as bf16 (ckpt.Values.BF16Exact) — torch's .to(bfloat16)
// leaves a bf16 tensor as it is, NaN bits included.
func opsAfterRead(ops []ValueOp, bf16Exact bool) []ValueOp {
	if bf16Exact && len(ops) > 0 && ops[0].Op == OpRound {
		return ops[1:]
	}
	return ops
}

// applyValues applies value ops to vals in place, in order. Converters that
// stream an entry apply it to each chunk of values they read. "round" to
// BF16 is torch's .to(torch.bfloat16) and tt-metal's host conversion:
// nearest even, and every NaN becomes the one pattern 0x7FC0
// (numfmt.TTNaN), as torch's scalar kernels write it (cache build's
// default follows the vectorised kernels instead, 0xFFFF: BuildOptions.NaN).
func applyValues(ops []ValueOp, vals []float32) error {
	for _, op := range ops {
		e, err := op.Elementwise()
		if err != nil {
			return err
		}
		e.Apply(vals, numfmt.TTNaN)
	}
	return nil
}

// TransposeBlock is step 3 of an Entry: the transpose of the rows×cols
// block m, or, with batchRows > 0, of each of its runs of batchRows rows,
// the transposed runs in order.
func TransposeBlock(m []float32, rows, cols, batchRows int64) []float32 {
	if batchRows <= 0 || batchRows >= rows {
		return transpose(m, rows, cols)
	}
	out := make([]float32, 0, len(m))
	for r := int64(0); r < rows; r += batchRows {
		out = append(out, transpose(m[r*cols:(r+batchRows)*cols], batchRows, cols)...)
	}
	return out
}

func transpose(m []float32, rows, cols int64) []float32 {
	t := make([]float32, len(m))
	for r := int64(0); r < rows; r++ {
		for c := int64(0); c < cols; c++ {
			t[c*rows+r] = m[r*cols+c]
		}
	}
	return t
}

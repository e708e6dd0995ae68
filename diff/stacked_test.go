package diff_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/require"
)

// TestStackedExperts compares 3-D block-FP8 stacks (fused experts [E, R,
// C], one [E, R/bm, ceil(C/bn)] scale grid per expert, as transformers
// saves them) with a changed FP8 stack, with their bf16 masters (exact and
// perturbed) and the other way round, in full and sampled: every row is
// the row of the same bytes laid out as 2-D [E·R, C] weights, whose block
// grid is the stacked one. Before, a stack against a wider float panicked
// (index out of range in the block scales: its columns were R·C).
func TestStackedExperts(t *testing.T) {
	t.Parallel()
	const e, r, c, blk = 4, 64, 80, 32 // partial column blocks
	rows := int64(e * r)
	w := randValues(11, e*r*c)
	w2 := append([]float32(nil), w...)
	for i := 0; i < len(w2); i += 5 {
		w2[i] = numfmt.RoundTo(numfmt.BF16, w2[i]*1.04)
	}
	wMaster := make([]float32, len(w))
	for i := range w {
		wMaster[i] = numfmt.RoundTo(numfmt.BF16, w[i])
	}
	off := append([]float32(nil), wMaster...)
	off[7] = numfmt.RoundTo(numfmt.BF16, off[7]*1.5) // one element that no longer re-quantises
	// stack reshapes 2-D tensors [E·R, C] (a weight and its scale) to 3-D.
	stack := func(mts []ckpt.MemTensor) []ckpt.MemTensor {
		out := make([]ckpt.MemTensor, len(mts))
		for i, m := range mts {
			out[i] = m
			out[i].Shape = []int64{e, m.Shape[0] / e, m.Shape[1]}
		}
		return out
	}
	_, _, q := fp8(t, "x.weight", w, rows, c, blk, blk, numfmt.BF16)
	_, _, q2 := fp8(t, "x.weight", w2, rows, c, blk, blk, numfmt.BF16)
	sides := map[string][]ckpt.MemTensor{
		"fp8": q, "fp8 changed": q2,
		"bf16":     {bf16T(t, "x.weight", []int64{rows, c}, wMaster)},
		"bf16 off": {bf16T(t, "x.weight", []int64{rows, c}, off)},
	}
	dir := t.TempDir()
	for i, pair := range [][2]string{{"fp8", "fp8 changed"}, {"fp8", "bf16"}, {"fp8", "bf16 off"}, {"bf16 off", "fp8"}} {
		for o, opt := range []diff.CompareOptions{{}, {SampleBytes: 2048, SampleSeed: 3}} {
			var res [2]*diff.Result
			for k, view := range []func([]ckpt.MemTensor) []ckpt.MemTensor{func(m []ckpt.MemTensor) []ckpt.MemTensor { return m }, stack} {
				d := filepath.Join(dir, fmt.Sprintf("%d-%d-%d", i, o, k))
				bc := writeCkpt(t, filepath.Join(d, "base"), view(sides[pair[0]]), blk, nil)
				fc := writeCkpt(t, filepath.Join(d, "ft"), view(sides[pair[1]]), blk, nil)
				var err error
				res[k], err = diff.Compare(context.Background(), bc, fc, opt)
				require.NoError(t, err, "%v %s", pair, []string{"2-D", "3-D"}[k])
			}
			require.Len(t, res[1].Tensors, len(res[0].Tensors))
			if opt.SampleBytes == 0 {
				rel := map[[2]string]diff.Relation{{"fp8", "fp8 changed"}: diff.Changed, {"fp8", "bf16"}: diff.RequantIdentical,
					{"fp8", "bf16 off"}: diff.DTypeChanged, {"bf16 off", "fp8"}: diff.DTypeChanged}[pair]
				require.Equal(t, rel, res[1].Tensors[0].Relation, "%v: x.weight", pair)
			}
			for j := range res[0].Tensors {
				want, got := res[0].Tensors[j], res[1].Tensors[j]
				want.Shape = got.Shape
				require.Equal(t, want, got, "%v, sampled %v: %s", pair, opt.SampleBytes > 0, got.Name)
			}
		}
	}
}

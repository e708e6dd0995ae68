package diff_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSampledRequantMismatchBlocks: in a sampled diff of a block-FP8 /
// bf16 pair, requant_mismatch_blocks counts the distinct scale blocks
// that hold a sampled code the wider side does not re-quantise to (with
// the stored scale), not the row segments of them: a block is one block
// however many of its rows the sample reads (docs/cli.md, "of the
// sampled_elems compared").
func TestSampledRequantMismatchBlocks(t *testing.T) {
	t.Parallel()
	const rows, cols, blk = 256, 256, 128
	w := randValues(41, rows*cols)
	codes, scales, mts := fp8(t, "m.weight", w, rows, cols, blk, blk, numfmt.F32)
	// The fine-tune's bf16 master moved everywhere: most codes no longer
	// re-quantise.
	moved := make([]float32, len(w))
	for i, x := range w {
		moved[i] = numfmt.RoundTo(numfmt.BF16, x*1.37+0.001)
	}
	dir := t.TempDir()
	bc := writeCkpt(t, filepath.Join(dir, "b"), mts, blk, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{bf16T(t, "m.weight", []int64{rows, cols}, moved)}, 0, nil)
	for _, size := range []int64{8 << 10, 32 << 10} {
		res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{SampleBytes: size, SampleSeed: 3})
		require.NoError(t, err)
		var row *diff.Tensor
		for i := range res.Tensors {
			if res.Tensors[i].Name == "m.weight" {
				row = &res.Tensors[i]
			}
		}
		require.NotNil(t, row)
		require.True(t, row.Sampled, "size %d", size)
		// The reference: the sampled elements whose code is not
		// EncodeE4M3(master / stored scale), and their blocks.
		var bad int64
		blocks := map[int64]bool{}
		for _, rg := range row.SampledRanges {
			for i := rg[0]; i < rg[1]; i++ {
				r, c := i/cols, i%cols
				b := (r/blk)*(cols/blk) + c/blk
				if numfmt.DecodeE4M3(numfmt.EncodeE4M3(moved[i]/scales[b])) != numfmt.DecodeE4M3(codes[i]) {
					bad++
					blocks[b] = true
				}
			}
		}
		require.Positive(t, bad)
		assert.Equal(t, diff.DTypeChanged, row.Relation, "size %d", size)
		require.NotNil(t, row.RequantMismatchElems)
		assert.Equal(t, bad, *row.RequantMismatchElems, "size %d", size)
		require.NotNil(t, row.RequantMismatchBlocks)
		assert.Equal(t, int64(len(blocks)), *row.RequantMismatchBlocks, "size %d: distinct blocks of %d", size, rows*cols/blk/blk)
	}
}

// TestSampledRequantWholeBlockScale: a sample that holds a whole scale
// block checks that block's stored scale against the recipe, as a full
// diff does (a sample never says less than it saw, docs/sampling.md): a
// block-FP8 weight whose codes re-quantise with its stored scales, but
// whose scales are twice the recipe's, is dtype_changed once a block is
// sampled whole, and requant_identical_seen with the recipe's scales.
func TestSampledRequantWholeBlockScale(t *testing.T) {
	t.Parallel()
	const rows, cols, blk = 1024, 16, 16
	w := randValues(43, rows*cols)
	_, scales, mts := fp8(t, "m.weight", w, rows, cols, blk, blk, numfmt.F32)
	twice := make([]float32, len(scales))
	for i, s := range scales {
		twice[i] = 2 * s
	}
	codes2 := make([]byte, len(w))
	for i, x := range w {
		codes2[i] = numfmt.EncodeE4M3(x / twice[(int64(i)/cols/blk)*(cols/blk)+int64(i)%cols/blk])
	}
	off := append([]ckpt.MemTensor(nil), mts...)
	off[0].Data, off[1].Data = codes2, encode(t, numfmt.F32, twice)
	dir := t.TempDir()
	fc := writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{bf16T(t, "m.weight", []int64{rows, cols}, w)}, 0, nil)
	for _, tc := range []struct {
		name  string
		mts   []ckpt.MemTensor
		want  diff.Relation
		wrong bool
	}{
		{"recipe scales", mts, diff.RequantIdenticalSeen, false},
		{"scales twice the recipe's", off, diff.DTypeChanged, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bc := writeCkpt(t, filepath.Join(t.TempDir(), "b"), tc.mts, blk, nil)
			full, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{})
			require.NoError(t, err)
			res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{SampleBytes: 8 << 10, SampleSeed: 9})
			require.NoError(t, err)
			var row, frow *diff.Tensor
			for i := range res.Tensors {
				if res.Tensors[i].Name == "m.weight" {
					row, frow = &res.Tensors[i], &full.Tensors[i]
				}
			}
			require.NotNil(t, row)
			require.True(t, row.Sampled)
			// The blocks the sample holds whole (16 whole rows).
			per := map[int64]int64{}
			for _, rg := range row.SampledRanges {
				for i := rg[0]; i < rg[1]; i++ {
					per[i/cols/blk]++
				}
			}
			var whole int64
			for _, n := range per {
				if n == blk*blk {
					whole++
				}
			}
			require.Positive(t, whole, "the sample holds a block whole: %v", row.SampledRanges)
			assert.Equal(t, tc.want, row.Relation)
			assert.Equal(t, int64(0), *row.RequantMismatchElems, "the codes re-quantise with the stored scales")
			want := int64(0)
			if tc.wrong {
				want = whole
				assert.Equal(t, diff.DTypeChanged, frow.Relation, "the full diff sees it")
			}
			assert.Equal(t, want, *row.RequantMismatchBlocks)
		})
	}
}

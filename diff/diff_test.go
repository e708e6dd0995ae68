package diff_test

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openPair(t *testing.T) (*ckpt.Checkpoint, *ckpt.Checkpoint) {
	t.Helper()
	b, f, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	ctx := context.Background()
	bc, err := ckpt.Open(ctx, b, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { bc.Close() })
	fc, err := ckpt.Open(ctx, f, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fc.Close() })
	return bc, fc
}

func rows(res *diff.Result) map[string]diff.Tensor {
	m := map[string]diff.Tensor{}
	for _, t := range res.Tensors {
		m[t.Name] = t
	}
	return m
}

// materialise reads a whole tensor as float32 values (dequantised) and its
// raw bytes, through the core library rather than the diff engine.
func materialise(t *testing.T, c *ckpt.Checkpoint, name string) ([]float32, []byte, int64) {
	t.Helper()
	ten, ok := c.Lookup(name)
	require.True(t, ok, name)
	v, err := c.Values(ten)
	require.NoError(t, err)
	out := make([]float32, v.Rows*v.Cols)
	raw, err := v.ReadRows(0, v.Rows, nil, out)
	require.NoError(t, err)
	return out, raw, int64(ten.DType.Bits() / 8)
}

// rawChanged counts elements whose raw bytes differ, or whose values
// differ (a changed block scale).
func rawChanged(b, f []byte, bv, fv []float32, es int64) int64 {
	var n int64
	for i := range bv {
		o := int64(i) * es
		if string(b[o:o+es]) != string(f[o:o+es]) || math.Float32bits(bv[i]) != math.Float32bits(fv[i]) {
			n++
		}
	}
	return n
}

func assertStats(t *testing.T, row diff.Tensor, want refStats) {
	t.Helper()
	require.NotNil(t, row.ChangedElems, row.Name)
	assert.Equal(t, want.changed, *row.ChangedElems, "%s changed_elems", row.Name)
	assert.InDelta(t, want.maxAbs, float64(*row.MaxAbsDiff), 0, "%s max_abs_diff", row.Name)
	assert.InEpsilon(t, want.relL2, float64(*row.RelL2), 1e-12, "%s rel_l2", row.Name)
	assert.InEpsilon(t, want.cosin, float64(*row.Cosine), 1e-12, "%s cosine", row.Name)
}

const (
	downProj = "model.language_model.layers.1.mlp.down_proj.weight"
	postNorm = "model.language_model.layers.2.post_attention_layernorm.weight"
	inProjA  = "model.language_model.layers.0.linear_attn.in_proj_a.weight"
)

func TestPairValues(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	for _, chunk := range []int64{0, 512} { // default chunks, and many small ones
		res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{ChunkBytes: chunk, Workers: 3})
		require.NoError(t, err)
		byName := rows(res)
		var mtpWeights []string
		for _, ten := range bc.Tensors {
			if strings.HasPrefix(ten.Name, "mtp.") && ten.DType == numfmt.F8E4M3 {
				mtpWeights = append(mtpWeights, ten.Name)
			}
		}
		require.Len(t, mtpWeights, 7)
		want := map[string]diff.Relation{downProj: diff.Changed, ckpt.ScaleName(downProj): diff.Changed, postNorm: diff.Changed, inProjA: diff.Changed}
		for _, w := range mtpWeights {
			want[w] = diff.RequantIdentical
			want[ckpt.ScaleName(w)] = diff.OnlyInBase
		}
		require.Len(t, res.Tensors, len(bc.Tensors), "every tensor of both appears once")
		for _, row := range res.Tensors {
			rel, ok := want[row.Name]
			if !ok {
				rel = diff.Identical
			}
			assert.Equal(t, rel, row.Relation, row.Name)
		}
		assert.Equal(t, diff.Summary{Identical: int64(len(bc.Tensors) - 18), Changed: 4, RequantIdentical: 7, OnlyInBase: 7}, res.Summary)
		assert.True(t, res.Differs())
		assert.Len(t, res.Keys.OnlyInBase, 7)
		assert.Empty(t, res.Keys.OnlyInFT)

		// Statistics against straightforward float64 loops.
		for _, name := range []string{downProj, ckpt.ScaleName(downProj), postNorm, inProjA} {
			bv, braw, es := materialise(t, bc, name)
			fv, fraw, _ := materialise(t, fc, name)
			ref := reference(bv, fv)
			ref.changed = rawChanged(braw, fraw, bv, fv, es)
			assertStats(t, byName[name], ref)
			assert.Greater(t, ref.changed, int64(0))
		}
		for _, name := range mtpWeights {
			bv, _, _ := materialise(t, bc, name)
			fv, _, _ := materialise(t, fc, name)
			assertStats(t, byName[name], reference(bv, fv))
			assert.Equal(t, int64(0), *byName[name].RequantMismatchElems)
			assert.Equal(t, int64(0), *byName[name].RequantMismatchBlocks)
			assert.Equal(t, numfmt.F8E4M3, byName[name].BaseDType)
			assert.Equal(t, numfmt.BF16, byName[name].FTDType)
		}
		id := byName["lm_head.weight"]
		assert.Equal(t, int64(0), *id.ChangedElems)
		assert.Equal(t, diff.Float(1), *id.Cosine)

		require.Len(t, res.Config, 1)
		c := res.Config[0]
		assert.Equal(t, "quantization_config.modules_to_not_convert", c.Path)
		assert.Len(t, c.FT.([]any), len(c.Base.([]any))+7)

		groups := map[string]diff.Summary{}
		for _, g := range res.Groups {
			groups[g.Group] = g.Summary
		}
		assert.Equal(t, int64(7), groups[ckpt.GroupMTP].RequantIdentical)
		assert.Equal(t, int64(7), groups[ckpt.GroupMTP].OnlyInBase)
		assert.Equal(t, int64(4), groups[ckpt.GroupText].Changed)
		assert.Equal(t, int64(0), groups[ckpt.GroupVisual].Total()-groups[ckpt.GroupVisual].Identical)
	}
}

func TestPairBytesAndHeaderModes(t *testing.T) {
	t.Parallel()
	bc, fc := openPair(t)
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeBytes})
	require.NoError(t, err)
	assert.Equal(t, diff.Summary{Identical: int64(len(bc.Tensors) - 18), Changed: 4, DTypeChanged: 7, OnlyInBase: 7}, res.Summary)
	for _, row := range res.Tensors {
		assert.Nil(t, row.ChangedElems, "bytes mode has no statistics")
		assert.Nil(t, row.Cosine)
	}
	res, err = diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeHeader})
	require.NoError(t, err)
	assert.Equal(t, diff.Summary{SameHeader: int64(len(bc.Tensors) - 14), DTypeChanged: 7, OnlyInBase: 7}, res.Summary)
	assert.Equal(t, int64(0), res.BytesRead)
}

// countingStore counts the bytes read through it.
type countingStore struct {
	ckpt.Store
	n *int64
}

type countingBlob struct {
	ckpt.Blob
	n *int64
}

func (s countingStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingBlob{b, s.n}, nil
}

func (b countingBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	atomic.AddInt64(b.n, int64(n)) // diff reads chunks in parallel
	return n, err
}

func TestHeaderModeReadsNoData(t *testing.T) {
	t.Parallel()
	base, ft, err := synth.Pair(t.TempDir())
	require.NoError(t, err)
	var nb, nf int64
	open := func(dir string, n *int64) *ckpt.Checkpoint {
		ds, err := ckpt.NewDirStore(dir)
		require.NoError(t, err)
		t.Cleanup(func() { ds.Close() })
		c, err := ckpt.OpenStore(context.Background(), countingStore{ds, n}, "", ckpt.Options{Workers: 1})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c
	}
	bc, fc := open(base, &nb), open(ft, &nf)
	afterOpen := nb + nf
	res, err := diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeHeader})
	require.NoError(t, err)
	assert.Equal(t, afterOpen, nb+nf, "header mode reads no tensor data")
	assert.Equal(t, int64(7), res.Summary.DTypeChanged)
	_, err = diff.Compare(context.Background(), bc, fc, diff.CompareOptions{Mode: diff.ModeValues, Workers: 1})
	require.NoError(t, err)
	assert.Greater(t, nb+nf-afterOpen, int64(1<<20), "values mode reads the data")
}

func TestBytesModeStopsEarly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const rows, cols = 1024, 1024 // 2 MiB of bf16 per side
	w := randValues(7, rows*cols)
	w2 := append([]float32(nil), w...)
	w2[3] = numfmt.RoundTo(numfmt.BF16, w2[3]+0.5) // differs in the first chunk only
	bc := writeCkpt(t, filepath.Join(dir, "b"), []ckpt.MemTensor{bf16T(t, "x.weight", []int64{rows, cols}, w)}, 0, nil)
	fc := writeCkpt(t, filepath.Join(dir, "f"), []ckpt.MemTensor{bf16T(t, "x.weight", []int64{rows, cols}, w2)}, 0, nil)
	opt := diff.CompareOptions{Mode: diff.ModeBytes, ChunkBytes: 16 << 10, Workers: 1, ReadAhead: -1}
	res, err := diff.Compare(context.Background(), bc, fc, opt)
	require.NoError(t, err)
	assert.Equal(t, diff.Changed, res.Tensors[0].Relation)
	assert.Equal(t, int64(2*16<<10), res.BytesRead, "one chunk of each side, then stop")

	opt.Mode = diff.ModeValues
	res, err = diff.Compare(context.Background(), bc, fc, opt)
	require.NoError(t, err)
	assert.Equal(t, int64(1), *res.Tensors[0].ChangedElems)
	// every chunk of both sides, plus the base again for the norm of the
	// identical chunks
	assert.Equal(t, int64(3*rows*cols*2-16<<10), res.BytesRead)
	assertStats(t, res.Tensors[0], reference(w, w2))
}

func TestFloatJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {1, "1"}, {0.5, "0.5"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {1e-7, "1e-07"}} {
		b, err := diff.Float(c.v).MarshalJSON()
		require.NoError(t, err)
		assert.Equal(t, c.want, string(b))
	}
}

var _ = binary.LittleEndian

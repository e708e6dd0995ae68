package extract

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/nlpodyssey/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// classicTensors are tensors of the dtypes nlpodyssey/safetensors knows
// (BOOL, U8, I8, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64), with
// rank-0 and zero-size ones.
func classicTensors(t *testing.T) []ckpt.MemTensor {
	var out []ckpt.MemTensor
	for _, x := range allDTypeTensors() {
		if _, err := safetensors.ParseDType(string(x.DType)); err == nil {
			out = append(out, x)
		}
	}
	require.Len(t, out, 13*3)
	return out
}

func toUint64(s []int64) []uint64 {
	out := make([]uint64, len(s))
	for i, d := range s {
		out[i] = uint64(d)
	}
	return out
}

// requireSameAsTheirs deserialises data with nlpodyssey/safetensors and
// checks every tensor against want.
func requireSameAsTheirs(t *testing.T, data []byte, want []ckpt.MemTensor, md map[string]string) {
	t.Helper()
	st, err := safetensors.Deserialize(data)
	require.NoError(t, err)
	require.Equal(t, len(want), st.Len())
	_, meta, err := safetensors.ReadMetadata(data)
	require.NoError(t, err)
	assert.Equal(t, md, meta.Metadata())
	for _, x := range want {
		tv, ok := st.Tensor(x.Name)
		require.True(t, ok, x.Name)
		assert.Equal(t, string(x.DType), tv.DType().String(), x.Name)
		assert.Equal(t, toUint64(x.Shape), tv.Shape(), x.Name)
		assert.Equal(t, x.Data, tv.Data(), x.Name)
	}
}

// TestOursReadByNlpodyssey: files written by ckpt.WriteFile and by extract
// (keep, streamed with a tiny chunk) are read back identically by
// github.com/nlpodyssey/safetensors.
func TestOursReadByNlpodyssey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := classicTensors(t)
	md := map[string]string{"format": "pt"}
	src := writeSource(t, dir, ts, md)
	requireSameAsTheirs(t, mustRead(t, src), ts, md)

	p, err := NewPlan(openCkpt(t, src), PlanOptions{Match: []string{"**"}, ChunkBytes: 7, AllowNonFinite: true})
	require.NoError(t, err)
	out := filepath.Join(dir, "out.safetensors")
	_, err = p.Write(context.Background(), out)
	require.NoError(t, err)
	requireSameAsTheirs(t, mustRead(t, out), ts, md)
	assert.Equal(t, mustRead(t, src), mustRead(t, out), "extract of everything under keep reproduces the file")
}

// TestNlpodysseyReadByUs: files serialised by nlpodyssey/safetensors open
// with ckpt.Open (no lints: same order and padding as the reference
// writer), and extracting everything reproduces them byte for byte.
func TestNlpodysseyReadByUs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Their NewTensorView counts a rank-0 shape as zero elements (the
	// reference: one), so their serializer cannot make scalars; their
	// reader handles ours (TestOursReadByNlpodyssey).
	var ts []ckpt.MemTensor
	for _, x := range classicTensors(t) {
		if len(x.Shape) > 0 {
			ts = append(ts, x)
		}
	}
	views := map[string]safetensors.TensorView{}
	for _, x := range ts {
		dt, err := safetensors.ParseDType(string(x.DType))
		require.NoError(t, err)
		tv, err := safetensors.NewTensorView(dt, toUint64(x.Shape), x.Data)
		require.NoError(t, err)
		views[x.Name] = tv
	}
	md := map[string]string{"format": "pt"}
	data, err := safetensors.Serialize(views, md)
	require.NoError(t, err)
	src := filepath.Join(dir, "theirs.safetensors")
	require.NoError(t, os.WriteFile(src, data, 0o644))

	c := openCkpt(t, src)
	requireClean(t, c)
	assert.Equal(t, md, c.Files[0].Header.Metadata)
	require.Len(t, c.Tensors, len(ts))
	for _, x := range ts {
		got, ok := c.Lookup(x.Name)
		require.True(t, ok, x.Name)
		assert.Equal(t, x.DType, got.DType, x.Name)
		assert.Equal(t, len(x.Shape), len(got.Shape), x.Name)
		assert.Equal(t, x.Data, readTensor(t, got), x.Name)
	}

	p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, AllowNonFinite: true})
	require.NoError(t, err)
	out := filepath.Join(dir, "ours.safetensors")
	_, err = p.Write(context.Background(), out)
	require.NoError(t, err)
	// Same layout: identical data section and offsets (the JSON key order
	// of the headers differs: theirs is by name, ours by offset).
	oc := openCkpt(t, out)
	oh, th := oc.Files[0].Header, c.Files[0].Header
	assert.Equal(t, data[th.DataStart():], mustRead(t, out)[oh.DataStart():], "data sections")
	for _, ti := range th.Tensors {
		o, ok := oh.Lookup(ti.Name)
		require.True(t, ok)
		assert.Equal(t, [2]uint64{ti.Begin, ti.End}, [2]uint64{o.Begin, o.End}, ti.Name)
	}
}

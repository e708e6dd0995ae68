package ckpt_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/nlpodyssey/safetensors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compareWithOracle checks one file against github.com/nlpodyssey/safetensors
// (which reads whole files and knows only the pre-FP8 dtypes): same tensor
// set, dtypes, shapes, offsets and bytes.
func compareWithOracle(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	st, err := safetensors.Deserialize(data)
	require.NoError(t, err, "oracle rejects %s", path)
	_, meta, err := safetensors.ReadMetadata(data)
	require.NoError(t, err)

	c, err := ckpt.Open(context.Background(), path, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, c.Files, 1)
	h := c.Files[0].Header
	assert.Equal(t, st.Len(), len(c.Tensors))
	assert.ElementsMatch(t, st.Names(), names(c.Tensors))
	if len(meta.Metadata()) > 0 || h.Metadata != nil {
		assert.Equal(t, meta.Metadata(), h.Metadata)
	}
	assert.Equal(t, int64(len(data)), h.FileSize)
	n, _, _ := safetensors.ReadMetadata(data)
	assert.Equal(t, n, h.Size)
	infos := meta.Tensors()
	for _, tn := range c.Tensors {
		view, ok := st.Tensor(tn.Name)
		require.True(t, ok, tn.Name)
		assert.Equal(t, view.DType().String(), string(tn.DType), tn.Name)
		shape := make([]uint64, len(tn.Shape))
		for i, d := range tn.Shape {
			shape[i] = uint64(d)
		}
		assert.Equal(t, view.Shape(), shape, tn.Name)
		info := infos[tn.Name]
		assert.Equal(t, [2]uint64{tn.Begin, tn.End}, info.DataOffsets, tn.Name)
		buf := make([]byte, tn.NBytes())
		_, err := tn.ReadAt(buf, 0)
		require.NoError(t, err)
		assert.Equal(t, view.Data(), buf, tn.Name)
	}
}

func names(ts []*ckpt.Tensor) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestDifferentialOracle(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The small fixture in bf16 (the FP8 one has F8_E4M3 tensors, which the
	// oracle rejects), sharded and as one file, and with F32 weights.
	o := synth.Small()
	o.FP8 = false
	require.NoError(t, synth.Write(filepath.Join(dir, "bf16"), o))
	o.LayersPerShard = 0
	require.NoError(t, synth.Write(filepath.Join(dir, "single"), o))
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.safetensors"))
	require.Len(t, files, 5)
	for _, v := range ckpttest.ValidFiles() {
		p := filepath.Join(dir, v.Name+".safetensors")
		require.NoError(t, os.WriteFile(p, v.Data, 0o644))
		if oracleCanOpen(v.Data) {
			files = append(files, p)
		}
	}
	// A file with every dtype the oracle knows, in the reference order.
	var mts []ckpt.MemTensor
	for i, d := range []numfmt.DType{numfmt.BOOL, numfmt.U8, numfmt.I8, numfmt.I16, numfmt.U16, numfmt.F16, numfmt.BF16, numfmt.I32, numfmt.U32, numfmt.F32, numfmt.F64, numfmt.I64, numfmt.U64} {
		n := (i + 1) * d.Bits() / 8 * 3
		data := make([]byte, n)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		mts = append(mts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "t." + string(d), DType: d, Shape: []int64{int64(i + 1), 3}}, Data: data})
	}
	p := filepath.Join(dir, "dtypes.safetensors")
	require.NoError(t, ckpt.WriteFile(p, mts, map[string]string{"format": "pt", "k": "v"}))
	files = append(files, p)
	require.Greater(t, len(files), 12)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) { compareWithOracle(t, f) })
	}
}

func oracleCanOpen(data []byte) bool {
	_, err := safetensors.Deserialize(data)
	return err == nil
}

// TestOracleAgreesOnCorrupt: every corrupt file we reject, the oracle
// rejects too, except where we are deliberately stricter.
func TestOracleAgreesOnCorrupt(t *testing.T) {
	t.Parallel()
	stricter := map[string]string{
		"invalid-utf8":       "encoding/json replaces invalid UTF-8; the reference crate rejects it",
		"null-header":        "encoding/json decodes null into an empty map; the crate needs an object",
		"duplicate-metadata": "a later __metadata__ silently wins",
		// The Go oracle decodes with encoding/json; the reference crate
		// (serde_json) refuses these, as the interop suite's
		// test_differential.py checks against safetensors 0.8.0.
		"duplicate-dtype":    "encoding/json keeps the last field",
		"duplicate-shape":    "encoding/json keeps the last field",
		"duplicate-offsets":  "encoding/json keeps the last field",
		"lone-surrogate":     "encoding/json makes a lone surrogate U+FFFD",
		"lone-low-surrogate": "encoding/json makes a lone surrogate U+FFFD",
	}
	for _, c := range ckpttest.CorruptFiles() {
		_, err := safetensors.Deserialize(c.Data)
		if why, ok := stricter[c.Name]; ok {
			assert.NoError(t, err, "%s: expected the oracle to accept (%s)", c.Name, why)
			continue
		}
		assert.Error(t, err, "%s: the oracle accepts what we reject (%s)", c.Name, c.Rule)
	}
}

package synth_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPairOpens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	for _, src := range []string{base, ft} {
		c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
		require.NoError(t, err)
		require.True(t, c.Sharded)
		require.Empty(t, c.Issues)
		require.NotNil(t, c.Config.Quantization())
		c.Close()
	}
	c, err := ckpt.Open(context.Background(), base, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	s := ckpt.SummarizeWith(c.Tensors, func(t *ckpt.Tensor) (int64, bool) {
		return int64(t.Numel()), ckpt.CountsAsParameter(&t.TensorInfo, true)
	})
	t.Logf("%d tensors, %d bytes, %v, groups %v", s.Tensors, s.Bytes, s.ParametersByDType, s.ByGroup)
	w, ok := c.Lookup("mtp.layers.0.mlp.down_proj.weight")
	require.True(t, ok)
	require.Equal(t, numfmt.F8E4M3, w.DType)
	v, err := c.Values(w)
	require.NoError(t, err)
	dst := make([]float32, v.Rows*v.Cols)
	_, err = v.ReadRows(0, v.Rows, nil, dst)
	require.NoError(t, err)
	require.NotZero(t, dst[0])
}

// TestResavedIsWhatTransformersWrites: Resaved of the bf16 Small config is
// the config.json transformers 5.23.0 wrote for it (from_pretrained then
// save_pretrained of synth.Write's checkpoint, torch 2.15.0 on the CPU;
// testdata), number literals included (10000.0 is not 10000).
func TestResavedIsWhatTransformersWrites(t *testing.T) {
	t.Parallel()
	o := synth.Small()
	o.FP8 = false
	want, err := os.ReadFile(filepath.Join("testdata", "small_bf16_resaved_by_transformers_5.23.0.json"))
	require.NoError(t, err)
	got, err := json.Marshal(synth.Resaved(synth.ConfigJSON(o)))
	require.NoError(t, err)
	assert.Equal(t, canonicalJSON(t, want), canonicalJSON(t, got))
}

// canonicalJSON re-encodes a document with sorted keys, each number as
// its kind (an integer literal or not, as Python's json reads it) and value.
func canonicalJSON(t *testing.T, b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case json.Number:
			if !strings.ContainsAny(string(x), ".eE") {
				return "int " + string(x)
			}
			f, err := x.Float64()
			require.NoError(t, err)
			return "float " + strconv.FormatFloat(f, 'g', -1, 64)
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	require.NoError(t, err)
	return string(out)
}

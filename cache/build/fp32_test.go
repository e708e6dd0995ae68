package build_test

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fp32Tile is the FLOAT32 TILE encoding of a [1, 1, n] tensor (n ≤ 32),
// written out by hand: one 32x32 tile of four 16x16 faces; the values are
// row 0, so value j < 16 is element j of face 0 and value j ≥ 16 element
// j-16 of face 1 (256 elements on); everything else is zero padding.
func fp32Tile(vals []float32) []byte {
	out := make([]byte, 32*32*4)
	for j, v := range vals {
		at := j
		if j >= 16 {
			at = 256 + j - 16
		}
		binary.LittleEndian.PutUint32(out[4*at:], math.Float32bits(v))
	}
	return out
}

// TestBuildFusedDecodeFP32: main's dt_bias_fp32 and neg_exp_A_fp32 are
// FLOAT32 TILE files, sharded by value head, holding the source's values
// in float32 (no bf16 rounding) and −exp(A_log) computed in float32, as
// load_gdn_weights_tp writes them (gdn/tp.py@db6dc348). Layer 0's A_log
// is stored as F32 with full 24-bit significands, which a bf16 rounding
// anywhere on the way would lose; dt_bias stays BF16 (widened exactly).
func TestBuildFusedDecodeFP32(t *testing.T) {
	t.Parallel()
	src, c0, _ := fixture(t, synth.Small())
	const aLog = "model.language_model.layers.0.linear_attn.A_log"
	const dtBias = "model.language_model.layers.0.linear_attn.dt_bias"
	t0, ok := c0.Lookup(aLog)
	require.True(t, ok)
	n := int(t0.Numel())
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = math.Float32frombits(0x3f800001 + uint32(i)*0x00123457) // 1.0000001, ..., every bit of the significand in use
	}
	dir := filepath.Join(t.TempDir(), "f32")
	asSingleFile(t, src, dir, aLog, vals)
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	tb, ok := c.Lookup(dtBias)
	require.True(t, ok)
	v, err := c.Values(tb)
	require.NoError(t, err)
	bias := make([]float32, n)
	_, err = v.ReadRows(0, v.Rows, nil, bias)
	require.NoError(t, err)

	p, err := mapping.Builtin(mapping.ProfileMain)
	require.NoError(t, err)
	plan, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "cache")
	_, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, NoSync: true})
	require.NoError(t, err)
	checkAgainstMaterialize(t, c, plan, out) // every file of main's build, the reference recipe of mapping

	want := map[string][]float32{"neg_exp_A_fp32": make([]float32, n), "dt_bias_fp32": bias}
	for i, x := range vals {
		want["neg_exp_A_fp32"][i] = float32(-math.Exp(float64(x)))
	}
	seen := 0
	for _, e := range plan.Entries {
		name := filepath.Base(e.File)
		stem, _, _ := strings.Cut(name, "_dtype_")
		w, ok := want[stem]
		if !ok || !strings.Contains(e.File, "/layers.0/tp/") {
			continue
		}
		seen++
		assert.Equal(t, "FLOAT32", e.DType, name)
		assert.Equal(t, "TILE", e.Layout, name)
		assert.Equal(t, []int64{1, 1, int64(n) / 2}, e.DeviceShape, name)
		path := filepath.Join(out, filepath.FromSlash(e.File))
		h, err := tensorbin.ReadTensorbinFile(path)
		require.NoError(t, err)
		f, err := os.Open(path)
		require.NoError(t, err)
		for d := 0; d < 2; d++ {
			got, err := io.ReadAll(tensorbin.ShardSection(f, h, d))
			require.NoError(t, err)
			assert.Equal(t, fp32Tile(w[d*n/2:(d+1)*n/2]), got, "%s device %d", name, d)
		}
		require.NoError(t, f.Close())
	}
	assert.Equal(t, 2, seen, "both fused-decode files of layer 0 are planned")
	// The bf16 twin A_log is still rounded to bf16.
	for i, x := range vals {
		assert.NotEqual(t, x, numfmt.RoundTo(numfmt.BF16, x), "value %d is not bf16-exact", i)
	}
}

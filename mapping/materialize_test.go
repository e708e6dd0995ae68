package mapping_test

import (
	"context"
	"math"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// source reads a tensor of the checkpoint as a bf16-rounded matrix
// (dequantised first when it is block FP8), independently of the plan.
func source(t *testing.T, c *ckpt.Checkpoint, name string) [][]float32 {
	t.Helper()
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	v, err := c.Values(tn)
	require.NoError(t, err)
	flat := make([]float32, v.Rows*v.Cols)
	_, err = v.ReadRows(0, v.Rows, nil, flat)
	require.NoError(t, err)
	out := make([][]float32, v.Rows)
	for r := range out {
		out[r] = flat[int64(r)*v.Cols : int64(r+1)*v.Cols]
		for j := range out[r] {
			out[r][j] = numfmt.RoundTo(numfmt.BF16, out[r][j])
		}
	}
	return out
}

// transposedRows builds a device tensor [cols, len(rows)] whose column j is
// rows[j]: the [in, out] layout of shard_w.
func transposedRows(rows [][]float32) []float32 {
	k := len(rows[0])
	out := make([]float32, k*len(rows))
	for j, r := range rows {
		for i := 0; i < k; i++ {
			out[i*len(rows)+j] = r[i]
		}
	}
	return out
}

func smallPlan(t *testing.T, mesh mapping.Mesh) (*ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	c := open(t, dir)
	pl, err := mapping.BuildWith(c, builtin(t), mesh, nil, nil)
	require.NoError(t, err)
	return c, pl
}

func materialize(t *testing.T, c *ckpt.Checkpoint, pl *mapping.Plan, target string) ([][]float32, []int64) {
	t.Helper()
	e := entryByTarget(pl, target)
	require.NotNil(t, e, target)
	vals, shape, err := e.Materialize(context.Background(), c)
	require.NoError(t, err)
	return vals, shape
}

func TestMaterializeAgainstHandComputation(t *testing.T) {
	t.Parallel()
	c, pl := smallPlan(t, mapping.Mesh{Rows: 1, Cols: 2})
	const P = "model.language_model.layers."
	// Small: hidden 128, 4 heads of 32 (2 KV heads), GDN 2 key heads and 4
	// value heads of 32, intermediate 320, vocab 512.
	t.Run("gdn qkvzab: per device [q_d|k_d|v_d|z_d|a_d|b_d], transposed", func(t *testing.T) {
		qkv := source(t, c, P+"0.linear_attn.in_proj_qkv.weight")
		z := source(t, c, P+"0.linear_attn.in_proj_z.weight")
		a := source(t, c, P+"0.linear_attn.in_proj_a.weight")
		b := source(t, c, P+"0.linear_attn.in_proj_b.weight")
		vals, shape := materialize(t, c, pl, "layers.0/tp/qkvzab.il")
		require.Equal(t, []int64{128, 196}, shape)
		require.Len(t, vals, 2)
		for d := 0; d < 2; d++ {
			var rows [][]float32
			rows = append(rows, qkv[d*32:(d+1)*32]...)         // q heads of device d
			rows = append(rows, qkv[64+d*32:64+(d+1)*32]...)   // k heads
			rows = append(rows, qkv[128+d*64:128+(d+1)*64]...) // v heads
			rows = append(rows, z[d*64:(d+1)*64]...)
			rows = append(rows, a[d*2:(d+1)*2]...)
			rows = append(rows, b[d*2:(d+1)*2]...)
			assert.Equal(t, transposedRows(rows), vals[d], "device %d", d)
		}
	})
	t.Run("attention: per device [q heads|k|v|gate heads], transposed", func(t *testing.T) {
		q := source(t, c, P+"3.self_attn.q_proj.weight")
		k := source(t, c, P+"3.self_attn.k_proj.weight")
		v := source(t, c, P+"3.self_attn.v_proj.weight")
		vals, shape := materialize(t, c, pl, "layers.3/tp/wqkv_fused_qkvg.il")
		require.Equal(t, []int64{128, 192}, shape)
		for d := 0; d < 2; d++ {
			var rows [][]float32
			for h := 2 * d; h < 2*d+2; h++ {
				rows = append(rows, q[h*64:h*64+32]...)
			}
			rows = append(rows, k[d*32:(d+1)*32]...)
			rows = append(rows, v[d*32:(d+1)*32]...)
			for h := 2 * d; h < 2*d+2; h++ {
				rows = append(rows, q[h*64+32:h*64+64]...)
			}
			assert.Equal(t, transposedRows(rows), vals[d], "device %d", d)
		}
	})
	t.Run("swiglu gate_up: alternating 32-wide tiles of gate and up per device", func(t *testing.T) {
		g := source(t, c, P+"1.mlp.gate_proj.weight")
		u := source(t, c, P+"1.mlp.up_proj.weight")
		vals, shape := materialize(t, c, pl, "layers.1/mlp.gate_up.weight.swiglu.tp")
		require.Equal(t, []int64{128, 320}, shape)
		for d := 0; d < 2; d++ {
			var rows [][]float32
			for tile := 0; tile < 5; tile++ {
				r0 := d*160 + tile*32
				rows = append(rows, g[r0:r0+32]...)
				rows = append(rows, u[r0:r0+32]...)
			}
			assert.Equal(t, transposedRows(rows), vals[d], "device %d", d)
		}
	})
	t.Run("row-parallel down_proj: device d holds input columns d", func(t *testing.T) {
		checkDownProj(t, c, pl, P+"1.mlp.down_proj.weight", "layers.1/mlp.down_proj.weight.tp") // FP8 in the fixture
	})
	t.Run("conv tap 2: channel j of [q_d|k_d|v_d]", func(t *testing.T) {
		conv := source(t, c, P+"2.linear_attn.conv1d.weight") // [256, 4] matrix view
		vals, shape := materialize(t, c, pl, "layers.2/tp/tap2")
		require.Equal(t, []int64{1, 1, 128}, shape)
		for d := 0; d < 2; d++ {
			var want []float32
			for _, r := range [][2]int{{d * 32, 32}, {64 + d*32, 32}, {128 + d*64, 64}} {
				for i := r[0]; i < r[0]+r[1]; i++ {
					want = append(want, conv[i][2])
				}
			}
			assert.Equal(t, want, vals[d])
		}
	})
	t.Run("layer norm: bf16(w + 1), replicated, and the distributed halves", func(t *testing.T) {
		w := source(t, c, P+"2.post_attention_layernorm.weight")
		var want []float32
		for _, r := range w {
			want = append(want, numfmt.RoundTo(numfmt.BF16, r[0]+1))
		}
		vals, shape := materialize(t, c, pl, "layers.2.post_attention_layernorm.weight")
		require.Equal(t, []int64{1, 1, 4, 32}, shape)
		require.Len(t, vals, 1, "replicated targets are stored once")
		assert.Equal(t, want, vals[0])
		dist, dshape := materialize(t, c, pl, "layers.2.post_attention_layernorm.weight_distributed")
		require.Equal(t, []int64{1, 1, 2, 32}, dshape)
		assert.Equal(t, want[:64], dist[0])
		assert.Equal(t, want[64:], dist[1])
	})
	t.Run("mtp norm: an RMSNorm like the decoder norms, under mtp/", func(t *testing.T) {
		w := source(t, c, "mtp.norm.weight")
		var want []float32
		for _, r := range w {
			want = append(want, numfmt.RoundTo(numfmt.BF16, r[0]+1))
		}
		vals, shape := materialize(t, c, pl, "mtp/mtp.norm.weight")
		require.Equal(t, []int64{1, 1, 4, 32}, shape)
		assert.Equal(t, want, vals[0])
		dist, dshape := materialize(t, c, pl, "mtp/mtp.norm.weight_distributed")
		require.Equal(t, []int64{1, 1, 2, 32}, dshape)
		assert.Equal(t, want[:64], dist[0])
		assert.Equal(t, want[64:], dist[1])
	})
	t.Run("embedding: hidden columns split across devices", func(t *testing.T) {
		w := source(t, c, "model.language_model.embed_tokens.weight")
		vals, shape := materialize(t, c, pl, "tok_embeddings.weight")
		require.Equal(t, []int64{1, 1, 512, 64}, shape)
		for d := 0; d < 2; d++ {
			for r := 0; r < 512; r += 37 {
				assert.Equal(t, w[r][d*64:(d+1)*64], vals[d][r*64:(r+1)*64])
			}
		}
	})
	t.Run("mtp decoder layer: text layer 3's row-parallel down_proj, from mtp.layers.0", func(t *testing.T) {
		checkDownProj(t, c, pl, "mtp.layers.0.mlp.down_proj.weight", "mtp/layers.3/mlp.down_proj.weight.tp")
	})
	t.Run("mtp fc: column-parallel transpose, device d holds output rows d", func(t *testing.T) {
		w := source(t, c, "mtp.fc.weight") // [128, 256]
		vals, shape := materialize(t, c, pl, "mtp/fc")
		require.Equal(t, []int64{256, 64}, shape)
		for d := 0; d < 2; d++ {
			assert.Equal(t, transposedRows(w[d*64:(d+1)*64]), vals[d], "device %d", d)
		}
	})
}

// checkDownProj checks a row-parallel [128, 320] down_proj of the small
// fixture at 1x2: device d holds input columns [160d, 160d+160), transposed.
func checkDownProj(t *testing.T, c *ckpt.Checkpoint, pl *mapping.Plan, src, target string) {
	t.Helper()
	w := source(t, c, src)
	vals, shape := materialize(t, c, pl, target)
	require.Equal(t, []int64{160, 128}, shape)
	for d := 0; d < 2; d++ {
		for i := 0; i < 160; i++ {
			for o := 0; o < 128; o++ {
				require.Equal(t, w[o][d*160+i], vals[d][i*128+o])
			}
		}
	}
}

func TestApplyValues(t *testing.T) {
	t.Parallel()
	vals := []float32{1.00390625, -2.5, 0}
	require.NoError(t, mapping.ApplyValues([]mapping.ValueOp{{Op: "round", DType: "BF16"}, {Op: "add", Value: 1}}, vals))
	assert.Equal(t, []float32{2, -1.5, 1}, vals) // 1.00390625 is a bf16 tie: rounds to even (1.0)
	require.Error(t, mapping.ApplyValues([]mapping.ValueOp{{Op: "scale"}}, vals))
}

// TestApplyValuesNaN: the round to bf16 turns every NaN into 0x7FC0, as
// torch and tt-metal's host conversion do (sign and payload dropped).
func TestApplyValuesNaN(t *testing.T) {
	t.Parallel()
	nans := []uint32{0x7fc00000, 0xffc00000, 0x7f800001, 0xff812345, 0x7fffffff}
	vals := make([]float32, len(nans))
	for i, b := range nans {
		vals[i] = math.Float32frombits(b)
	}
	require.NoError(t, mapping.ApplyValues([]mapping.ValueOp{{Op: "round", DType: "BF16"}}, vals))
	for i, v := range vals {
		assert.Equal(t, uint32(0x7fc00000), math.Float32bits(v), "NaN %#x", nans[i])
	}
}

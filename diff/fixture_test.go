package diff_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// rngT is a small deterministic generator for fixture values.
type rngT struct{ s uint64 }

func (r *rngT) next() uint64 {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return r.s
}

// normal-ish value in (-1, 1), representable in bf16.
func (r *rngT) bf16() float32 {
	v := float32(int64(r.next()%2000001)-1000000) / 1e6
	return numfmt.RoundTo(numfmt.BF16, v*0.05)
}

func randValues(seed uint64, n int) []float32 {
	r := &rngT{s: seed*0x9e3779b97f4a7c15 + 1}
	out := make([]float32, n)
	for i := range out {
		out[i] = r.bf16()
	}
	return out
}

func encode(t testing.TB, dt numfmt.DType, v []float32) []byte {
	b := make([]byte, len(v)*dt.Bits()/8)
	require.NoError(t, numfmt.EncodeFloat32(dt, v, b))
	return b
}

// fp8 quantises w [rows, cols] with the recipe and returns the weight and
// its scale as MemTensors.
func fp8(t testing.TB, name string, w []float32, rows, cols, bm, bn int64, sdt numfmt.DType) (codes []byte, scales []float32, mts []ckpt.MemTensor) {
	codes = make([]byte, rows*cols)
	sr, sc := (rows+bm-1)/bm, (cols+bn-1)/bn
	scales = make([]float32, sr*sc)
	numfmt.QuantizeBlockFP8(w, rows, cols, bm, bn, sdt, codes, scales)
	mts = []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}, Data: codes},
		{WriteSpec: ckpt.WriteSpec{Name: ckpt.ScaleName(name), DType: sdt, Shape: []int64{sr, sc}}, Data: encode(t, sdt, scales)},
	}
	return codes, scales, mts
}

func bf16T(t testing.TB, name string, shape []int64, v []float32) ckpt.MemTensor {
	return ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.BF16, Shape: shape}, Data: encode(t, numfmt.BF16, v)}
}

// writeCkpt writes a single-file checkpoint with a block-FP8 config (when
// block > 0) into dir and opens it.
func writeCkpt(t testing.TB, dir string, mts []ckpt.MemTensor, block int64, extra map[string]any) *ckpt.Checkpoint {
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cfg := map[string]any{"model_type": "test"}
	if block > 0 {
		cfg["quantization_config"] = map[string]any{"quant_method": "fp8", "weight_block_size": []int64{block, block}}
	}
	for k, v := range extra {
		cfg[k] = v
	}
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), raw, 0o644))
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), mts, nil))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// dequant returns codes × block scales as float32, element by element.
func dequant(codes []byte, scales []float32, rows, cols, bm, bn int64) []float32 {
	out := make([]float32, rows*cols)
	sc := (cols + bn - 1) / bn
	for i := int64(0); i < rows; i++ {
		for j := int64(0); j < cols; j++ {
			out[i*cols+j] = numfmt.DecodeE4M3(codes[i*cols+j]) * scales[(i/bm)*sc+j/bn]
		}
	}
	return out
}

// refStats computes the statistics the straightforward way.
type refStats struct {
	changed              int64
	maxAbs, relL2, cosin float64
}

func reference(b, f []float32) refStats {
	var r refStats
	var ss, nb, nf, dot float64
	for i := range b {
		x, y := float64(b[i]), float64(f[i])
		if math.Float32bits(b[i]) != math.Float32bits(f[i]) {
			r.changed++
		}
		r.maxAbs = math.Max(r.maxAbs, math.Abs(y-x))
		ss += (y - x) * (y - x)
		nb += x * x
		nf += y * y
		dot += x * y
	}
	r.relL2 = math.Sqrt(ss) / math.Sqrt(nb)
	r.cosin = dot / (math.Sqrt(nb) * math.Sqrt(nf))
	return r
}

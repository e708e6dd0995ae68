package extract

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExtractKeepAllDTypes extracts every tensor of every dtype under keep
// (a raw streamed copy with a tiny chunk) and under bf16 (non-floats copied,
// floats rounded), reading the output back through ckpt.Open. Quantised
// codes without a scale (FP8, FNUZ, F4, F6) are refused under bf16/f32.
func TestExtractKeepAllDTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := allDTypeTensors()
	src := writeSource(t, dir, ts, map[string]string{"format": "pt", "producer": "test"})
	c := openCkpt(t, src)
	var codes []string // --exclude globs of the quantised code dtypes
	for _, dt := range numfmt.AllDTypes() {
		if quant.IsCode(dt) {
			codes = append(codes, "*."+string(dt))
		}
	}
	for _, mode := range []string{Keep, BF16, F32} {
		t.Run(mode, func(t *testing.T) {
			var exclude []string
			if mode != Keep {
				exclude = codes
				for _, x := range ts {
					if quant.IsCode(x.DType) {
						_, err := NewPlan(c, PlanOptions{Match: []string{x.Name}, DType: mode})
						var me *ckpt.MissingScaleError
						require.ErrorAs(t, err, &me, x.Name)
						assert.Equal(t, x.Name, me.Tensor)
						assert.ErrorIs(t, err, ckpt.ErrScale)
					}
				}
			}
			p, err := NewPlan(c, PlanOptions{Match: []string{"**"}, Exclude: exclude, DType: mode, ChunkBytes: 5, AllowNonFinite: true})
			require.NoError(t, err)
			out := filepath.Join(dir, mode+".safetensors")
			res, err := p.Write(context.Background(), out)
			require.NoError(t, err)
			require.Len(t, res.Files, 1)
			oc := openCkpt(t, out)
			requireClean(t, oc)
			assert.Equal(t, map[string]string{"format": "pt", "producer": "test"}, oc.Files[0].Header.Metadata)
			n := 0
			for _, x := range ts {
				if mode != Keep && quant.IsCode(x.DType) {
					continue
				}
				n++
				got, ok := oc.Lookup(x.Name)
				require.True(t, ok, x.Name)
				assert.Equal(t, len(x.Shape), len(got.Shape), x.Name)
				data := readTensor(t, got)
				target, _ := TargetDType(mode)
				if target == "" || !x.DType.IsFloat() {
					assert.Equal(t, x.DType, got.DType, x.Name)
					assert.Equal(t, x.Data, data, x.Name)
					continue
				}
				assert.Equal(t, target, got.DType, x.Name)
				n := int(got.Numel())
				in, want := make([]float32, n), make([]byte, n*target.Bits()/8)
				require.NoError(t, numfmt.DecodeFloat32(x.DType, x.Data, in))
				require.NoError(t, numfmt.EncodeFloat32(target, in, want))
				assert.Equal(t, want, data, x.Name)
			}
			assert.Len(t, oc.Tensors, n)
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := readAll(p)
	require.NoError(t, err)
	return b
}

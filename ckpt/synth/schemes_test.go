package synth_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme  ckpt.Scheme
		weights int
	}{{ckpt.MXFP4, 4}, {ckpt.NVFP4, 14}, {ckpt.FP8Tensor, 14}, {ckpt.FP8Channel, 14}, {ckpt.FP8Block, 14}} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, v := range []struct {
				name string
				o    synth.SchemeOptions
			}{{"base", synth.SchemeOptions{}}, {"bad", synth.SchemeOptions{BadScaleShape: true}}, {"ft", synth.SchemeOptions{FineTune: true}}} {
				require.NoError(t, synth.WriteScheme(filepath.Join(dir, v.name), tc.scheme, v.o))
			}
			open := func(name string) *ckpt.Checkpoint {
				c, err := ckpt.Open(context.Background(), filepath.Join(dir, name), ckpt.Options{})
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				return c
			}
			badScale, badWeight := synth.SchemeBadScale(tc.scheme)
			for _, name := range []string{"base", "bad"} {
				c := open(name)
				r, err := c.QuantRecipe()
				require.NoError(t, err)
				require.NotNil(t, r)
				assert.Equal(t, tc.scheme, r.Scheme)
				ws := r.QuantWeights(c)
				assert.Len(t, ws, tc.weights)
				for _, w := range ws {
					assert.Empty(t, r.Ignored(w.Module), w.Name)
					assert.Empty(t, w.ShapeProblem, w.Name)
					for _, cp := range w.Companions {
						if !cp.Optional || cp.Tensor != nil {
							require.NotNil(t, cp.Tensor, "%s of %s", cp.Name, w.Name)
						}
						assert.True(t, cp.DTypeOK(), cp.Name)
						wrong := name == "bad" && cp.Name == badScale
						assert.Equal(t, !wrong, cp.ShapeOK(), "%s of %s in %s", cp.Name, w.Name, name)
						if wrong {
							assert.Equal(t, badWeight, w.Weight.Name)
						}
					}
				}
			}
			ft := open("ft")
			r, err := ft.QuantRecipe()
			require.NoError(t, err)
			assert.Nil(t, r, "a bf16 fine-tune declares no quantisation")
			for _, x := range ft.Tensors {
				assert.Equal(t, ckpt.BF16, x.DType, x.Name)
			}
			_, ok := ft.Lookup(synth.SchemeChangedWeight(tc.scheme))
			assert.True(t, ok)
		})
	}
}

package synth_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteScheme(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme  quant.Scheme
		weights int
	}{{quant.MXFP4, 4}, {quant.NVFP4, 14}, {quant.FP8Tensor, 14}, {quant.FP8Channel, 14}, {quant.FP8PerBlock, 14}} {
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
				ws := c.QuantWeights(r)
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
				assert.Equal(t, numfmt.BF16, x.DType, x.Name)
			}
			_, ok := ft.Lookup(synth.SchemeChangedWeight(tc.scheme))
			assert.True(t, ok)
		})
	}
}

func readAll(t *testing.T, x *ckpt.Tensor) []byte {
	t.Helper()
	b := make([]byte, x.NBytes())
	_, err := x.ReadAt(b, 0)
	require.NoError(t, err)
	return b
}

func readF32(t *testing.T, x *ckpt.Tensor) []float32 {
	t.Helper()
	out := make([]float32, x.Numel())
	require.NoError(t, numfmt.DecodeFloat32(x.DType, readAll(t, x), out))
	return out
}

// TestSchemeFineTuneValues: the bf16 fine-tune holds the base's
// dequantised values exactly, but every 7th element of the changed weight.
func TestSchemeFineTuneValues(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4, quant.FP8Tensor, quant.FP8Channel, quant.FP8PerBlock} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, ft, err := synth.SchemePair(t.TempDir(), s)
			require.NoError(t, err)
			open := func(dir string) *ckpt.Checkpoint {
				c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				return c
			}
			b, f := open(base), open(ft)
			r, err := b.QuantRecipe()
			require.NoError(t, err)
			for _, w := range b.QuantWeights(r) {
				vals := make([]float32, numelOf(w.Shape))
				comp := func(i int) *ckpt.Tensor { require.NotNil(t, w.Companions[i].Tensor); return w.Companions[i].Tensor }
				switch s {
				case quant.MXFP4:
					require.NoError(t, numfmt.DequantMXFP4(vals, readAll(t, w.Weight), readAll(t, comp(0))))
				case quant.NVFP4:
					require.NoError(t, numfmt.DequantNVFP4(vals, readAll(t, w.Weight), readAll(t, comp(0)), readF32(t, comp(1))[0], int(w.Shape[0]), int(w.Shape[1])))
				default:
					codes, sc := readAll(t, w.Weight), readF32(t, comp(0))
					rows, cols := w.Shape[0], w.Shape[1]
					for i := int64(0); i < rows; i++ {
						for j := int64(0); j < cols; j++ {
							k := int64(0)
							switch s {
							case quant.FP8Channel:
								k = i
							case quant.FP8PerBlock:
								k = (i/32)*((cols+31)/32) + j/32
							}
							vals[i*cols+j] = numfmt.DecodeE4M3(codes[i*cols+j]) * sc[k]
						}
					}
				}
				x, ok := f.Lookup(w.Name)
				require.True(t, ok, w.Name)
				assert.Equal(t, w.Shape, x.Shape, w.Name)
				got := readF32(t, x)
				changed := 0
				for i := range got {
					if got[i] != vals[i] {
						changed++
						assert.Equal(t, w.Name, synth.SchemeChangedWeight(s), "%s element %d: %v, base %v", w.Name, i, got[i], vals[i])
						assert.Zero(t, i%7, "%s element %d", w.Name, i)
					}
				}
				if w.Name == synth.SchemeChangedWeight(s) {
					assert.Greater(t, changed, len(got)/7-len(got)/50, "most of every 7th element changed")
				}
			}
		})
	}
}

func numelOf(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

// TestSchemeRequantisable: with Requantisable, the bf16 fine-tune holds
// the base's dequantised values exactly (no every-7th change), and with
// RequantChanged exactly that many elements of the changed weight differ,
// each in its own block of the scheme.
func TestSchemeRequantisable(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		for _, n := range []int{0, 4} {
			t.Run(string(s), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				base, ft := dir+"/base", dir+"/ft"
				require.NoError(t, synth.WriteScheme(base, s, synth.SchemeOptions{Requantisable: true}))
				require.NoError(t, synth.WriteScheme(ft, s, synth.SchemeOptions{Requantisable: true, FineTune: true, RequantChanged: n}))
				b, err := ckpt.Open(context.Background(), base, ckpt.Options{})
				require.NoError(t, err)
				defer b.Close()
				f, err := ckpt.Open(context.Background(), ft, ckpt.Options{})
				require.NoError(t, err)
				defer f.Close()
				r, err := b.QuantRecipe()
				require.NoError(t, err)
				group := map[quant.Scheme]int{quant.MXFP4: 32, quant.NVFP4: 16}[s]
				for _, w := range b.QuantWeights(r) {
					vals := make([]float32, numelOf(w.Shape))
					comp := func(i int) *ckpt.Tensor { return w.Companions[i].Tensor }
					if s == quant.MXFP4 {
						require.NoError(t, numfmt.DequantMXFP4(vals, readAll(t, w.Weight), readAll(t, comp(0))))
					} else {
						require.NoError(t, numfmt.DequantNVFP4(vals, readAll(t, w.Weight), readAll(t, comp(0)), readF32(t, comp(1))[0], int(w.Shape[0]), int(w.Shape[1])))
					}
					x, ok := f.Lookup(w.Name)
					require.True(t, ok, w.Name)
					blocks := map[int]bool{}
					for i, v := range readF32(t, x) {
						if v != vals[i] {
							blocks[i/group] = true
						}
					}
					want := 0
					if w.Name == synth.SchemeChangedWeight(s) {
						want = n
					}
					assert.Len(t, blocks, want, w.Name)
				}
			})
		}
	}
}

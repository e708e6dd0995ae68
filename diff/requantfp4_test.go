package diff

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

// fp4Pair writes a base of scheme s made by numfmt's recipe and its bf16
// fine-tune with changed elements changed, and compares them (with the
// test hook probe, nil for none).
func fp4Pair(t *testing.T, s quant.Scheme, changed int, opt CompareOptions, probe *chunkProbe) *Result {
	t.Helper()
	dir := t.TempDir()
	base, ft := filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	require.NoError(t, synth.WriteScheme(base, s, synth.SchemeOptions{Requantisable: true}))
	require.NoError(t, synth.WriteScheme(ft, s, synth.SchemeOptions{Requantisable: true, FineTune: true, RequantChanged: changed}))
	ctx := context.Background()
	bc, err := ckpt.Open(ctx, base, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { bc.Close() })
	fc, err := ckpt.Open(ctx, ft, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { fc.Close() })
	res, err := compareProbed(ctx, bc, fc, opt, probe)
	require.NoError(t, err)
	return res
}

// TestRequantFP4: an MXFP4 / NVFP4 base made by a recipe from float
// values and its bf16 fine-tune holding the dequantised values are
// requant_identical weight by weight, naming the recipe (ocp-floor made
// the MXFP4 base; ModelOpt's weight_scale_2 is reproduced); with 5
// elements of one weight changed, that weight is dtype_changed with 5
// mismatching codes in 5 blocks, whatever the chunking. Before, every
// such weight was dtype_changed without requant counts.
func TestRequantFP4(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s       quant.Scheme
		weights int
		recipe  string
	}{{quant.MXFP4, 4, "ocp-floor"}, {quant.NVFP4, 14, "modelopt"}} {
		for _, changed := range []int{0, 5} {
			for _, chunk := range []int64{0, 256} {
				t.Run(string(tc.s), func(t *testing.T) {
					t.Parallel()
					res := fp4Pair(t, tc.s, changed, CompareOptions{ChunkBytes: chunk, Workers: 2}, nil)
					name := synth.SchemeChangedWeight(tc.s)
					n := 0
					for _, r := range res.Tensors {
						if r.BaseDType != numfmt.U8 || r.FTDType != numfmt.BF16 {
							assert.Empty(t, r.RequantRecipe, r.Name)
							continue
						}
						n++
						require.NotNil(t, r.RequantMismatchElems, r.Name)
						assert.Equal(t, tc.recipe, r.RequantRecipe, r.Name)
						if changed > 0 && r.Name == name {
							assert.Equal(t, DTypeChanged, r.Relation, r.Name)
							assert.Equal(t, int64(changed), *r.RequantMismatchElems, r.Name)
							assert.Equal(t, int64(changed), *r.RequantMismatchBlocks, r.Name)
							assert.Equal(t, int64(changed), *r.ChangedElems, r.Name)
							continue
						}
						assert.Equal(t, RequantIdentical, r.Relation, r.Name)
						assert.Zero(t, *r.RequantMismatchElems, r.Name)
						assert.Zero(t, *r.RequantMismatchBlocks, r.Name)
						assert.Zero(t, *r.ChangedElems, r.Name)
					}
					assert.Equal(t, tc.weights, n)
					want := tc.weights
					if changed > 0 {
						want--
					}
					assert.Equal(t, int64(want), res.Summary.RequantIdentical)
				})
			}
		}
	}
}

// TestRequantFP4RandomCodes: the fixtures whose codes and scales are
// drawn at random, not made by a recipe. An MXFP4 block of 32 random codes
// nearly always holds a ±6, so its values re-quantise to its own scale and
// codes: requant_identical, also the weight whose fine-tune changed every
// 7th element by about 1 %, less than the codes' steps. NVFP4's random weight_scale_2 (2^-8) is not amax /
// 2688 (the recipe is then modelopt-stored-global), and a block of 16
// random codes without a ±6 re-quantises to another scale.
func TestRequantFP4RandomCodes(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			base, ft, err := synth.SchemePair(t.TempDir(), s)
			require.NoError(t, err)
			ctx := context.Background()
			bc, err := ckpt.Open(ctx, base, ckpt.Options{})
			require.NoError(t, err)
			defer bc.Close()
			fc, err := ckpt.Open(ctx, ft, ckpt.Options{})
			require.NoError(t, err)
			defer fc.Close()
			res, err := Compare(ctx, bc, fc, CompareOptions{})
			require.NoError(t, err)
			n := 0
			for _, r := range res.Tensors {
				if r.BaseDType != numfmt.U8 || r.FTDType != numfmt.BF16 {
					continue
				}
				n++
				require.NotNil(t, r.RequantMismatchBlocks, r.Name)
				if s == quant.NVFP4 {
					assert.Equal(t, "modelopt-stored-global", r.RequantRecipe, r.Name)
					assert.Equal(t, DTypeChanged, r.Relation, r.Name)
					assert.Positive(t, *r.RequantMismatchBlocks, r.Name)
					continue
				}
				assert.Equal(t, "ocp-floor", r.RequantRecipe, r.Name)
				assert.Equal(t, RequantIdentical, r.Relation, r.Name)
				if r.Name == synth.SchemeChangedWeight(s) {
					assert.Positive(t, *r.ChangedElems, "%s: changed values that quantise to the same codes", r.Name)
				}
			}
			assert.Equal(t, map[quant.Scheme]int{quant.MXFP4: 4, quant.NVFP4: 14}[s], n)
		})
	}
}

// TestRequantFP4Reversed: the wider side may be the base.
func TestRequantFP4Reversed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft := filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	require.NoError(t, synth.WriteScheme(base, quant.NVFP4, synth.SchemeOptions{Requantisable: true}))
	require.NoError(t, synth.WriteScheme(ft, quant.NVFP4, synth.SchemeOptions{Requantisable: true, FineTune: true}))
	ctx := context.Background()
	bc, err := ckpt.Open(ctx, base, ckpt.Options{})
	require.NoError(t, err)
	defer bc.Close()
	fc, err := ckpt.Open(ctx, ft, ckpt.Options{})
	require.NoError(t, err)
	defer fc.Close()
	res, err := Compare(ctx, fc, bc, CompareOptions{})
	require.NoError(t, err)
	assert.EqualValues(t, 14, res.Summary.RequantIdentical)
}

// TestRequantFP4ReleasesScales: once a weight is compared, its plan drops
// the scales it read (a packed FP4 weight's are a sixteenth or a
// thirty-second of its values). Before, every plan kept them until the
// diff ended: on a 27B NVFP4 pair, ~1.7 GB.
func TestRequantFP4ReleasesScales(t *testing.T) {
	t.Parallel()
	for _, s := range []quant.Scheme{quant.MXFP4, quant.NVFP4} {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			var probe chunkProbe
			res := fp4Pair(t, s, 5, CompareOptions{Workers: 2}, &probe)
			require.NotEmpty(t, res.Tensors)
			assert.Zero(t, probe.retained)
		})
	}
}

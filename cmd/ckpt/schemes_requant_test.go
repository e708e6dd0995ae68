package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiffSchemesRequantFP4: an MXFP4 / NVFP4 base made by a recipe
// (ocp-floor; ModelOpt's) from float values against its bf16 fine-tune
// holding the dequantised values: every quantised weight is
// requant_identical with both mismatch counts 0 and the recipe named in
// requant_recipe, and diff exits 1 (a dtype difference), as FP8's
// requant_identical does; with 3 elements of one weight changed, that
// weight is dtype_changed with 3 mismatching codes in 3 blocks; the base
// against itself exits 0. Before, these weights were all dtype_changed
// without requant counts.
func TestDiffSchemesRequantFP4(t *testing.T) {
	t.Parallel()
	type row struct {
		Name                  string
		Relation              string
		BaseDType             string `json:"base_dtype"`
		FTDType               string `json:"ft_dtype"`
		ChangedElems          *int64 `json:"changed_elems"`
		RequantMismatchElems  *int64 `json:"requant_mismatch_elems"`
		RequantMismatchBlocks *int64 `json:"requant_mismatch_blocks"`
		RequantRecipe         string `json:"requant_recipe"`
	}
	for _, tc := range []struct {
		s       quant.Scheme
		weights int64
		recipe  string
	}{{quant.MXFP4, 4, "ocp-floor"}, {quant.NVFP4, 14, "modelopt"}} {
		t.Run(string(tc.s), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			base, ft, ft3 := filepath.Join(dir, "base"), filepath.Join(dir, "ft"), filepath.Join(dir, "ft3")
			require.NoError(t, synth.WriteScheme(base, tc.s, synth.SchemeOptions{Requantisable: true}))
			require.NoError(t, synth.WriteScheme(ft, tc.s, synth.SchemeOptions{Requantisable: true, FineTune: true}))
			require.NoError(t, synth.WriteScheme(ft3, tc.s, synth.SchemeOptions{Requantisable: true, FineTune: true, RequantChanged: 3}))
			for _, changed := range []int64{0, 3} {
				dst := ft
				if changed > 0 {
					dst = ft3
				}
				code, out, stderr := runApp(t, "diff", base, dst, "--format", "json", "--progress", "none")
				require.Equal(t, 1, code, "%s%s", out, stderr)
				var doc struct {
					Summary map[string]int64
					Tensors []row
				}
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				want := tc.weights
				if changed > 0 {
					want--
				}
				assert.Equal(t, want, doc.Summary["requant_identical"])
				assert.Equal(t, tc.weights-want, doc.Summary["dtype_changed"])
				assert.Zero(t, doc.Summary["changed"])
				n := int64(0)
				for _, r := range doc.Tensors {
					if r.BaseDType != "U8" || r.FTDType != "BF16" {
						assert.Empty(t, r.RequantRecipe, r.Name)
						continue
					}
					n++
					require.NotNil(t, r.RequantMismatchElems, r.Name)
					require.NotNil(t, r.RequantMismatchBlocks, r.Name)
					assert.Equal(t, tc.recipe, r.RequantRecipe, r.Name)
					if changed > 0 && r.Name == synth.SchemeChangedWeight(tc.s) {
						assert.Equal(t, "dtype_changed", r.Relation, r.Name)
						assert.Equal(t, changed, *r.RequantMismatchElems, r.Name)
						assert.Equal(t, changed, *r.RequantMismatchBlocks, r.Name)
						assert.Equal(t, changed, *r.ChangedElems, r.Name)
						continue
					}
					assert.Equal(t, "requant_identical", r.Relation, r.Name)
					assert.Zero(t, *r.RequantMismatchElems, r.Name)
					assert.Zero(t, *r.RequantMismatchBlocks, r.Name)
				}
				assert.Equal(t, tc.weights, n)
			}
			// the text names the recipe in the row's note
			code, out, stderr := runApp(t, "diff", base, ft3, "--progress", "none")
			require.Equal(t, 1, code, "%s%s", out, stderr)
			assert.Contains(t, out, "re-quantises exactly ("+tc.recipe+")")
			assert.Contains(t, out, "re-quantising: 3 code(s), 3 block(s) differ ("+tc.recipe+")")
			code, out, stderr = runApp(t, "diff", base, base, "--format", "json", "--progress", "none")
			require.Equal(t, 0, code, "%s%s", out, stderr)
		})
	}
}

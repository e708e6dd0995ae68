package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recipeRow is the part of a diff row these tests read.
type recipeRow struct {
	Name                  string
	Relation              string
	BaseDType             string `json:"base_dtype"`
	FTDType               string `json:"ft_dtype"`
	RequantMismatchElems  *int64 `json:"requant_mismatch_elems"`
	RequantMismatchBlocks *int64 `json:"requant_mismatch_blocks"`
	RequantRecipe         string `json:"requant_recipe"`
}

// writeRecipePair writes the small base quantised by recipe r (in
// transformers' layout for its recipes) to dir/base and the bf16 model it
// was quantised from to dir/bf16.
func writeRecipePair(t *testing.T, dir string, r numfmt.FP8Recipe, sd numfmt.DType) (base, bf16 string) {
	t.Helper()
	base, bf16 = filepath.Join(dir, "base"), filepath.Join(dir, "bf16")
	o := synth.Small()
	o.Recipe, o.ScaleDType, o.LayersPerShard = r, sd, 0
	require.NoError(t, synth.Write(base, o))
	o = synth.Small()
	o.FP8, o.LayersPerShard = false, 0
	require.NoError(t, synth.Write(bf16, o))
	return base, bf16
}

// TestDiffRequantRecipesFP8: a block-FP8 base written by transformers'
// FineGrainedFP8 recipe (float scales, and scale_fmt "ue8m0" with
// F8_E8M0 scales) against the bf16 model it quantised: every FP8 weight
// is requant_identical with zero mismatches and requant_recipe naming the
// recipe that reproduced it (transformers' own, or ckpt's where its
// scales and codes happen to be the same: the first recipe wins), in the
// JSON and the text note; diff exits 1 (dtype differences). Before, the
// float base read dtype_changed for most weights (ckpt's amax/448 is one
// ulp off 1/(448/amax) in a third of the blocks) and the ue8m0 base was
// refused (exit 2: "scale dtype is F8_E8M0, expected F32, BF16 or F16").
func TestDiffRequantRecipesFP8(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r  numfmt.FP8Recipe
		sd numfmt.DType
	}{{numfmt.FP8Transformers, ""}, {numfmt.FP8TransformersUE8M0, ""}, {numfmt.FP8Ckpt, numfmt.BF16}} {
		t.Run(tc.r.String(), func(t *testing.T) {
			t.Parallel()
			base, bf16 := writeRecipePair(t, t.TempDir(), tc.r, tc.sd)
			code, out, stderr := runApp(t, "diff", base, bf16, "--format", "json", "--progress", "none")
			require.Equal(t, 1, code, "%s%s", out, stderr)
			var doc struct {
				Summary map[string]int64
				Tensors []recipeRow
			}
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			assert.Zero(t, doc.Summary["dtype_changed"])
			named, n := 0, 0
			for _, r := range doc.Tensors {
				if r.BaseDType != "F8_E4M3" {
					continue
				}
				n++
				assert.Equal(t, "requant_identical", r.Relation, r.Name)
				require.NotNil(t, r.RequantMismatchElems, r.Name)
				assert.Zero(t, *r.RequantMismatchElems, r.Name)
				assert.Zero(t, *r.RequantMismatchBlocks, r.Name)
				if tc.r == numfmt.FP8TransformersUE8M0 { // no other recipe stores F8_E8M0
					assert.Equal(t, tc.r.String(), r.RequantRecipe, r.Name)
				} else {
					assert.Contains(t, []string{"ckpt", tc.r.String()}, r.RequantRecipe, r.Name)
				}
				if r.RequantRecipe == tc.r.String() {
					named++
				}
			}
			assert.Equal(t, n, int(doc.Summary["requant_identical"]))
			assert.Greater(t, n, 30)
			assert.Greater(t, named, n/2, "most weights need the recipe's own arithmetic")
			code, out, _ = runApp(t, "diff", base, bf16, "--progress", "none")
			require.Equal(t, 1, code)
			if tc.r != numfmt.FP8Ckpt {
				assert.Contains(t, out, "re-quantises exactly ("+tc.r.String()+")")
			} else {
				assert.NotContains(t, out, "(ckpt)", "ckpt's recipe is the default, not named in the text note")
			}
		})
	}
}

// TestDiffRequantRecipeChanged: the transformers base against its bf16
// model with one weight edited: the edited weight is dtype_changed with
// the counts of ckpt's recipe, named; the others stay requant_identical.
func TestDiffRequantRecipeChanged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, _ := writeRecipePair(t, dir, numfmt.FP8Transformers, "")
	ft := filepath.Join(dir, "ft")
	o := synth.Small()
	o.FP8, o.LayersPerShard, o.FineTune = false, 0, true
	require.NoError(t, synth.Write(ft, o))
	code, out, stderr := runApp(t, "diff", base, ft, "--format", "json", "--progress", "none")
	require.Equal(t, 1, code, "%s%s", out, stderr)
	var doc struct{ Tensors []recipeRow }
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	changed := 0
	for _, r := range doc.Tensors {
		if r.BaseDType != "F8_E4M3" {
			continue
		}
		if strings.HasSuffix(r.Name, "layers.1.mlp.down_proj.weight") && !strings.HasPrefix(r.Name, "mtp.") {
			changed++
			assert.Equal(t, "dtype_changed", r.Relation)
			assert.Equal(t, "ckpt", r.RequantRecipe)
			assert.Positive(t, *r.RequantMismatchElems)
			continue
		}
		assert.Equal(t, "requant_identical", r.Relation, r.Name)
	}
	assert.Equal(t, 1, changed)
}

// TestUE8M0Scales: a transformers FP8 checkpoint with scale_fmt "ue8m0"
// (F8_E8M0 weight_scale_inv) passes verify and verify --read-data; a
// scale code 0xFF (NaN) fails --read-data's data.scale_values naming the
// scale; an F8_E8M0 scale under scale_fmt "float" is a warning naming
// both; extract --dtype f32 writes code·2^(e-127); map and cache build
// accept it, and the cache equals, file for file, the cache of the same
// codes with the same scales stored as F32. Before, verify failed
// fp8.scale_dtype ("expected F32, BF16 or F16") and extract, map and
// cache build refused the scales (exit 2).
func TestUE8M0Scales(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, f32src := filepath.Join(dir, "ue8m0"), filepath.Join(dir, "f32")
	o := synth.Small()
	o.Recipe, o.LayersPerShard = numfmt.FP8TransformersUE8M0, 0
	require.NoError(t, synth.Write(src, o))
	o.ScaleDType = numfmt.F32
	require.NoError(t, synth.Write(f32src, o))

	code, out, stderr := runApp(t, "verify", src, "--format", "json")
	require.Equal(t, 0, code, "%s%s", out, stderr)
	assert.Contains(t, out, "F8_E8M0 (")
	code, out, stderr = runApp(t, "verify", src, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, "%s%s", out, stderr)

	// the scale of one weight: its E8M0 codes and the F32 copy's values
	c, err := ckpt.Open(context.Background(), src, ckpt.Options{})
	require.NoError(t, err)
	const w = "model.language_model.layers.0.mlp.down_proj.weight"
	st, ok := c.Lookup(ckpt.ScaleName(w))
	require.True(t, ok)
	require.Equal(t, numfmt.F8E8M0, st.DType)
	scales := make([]byte, st.NBytes())
	_, err = st.ReadAt(scales, 0)
	require.NoError(t, err)
	wt, _ := c.Lookup(w)
	codes := make([]byte, wt.NBytes())
	_, err = wt.ReadAt(codes, 0)
	require.NoError(t, err)
	c.Close()

	// extract --dtype f32: code · 2^(e-127), the float32 product
	x := filepath.Join(dir, "x.safetensors")
	code, _, stderr = runApp(t, "extract", src, "--match", w, "--dtype", "f32", "--out", x, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	xc, err := ckpt.Open(context.Background(), x, ckpt.Options{})
	require.NoError(t, err)
	xt, ok := xc.Lookup(w)
	require.True(t, ok)
	raw := make([]byte, xt.NBytes())
	_, err = xt.ReadAt(raw, 0)
	require.NoError(t, err)
	xc.Close()
	cols, bm, bn := wt.Shape[1], int64(o.Block[0]), int64(o.Block[1])
	sCols := (cols + bn - 1) / bn
	for i, cd := range codes {
		r, col := int64(i)/cols, int64(i)%cols
		s := numfmt.E8M0ToFloat32(scales[(r/bm)*sCols+col/bn])
		want := numfmt.DecodeE4M3(cd) * s
		got := math.Float32frombits(uint32(raw[4*i]) | uint32(raw[4*i+1])<<8 | uint32(raw[4*i+2])<<16 | uint32(raw[4*i+3])<<24)
		require.Equal(t, math.Float32bits(want), math.Float32bits(got), "element %d", i)
	}

	code, out, stderr = runApp(t, "map", src, "--mesh", "1x2")
	require.Equal(t, 0, code, "%s%s", out, stderr)
	a, b := filepath.Join(dir, "cache-ue8m0"), filepath.Join(dir, "cache-f32")
	code, _, stderr = runApp(t, "cache", "build", src, "--out", a, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	code, _, stderr = runApp(t, "cache", "build", f32src, "--out", b, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	n := 0
	require.NoError(t, filepath.Walk(a, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".tensorbin") {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		ga, err := os.ReadFile(p)
		require.NoError(t, err)
		gb, err := os.ReadFile(filepath.Join(b, rel))
		require.NoError(t, err, rel)
		require.Equal(t, ga, gb, rel)
		n++
		return nil
	}))
	assert.Greater(t, n, 30)

	// a NaN scale code fails --read-data, naming the scale
	bad := copyDir(t, src)
	file := filepath.Join(bad, "model.safetensors")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	bc, err := ckpt.Open(context.Background(), bad, ckpt.Options{})
	require.NoError(t, err)
	bst, _ := bc.Lookup(ckpt.ScaleName(w))
	off := bst.Offset()
	bc.Close()
	data[off] = 0xFF
	require.NoError(t, os.WriteFile(file, data, 0o644))
	code, out, _ = runApp(t, "verify", bad, "--read-data", "--progress", "none", "--format", "json")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "data.scale_values")
	assert.Contains(t, out, ckpt.ScaleName(w))

	// F8_E8M0 scales under scale_fmt "float": a warning naming both
	flt := copyDir(t, src)
	cfg, err := os.ReadFile(filepath.Join(flt, "config.json"))
	require.NoError(t, err)
	cfg = []byte(strings.Replace(string(cfg), `"scale_fmt": "ue8m0"`, `"scale_fmt": "float"`, 1))
	require.NoError(t, os.WriteFile(filepath.Join(flt, "config.json"), cfg, 0o644))
	code, out, _ = runApp(t, "verify", flt, "--strict")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, `is F8_E8M0 but quantization_config.scale_fmt is "float"`)
}

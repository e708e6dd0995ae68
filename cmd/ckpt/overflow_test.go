package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nonFiniteOut counts the NaN and Inf of tensor name in the safetensors
// file at path (what an extraction really wrote).
func nonFiniteOut(t *testing.T, path, name string) int64 {
	t.Helper()
	c, err := ckpt.Open(context.Background(), path, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	tn, ok := c.Lookup(name)
	require.True(t, ok, name)
	raw := make([]byte, tn.NBytes())
	_, err = tn.ReadAt(raw, 0)
	require.NoError(t, err)
	nan, inf := ckpt.CountNonFinite(tn.DType, raw)
	return nan + inf
}

type extractJSON struct {
	NonFinite []ckpt.NonFinite `json:"nonfinite"`
}

// TestExtractF16Overflow: finite BF16 and F32 values beyond the F16 range
// (1e5, -7e4) fail extract --dtype f16 (exit 1) naming the tensor and the
// count, and nothing is written; --allow-nonfinite writes them (as Inf)
// and lists the counts in JSON.
func TestExtractF16Overflow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "big.safetensors")
	bf := make([]byte, 8)
	for i, v := range []float32{1, 1e5, 2, 3} {
		binary.LittleEndian.PutUint16(bf[2*i:], numfmt.F32ToBF16(v))
	}
	f := make([]byte, 16)
	for i, v := range []float32{-7e4, 1, 2, 3} {
		binary.LittleEndian.PutUint32(f[4*i:], math.Float32bits(v))
	}
	require.NoError(t, ckpt.WriteFile(src, []ckpt.MemTensor{
		{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.BF16, Shape: []int64{4}}, Data: bf},
		{WriteSpec: ckpt.WriteSpec{Name: "b", DType: numfmt.F32, Shape: []int64{4}}, Data: f},
	}, nil))
	for _, tc := range []struct{ match, tensor, dtype string }{{"a", "a", "BF16"}, {"b", "b", "F32"}} {
		x := filepath.Join(dir, tc.match+".safetensors")
		code, stdout, stderr := runApp(t, "extract", src, "--match", tc.match, "--dtype", "f16", "--out", x, "--progress", "none")
		require.Equal(t, 1, code, stdout+stderr)
		assert.Contains(t, stderr, `tensor "`+tc.tensor+`" (`+tc.dtype+`): 1 of 4 values are finite but overflow to Inf when converted to F16 (F16 holds at most 65504): refusing to extract it (pass --allow-nonfinite`)
		_, err := os.Stat(x)
		require.ErrorIs(t, err, os.ErrNotExist)
	}
	x := filepath.Join(dir, "x.safetensors")
	code, stdout, stderr := runApp(t, "extract", src, "--match", "**", "--dtype", "f16", "--out", x, "--progress", "none", "--allow-nonfinite", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res extractJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Equal(t, []ckpt.NonFinite{{Tensor: "a", Overflow: 1}, {Tensor: "b", Overflow: 1}}, res.NonFinite)
	assert.EqualValues(t, 1, nonFiniteOut(t, x, "a"))
	assert.EqualValues(t, 1, nonFiniteOut(t, x, "b"))
	// F32 output holds them: nothing to refuse.
	code, _, stderr = runApp(t, "extract", src, "--match", "**", "--dtype", "f32", "--out", filepath.Join(dir, "f32.safetensors"), "--progress", "none")
	require.Equal(t, 0, code, stderr)
}

// TestHugeBlockScale: a finite block scale of 3.39e38 (the largest bf16)
// times the FP8 codes overflows: verify --read-data warns naming the
// scale, its block and value; extract --dtype bf16 and cache build fail
// (exit 1) naming the weight and the count; with --allow-nonfinite the
// count is reported in JSON and equals the Inf values written.
func TestHugeBlockScale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "ft")
	require.NoError(t, synth.Write(src, synth.Small()))
	const w = "model.language_model.layers.0.mlp.down_proj.weight"
	huge := make([]byte, 2)
	binary.LittleEndian.PutUint16(huge, numfmt.F32ToBF16(3.39e38))
	require.NoError(t, synth.PokeTensor(src, w+ckpt.ScaleSuffix, 0, huge))

	// verify --read-data: a warning (exit 0), in text and JSON.
	code, stdout, stderr := runApp(t, "verify", src, "--read-data", "--format", "text", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	const warn = w + "_scale_inv: 1 of 40 scale values times the largest F8_E4M3 code 448 exceed the F32 maximum 3.4028e+38 (and BF16's); first at block [0, 0] = 3.38953e+38"
	assert.Contains(t, stdout, warn)
	code, stdout, _ = runApp(t, "verify", src, "--read-data", "--format", "json", "--progress", "none")
	require.Equal(t, 0, code)
	var vr struct {
		Findings []ckpt.Finding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &vr))
	var warned bool
	for _, f := range vr.Findings {
		if f.ID == "data.scale_values" && f.Status == ckpt.Warn {
			warned = true
			assert.Contains(t, f.Message, warn)
			assert.Equal(t, []string{w + ckpt.ScaleSuffix}, f.Tensors)
		}
	}
	assert.True(t, warned, "no data.scale_values warning: %s", stdout)

	// extract --dtype bf16.
	x := filepath.Join(dir, "x.safetensors")
	code, _, stderr = runApp(t, "extract", src, "--match", "model.language_model.layers.0.mlp.**", "--dtype", "bf16", "--out", x, "--progress", "none")
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, `tensor "`+w+`" (F8_E4M3): `)
	assert.Contains(t, stderr, ` of 40960 values are finite but overflow to Inf when converted to BF16 (1 block scale(s) of "`+w+`_scale_inv" times the largest code 448 exceed the BF16 maximum 3.3895e+38, the first at block [0, 0] = 3.3895e+38): refusing to extract it`)
	_, err := os.Stat(x)
	require.ErrorIs(t, err, os.ErrNotExist)
	code, stdout, stderr = runApp(t, "extract", src, "--match", "model.language_model.layers.0.mlp.**", "--dtype", "bf16", "--out", x, "--progress", "none", "--allow-nonfinite", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var er extractJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &er))
	require.Len(t, er.NonFinite, 1)
	assert.Equal(t, w, er.NonFinite[0].Tensor)
	written := nonFiniteOut(t, x, w)
	require.Positive(t, written)
	assert.Equal(t, written, er.NonFinite[0].Overflow, "the count is the Inf values written")

	// cache build.
	out := filepath.Join(dir, "cache")
	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--progress", "none")
	require.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stderr, `tensor "`+w+`" (F8_E4M3): `+strconv.FormatInt(written, 10)+` of 40960 values are finite but overflow to Inf when converted to BF16`)
	assert.Contains(t, stderr, "refusing to build a cache from it")
	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "--allow-nonfinite", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var br build.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &br))
	require.Equal(t, []ckpt.NonFinite{{Tensor: w, Overflow: written}}, br.NonFinite)
	// A build that does not allow them rebuilds (and refuses) the files.
	code, _, stderr = runApp(t, "cache", "build", src, "--out", out, "--progress", "none")
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "overflow to Inf")
}

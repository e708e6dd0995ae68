package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schemeFixtures writes, per scheme, the base, its variant with one wrong
// scale shape and its bf16 fine-tune (synth.WriteScheme).
func schemeFixtures(t *testing.T, s ckpt.Scheme) (base, bad, ft string) {
	t.Helper()
	dir := t.TempDir()
	base, bad, ft = filepath.Join(dir, "base"), filepath.Join(dir, "bad"), filepath.Join(dir, "ft")
	require.NoError(t, synth.WriteScheme(base, s, synth.SchemeOptions{}))
	require.NoError(t, synth.WriteScheme(bad, s, synth.SchemeOptions{BadScaleShape: true}))
	require.NoError(t, synth.WriteScheme(ft, s, synth.SchemeOptions{FineTune: true}))
	return base, bad, ft
}

// TestInspectSchemes: inspect names the scheme of an MXFP4, NVFP4 and
// compressed-tensors FP8 checkpoint and counts its parameters as the hub
// does: packed FP4 codes two per byte, companions excluded, so the count
// is the number of values, the count of its bf16 fine-tune. Before, the
// scheme was not shown, MXFP4 and NVFP4 weights counted one per byte and
// MXFP4's _scales counted as parameters.
func TestInspectSchemes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme  ckpt.Scheme
		params  int64
		weights int
		line    string
	}{
		{ckpt.MXFP4, 139840, 4, "quantization: mxfp4, MXFP4 (gpt-oss) (config.json quantization_config, 32 elements per scale); 4 quantised weights; not quantised (quantization_config.modules_to_not_convert): model.layers.*.self_attn, model.layers.*.mlp.router, model.embed_tokens, lm_head"},
		{ckpt.NVFP4, 90432, 14, "quantization: nvfp4, NVFP4 (NVIDIA ModelOpt) (hf_quant_config.json quantization, 16 elements per scale); 14 quantised weights; not quantised (quantization.exclude_modules): lm_head"},
		{ckpt.FP8Channel, 90432, 14, "quantization: fp8-channel, FP8 per channel (compressed-tensors) (config.json quantization_config); 14 quantised weights; not quantised (quantization_config.ignore): lm_head"},
		{ckpt.FP8Tensor, 90432, 14, "quantization: fp8-tensor, FP8 per tensor (compressed-tensors) (config.json quantization_config); 14 quantised weights"},
		{ckpt.FP8Block, 90432, 14, "quantization: fp8-block, FP8 per block (compressed-tensors) (config.json quantization_config, 32x32 blocks); 14 quantised weights"},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeFixtures(t, tc.scheme)
			var doc, ftDoc ckpt.InspectResult
			code, out, stderr := runApp(t, "inspect", base, "--format", "json")
			require.Equal(t, 0, code, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			code, out, stderr = runApp(t, "inspect", ft, "--format", "json")
			require.Equal(t, 0, code, stderr)
			require.NoError(t, json.Unmarshal([]byte(out), &ftDoc))

			require.NotNil(t, doc.Quantization, "the scheme is in the JSON")
			assert.Equal(t, tc.scheme, doc.Quantization.Scheme)
			assert.Equal(t, tc.weights, doc.Quantization.Weights)
			assert.Nil(t, ftDoc.Quantization, "the bf16 fine-tune is not quantised")
			assert.Equal(t, tc.params, doc.Summary.Parameters, "parameters of the quantised base")
			assert.Equal(t, ftDoc.Summary.Parameters, doc.Summary.Parameters, "the base counts as many parameters as its bf16 fine-tune")
			for _, x := range doc.Tensors {
				switch {
				case strings.HasSuffix(x.Name, "_scales"), strings.Contains(x.Name, "_scale"):
					assert.Zero(t, x.Parameters, "%s is bookkeeping", x.Name)
				case x.DType == "U8":
					assert.Equal(t, 2*x.NBytes, x.Parameters, "%s: packed FP4 counts two per byte", x.Name)
				}
			}

			code, out, stderr = runApp(t, "inspect", base, "--summary", "--format", "text")
			require.Equal(t, 0, code, stderr)
			assert.Contains(t, out, tc.line)
			code, out, _ = runApp(t, "inspect", ft, "--summary", "--format", "text")
			require.Equal(t, 0, code)
			assert.NotContains(t, out, "quantization:")
		})
	}
}

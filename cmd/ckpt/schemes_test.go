package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/inspect"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// schemeFixtures writes, per scheme, the base, its variant with one wrong
// scale shape and its bf16 fine-tune (synth.WriteScheme).
func schemeFixtures(t *testing.T, s quant.Scheme) (base, bad, ft string) {
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
		scheme  quant.Scheme
		params  int64
		weights int
		line    string
	}{
		{quant.MXFP4, 139840, 4, "quantization: mxfp4, MXFP4 (gpt-oss) (config.json quantization_config, 32 elements per scale); 4 quantised weights; not quantised (quantization_config.modules_to_not_convert): model.layers.*.self_attn, model.layers.*.mlp.router, model.embed_tokens, lm_head"},
		{quant.NVFP4, 90432, 14, "quantization: nvfp4, NVFP4 (NVIDIA ModelOpt) (hf_quant_config.json quantization, 16 elements per scale); 14 quantised weights; not quantised (quantization.exclude_modules): lm_head"},
		{quant.FP8Channel, 90432, 14, "quantization: fp8-channel, FP8 per channel (compressed-tensors) (config.json quantization_config); 14 quantised weights; not quantised (quantization_config.ignore): lm_head"},
		{quant.FP8Tensor, 90432, 14, "quantization: fp8-tensor, FP8 per tensor (compressed-tensors) (config.json quantization_config); 14 quantised weights"},
		{quant.FP8PerBlock, 90432, 14, "quantization: fp8-block, FP8 per block (compressed-tensors) (config.json quantization_config, 32x32 blocks); 14 quantised weights"},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			base, _, ft := schemeFixtures(t, tc.scheme)
			var doc, ftDoc inspect.Result
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

// editSingle rewrites the single model.safetensors of dir through edit.
func editSingle(t *testing.T, dir string, edit func([]ckpt.MemTensor) []ckpt.MemTensor) {
	t.Helper()
	path := filepath.Join(dir, "model.safetensors")
	b, err := ckpt.OpenFileBlob(path)
	require.NoError(t, err)
	h, err := ckpt.ReadHeader(b, b.Size(), path)
	require.NoError(t, err)
	var ts []ckpt.MemTensor
	for _, ti := range h.Tensors {
		data := make([]byte, ti.NBytes())
		_, err := b.ReadAt(data, h.DataStart()+int64(ti.Begin))
		require.NoError(t, err)
		ts = append(ts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: ti.Name, DType: ti.DType, Shape: ti.Shape}, Data: data})
	}
	require.NoError(t, b.Close())
	require.NoError(t, ckpt.WriteFile(path, edit(ts), nil))
}

type schemeVerifyDoc struct {
	OK       bool           `json:"ok"`
	Findings []ckpt.Finding `json:"findings"`
}

func schemeVerify(t *testing.T, args ...string) (int, schemeVerifyDoc, string) {
	t.Helper()
	code, out, stderr := runApp(t, append([]string{"verify"}, append(args, "--format", "json")...)...)
	var doc schemeVerifyDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s%s", out, stderr)
	return code, doc, out
}

// failing returns the failing findings with id.
func failing(doc schemeVerifyDoc, id string) []ckpt.Finding {
	var out []ckpt.Finding
	for _, f := range doc.Findings {
		if string(f.ID) == id && f.Status == ckpt.Fail {
			out = append(out, f)
		}
	}
	return out
}

// TestVerifySchemes: verify checks each scheme's contract. The clean
// MXFP4, NVFP4 and compressed-tensors FP8 checkpoints pass, naming their
// scheme; the variant whose scale has the wrong shape fails (exit 1)
// naming the weight and the scale. Before, the wrong MXFP4 and per-channel
// scales passed and the clean NVFP4 checkpoint failed (its F8_E4M3
// weight_scale tensors taken for block-FP8 weights).
func TestVerifySchemes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scheme quant.Scheme
		named  string // in the scheme.config message
		want   string // in the failing message
	}{
		{quant.MXFP4, "mxfp4: MXFP4 (gpt-oss)", "has shape [2,4,64], expected [2,64,4] = [..., G]"},
		{quant.NVFP4, "nvfp4: NVFP4 (NVIDIA ModelOpt), declared in hf_quant_config.json quantization", "has shape [32,16], expected [64,8] = [N, K/16]"},
		{quant.FP8Channel, "fp8-channel: FP8 per channel (compressed-tensors)", "has shape [1,64], expected [64,1] = [N, 1]"},
		{quant.FP8Tensor, "fp8-tensor: FP8 per tensor (compressed-tensors)", "has shape [2], expected a scalar ([] or [1])"},
		{quant.FP8PerBlock, "fp8-block: FP8 per block (compressed-tensors)", "has shape [4,2], expected [2,4] = [ceil(N/bm), ceil(K/bn)]"},
	} {
		t.Run(string(tc.scheme), func(t *testing.T) {
			t.Parallel()
			base, bad, _ := schemeFixtures(t, tc.scheme)
			code, out, stderr := runApp(t, "verify", base, "--format", "text")
			assert.Equal(t, 0, code, "%s%s", out, stderr)
			assert.Contains(t, out, tc.named)
			code, doc, _ := schemeVerify(t, base, "--read-data")
			assert.Equal(t, 0, code)
			assert.True(t, doc.OK)
			for _, f := range doc.Findings {
				assert.NotEqual(t, ckpt.Fail, f.Status, "%s: %s", f.ID, f.Message)
				assert.False(t, strings.HasPrefix(string(f.ID), "fp8."), "%s: the block-FP8 checks do not apply", f.ID)
			}

			scale, weight := synth.SchemeBadScale(tc.scheme)
			code, doc, raw := schemeVerify(t, bad)
			require.Equal(t, 1, code, raw)
			assert.False(t, doc.OK)
			fs := failing(doc, "scheme.companion_shape")
			require.Len(t, fs, 1, raw)
			assert.Equal(t, []string{scale, weight}, fs[0].Tensors)
			assert.Contains(t, fs[0].Message, weight)
			assert.Contains(t, fs[0].Message, scale)
			assert.Contains(t, fs[0].Message, tc.want)
			code, out, _ = runApp(t, "verify", bad, "--format", "text")
			assert.Equal(t, 1, code)
			assert.Contains(t, out, weight)
		})
	}
}

// TestVerifySchemeContract: the other parts of each scheme's contract.
func TestVerifySchemeContract(t *testing.T) {
	t.Parallel()
	const down = "model.layers.1.mlp.down_proj"
	const experts = "model.layers.1.mlp.experts.down_proj"
	drop := func(name string) func([]ckpt.MemTensor) []ckpt.MemTensor {
		return func(ts []ckpt.MemTensor) []ckpt.MemTensor {
			var out []ckpt.MemTensor
			for _, x := range ts {
				if x.Name != name {
					out = append(out, x)
				}
			}
			return out
		}
	}
	set := func(name string, f func(*ckpt.MemTensor)) func([]ckpt.MemTensor) []ckpt.MemTensor {
		return func(ts []ckpt.MemTensor) []ckpt.MemTensor {
			for i := range ts {
				if ts[i].Name == name {
					f(&ts[i])
				}
			}
			return ts
		}
	}
	for _, tc := range []struct {
		name     string
		scheme   quant.Scheme
		edit     func([]ckpt.MemTensor) []ckpt.MemTensor
		config   func(dir string)
		readData bool
		id       string
		tensors  []string
		message  string
	}{
		{"nvfp4 global scale missing", quant.NVFP4, drop(down + ".weight_scale_2"), nil, false, "scheme.companion_missing", []string{down + ".weight"},
			"has no " + down + ".weight_scale_2 (global_scale F32, a scalar ([] or [1]))"},
		{"nvfp4 global scale not a scalar", quant.NVFP4, set(down+".weight_scale_2", func(x *ckpt.MemTensor) {
			x.Shape, x.Data = []int64{2}, append(x.Data, x.Data...)
		}), nil, false, "scheme.companion_shape", []string{down + ".weight_scale_2", down + ".weight"}, "has shape [2], expected a scalar"},
		{"nvfp4 block scale as bf16", quant.NVFP4, set(down+".weight_scale", func(x *ckpt.MemTensor) {
			x.DType, x.Data = numfmt.BF16, append(x.Data, x.Data...)
		}), nil, false, "scheme.companion_dtype", []string{down + ".weight_scale", down + ".weight"}, "has dtype BF16, expected F8_E4M3"},
		{"nvfp4 zero global scale", quant.NVFP4, set(down+".weight_scale_2", func(x *ckpt.MemTensor) { x.Data = make([]byte, 4) }), nil, true,
			"scheme.scale_values", []string{down + ".weight_scale_2", down + ".weight"}, "1 of 1 values are no finite scale > 0; first at element 0 = 0"},
		{"nvfp4 excluded module quantised", quant.NVFP4, nil, func(d string) {
			editJSON(t, filepath.Join(d, "hf_quant_config.json"), func(m map[string]any) {
				q := m["quantization"].(map[string]any)
				q["exclude_modules"] = append(q["exclude_modules"].([]any), "model.layers.1.mlp*")
			})
		}, false, "scheme.ignored", nil, `quantization.exclude_modules lists "model.layers.1.mlp*"`},
		{"mxfp4 NaN scale", quant.MXFP4, set(experts+"_scales", func(x *ckpt.MemTensor) { x.Data[5], x.Data[9] = 0xFF, 0xFF }), nil, true,
			"scheme.scale_values", []string{experts + "_scales", experts + "_blocks"}, "2 of 512 values are no finite scale > 0; first at element 5 = 0xFF (NaN)"},
		{"mxfp4 scales missing", quant.MXFP4, drop(experts + "_scales"), nil, false, "scheme.companion_missing", []string{experts + "_blocks"}, "has no " + experts + "_scales"},
		{"mxfp4 blocks of 8 bytes", quant.MXFP4, set(experts+"_blocks", func(x *ckpt.MemTensor) { x.Shape = []int64{2, 64, 8, 8} }), nil, false,
			"scheme.weight_shape", []string{experts + "_blocks"}, "is mxfp4 codes of shape [2,64,8,8]: expected [..., G, 16]"},
		{"fp8 channel scale orphan", quant.FP8Channel, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
			return append(ts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "lm_head.weight_scale", DType: numfmt.F32, Shape: []int64{64, 1}}, Data: make([]byte, 256)})
		}, nil, false, "scheme.companion_orphan", []string{"lm_head.weight_scale"}, "lm_head.weight is BF16 [64,64], not a fp8-channel weight"},
		{"fp8 channel ignored module quantised", quant.FP8Channel, nil, func(d string) {
			editJSON(t, filepath.Join(d, "config.json"), func(m map[string]any) {
				q := m["quantization_config"].(map[string]any)
				q["ignore"] = append(q["ignore"].([]any), `re:.*layers\.1\.mlp\.down_proj$`)
			})
		}, false, "scheme.ignored", []string{down + ".weight"}, `quantization_config.ignore lists "re:.*layers\\.1\\.mlp\\.down_proj$"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "x")
			require.NoError(t, synth.WriteScheme(dir, tc.scheme, synth.SchemeOptions{}))
			if tc.edit != nil {
				editSingle(t, dir, tc.edit)
			}
			if tc.config != nil {
				tc.config(dir)
			}
			args := []string{dir}
			if tc.readData {
				args = append(args, "--read-data")
			}
			code, doc, raw := schemeVerify(t, args...)
			require.Equal(t, 1, code, raw)
			fs := failing(doc, tc.id)
			require.NotEmpty(t, fs, raw)
			if tc.tensors != nil {
				assert.Equal(t, tc.tensors, fs[0].Tensors)
			}
			assert.Contains(t, fs[0].Message, tc.message)
		})
	}
}

// TestVerifyUnknownScheme: a quantisation config ckpt cannot check is a
// warning that names it (exit 0 unless --strict), not a silent pass.
func TestVerifyUnknownScheme(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "x")
	require.NoError(t, synth.WriteScheme(dir, quant.FP8Channel, synth.SchemeOptions{}))
	editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
		q := m["quantization_config"].(map[string]any)
		q["config_groups"].(map[string]any)["group_0"].(map[string]any)["weights"].(map[string]any)["strategy"] = "group"
	})
	code, doc, raw := schemeVerify(t, dir)
	require.Equal(t, 0, code, raw)
	found := false
	for _, f := range doc.Findings {
		if f.ID == "scheme.config" {
			found = true
			assert.Equal(t, ckpt.Warn, f.Status)
			assert.Contains(t, f.Message, `quantisation not verified: `)
			assert.Contains(t, f.Message, `config_groups.group_0.weights.strategy "group" is not one ckpt knows`)
		}
	}
	assert.True(t, found, raw)
	code, _, _ = runApp(t, "verify", dir, "--strict")
	assert.Equal(t, 1, code)
}

// writeUnreadScheme writes a one-layer checkpoint in the layout
// compressed-tensors 0.20.1 writes for a format ckpt does not dequantise
// (compressors/nvfp4/base.py@0.20.1: weight_packed U8 [N, K/2],
// weight_scale F8_E4M3 [N, K/16], weight_global_scale F32 [1];
// compressors/pack_quantized/base.py@0.20.1: weight_packed I32 [N, K*bits/32],
// weight_scale [N, K/group], weight_shape I64 [2]), with its config.
func writeUnreadScheme(t *testing.T, dir, format string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	const n, k = 32, 64
	mod := "model.layers.0.mlp.down_proj."
	ts := []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "model.norm.weight", DType: numfmt.BF16, Shape: []int64{k}}, Data: make([]byte, 2*k)}}
	w := map[string]any{"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": true}
	switch format {
	case "nvfp4-pack-quantized":
		ts = append(ts,
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_packed", DType: numfmt.U8, Shape: []int64{n, k / 2}}, Data: make([]byte, n*k/2)},
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_scale", DType: numfmt.F8E4M3, Shape: []int64{n, k / 16}}, Data: make([]byte, n*k/16)},
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_global_scale", DType: numfmt.F32, Shape: []int64{1}}, Data: make([]byte, 4)})
	case "pack-quantized":
		w = map[string]any{"num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": true}
		ts = append(ts,
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_packed", DType: numfmt.I32, Shape: []int64{n, k / 8}}, Data: make([]byte, 4*n*k/8)},
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_scale", DType: numfmt.BF16, Shape: []int64{n, k / 32}}, Data: make([]byte, 2*n*k/32)},
			ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: mod + "weight_shape", DType: numfmt.I64, Shape: []int64{2}}, Data: make([]byte, 16)})
	}
	require.NoError(t, ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil))
	cfg, err := json.Marshal(map[string]any{"model_type": "llama", "quantization_config": map[string]any{
		"quant_method": "compressed-tensors", "format": format, "ignore": []string{"lm_head"},
		"config_groups": map[string]any{"group_0": map[string]any{"targets": []string{"Linear"}, "format": format, "weights": w}}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
}

// TestUnreadCompressedTensorsFormats: a compressed-tensors checkpoint of a
// format ckpt does not dequantise (NVFP4 and int packing, as
// compressed-tensors names them) is never passed silently. inspect lists
// it (before: an internal error, exit 2: the half-read recipe had no
// scheme); verify warns that its quantisation is not verified, with no
// block-FP8 failure for NVFP4's F8_E4M3 weight_scale (before: 1 failure
// per weight, fp8.scale_missing), and --strict fails; extract --dtype bf16
// refuses the packed weight naming the config's format (before: the I32
// weight_packed of pack-quantized was copied as if it were values, exit 0).
func TestUnreadCompressedTensorsFormats(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"nvfp4-pack-quantized", "pack-quantized"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "ct")
			writeUnreadScheme(t, dir, format)

			code, out, stderr := runApp(t, "inspect", dir, "--format", "json")
			require.Equal(t, 0, code, stderr)
			assert.NotContains(t, stderr, "internal error")
			var doc inspect.Result
			require.NoError(t, json.Unmarshal([]byte(out), &doc))
			assert.Nil(t, doc.Quantization, "no scheme is claimed")

			code, vdoc, raw := schemeVerify(t, dir)
			require.Equal(t, 0, code, raw)
			var warned bool
			for _, f := range vdoc.Findings {
				assert.NotEqual(t, ckpt.Fail, f.Status, "%s: %s", f.ID, f.Message)
				if f.ID == "scheme.config" {
					assert.Equal(t, ckpt.Warn, f.Status)
					assert.Contains(t, f.Message, "quantisation not verified: ")
					assert.Contains(t, f.Message, `format "`+format+`"`)
					warned = true
				}
			}
			assert.True(t, warned, raw)
			code, _, _ = runApp(t, "verify", dir, "--strict")
			assert.Equal(t, 1, code)

			outFile := filepath.Join(t.TempDir(), "out.safetensors")
			code, _, stderr = runApp(t, "extract", dir, "--match", "**", "--dtype", "bf16", "-o", outFile, "--progress", "none")
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, `"model.layers.0.mlp.down_proj.weight_packed"`)
			assert.Contains(t, stderr, "its config declares a quantisation ckpt does not read")
			assert.Contains(t, stderr, "refusing to read it")
			assert.NoFileExists(t, outFile)
		})
	}
}

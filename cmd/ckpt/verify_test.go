package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func verifyJSON(t testing.TB, args ...string) (int, verify.Result, string) {
	t.Helper()
	code, out, errs := runApp(t, append(args, "--format", "json", "--progress", "none")...)
	var res verify.Result
	if code != 2 {
		require.NoError(t, json.Unmarshal([]byte(out), &res), "stdout: %s\nstderr: %s", out, errs)
	}
	return code, res, errs
}

const (
	lm       = "model.language_model."
	upProj   = lm + "layers.0.mlp.up_proj.weight"
	downProj = lm + "layers.1.mlp.down_proj.weight"
)

func bf16Bits(f float32) []byte {
	b := make([]byte, 2)
	binary.LittleEndian.PutUint16(b, numfmt.F32ToBF16(f))
	return b
}

func TestVerifyDefects(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	removeFromIndex := func(dir, name string) {
		editIndex(t, dir, func(wm, _ map[string]any) { delete(wm, name) })
	}
	addTensor := func(dir, near string, mt ckpt.MemTensor, index bool) {
		shard := shardOf(t, dir, near)
		rewriteShard(t, dir, near, func(ts []ckpt.MemTensor) []ckpt.MemTensor { return append(ts, mt) })
		if index {
			editIndex(t, dir, func(wm, _ map[string]any) { wm[mt.Name] = shard })
		}
		// keep total_size right so that only the intended check fails
		editIndex(t, dir, func(_, meta map[string]any) {
			meta["total_size"] = meta["total_size"].(float64) + float64(len(mt.Data))
		})
	}
	dropTensor := func(dir, name string, index bool) {
		var n int
		rewriteShard(t, dir, name, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
			var out []ckpt.MemTensor
			for _, mt := range ts {
				if mt.Name == name {
					n = len(mt.Data)
					continue
				}
				out = append(out, mt)
			}
			return out
		})
		if index {
			removeFromIndex(dir, name)
		}
		editIndex(t, dir, func(_, meta map[string]any) { meta["total_size"] = meta["total_size"].(float64) - float64(n) })
	}
	cfgPath := func(dir string) string { return filepath.Join(dir, "config.json") }
	text := func(m map[string]any) map[string]any { return m["text_config"].(map[string]any) }
	quant := func(m map[string]any) map[string]any { return m["quantization_config"].(map[string]any) }

	cases := []struct {
		name     string
		readData bool
		mutate   func(dir string)
		code     int
		id       string
		culprit  string // must appear in the message or the tensors of a failing check with id
	}{
		// item 2: integrity
		{"tensor missing from its shard", false, func(d string) { dropTensor(d, lm+"layers.2.input_layernorm.weight", false) }, 1, "index.tensor_missing", lm + "layers.2.input_layernorm.weight"},
		{"tensor unlisted", false, func(d string) {
			addTensor(d, upProj, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: "extra.bias", DType: numfmt.BF16, Shape: []int64{4}}, Data: make([]byte, 8)}, false)
		}, 1, "index.tensor_unlisted", "extra.bias"},
		{"tensor in two shards", false, func(d string) {
			addTensor(d, upProj, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: lm + "norm.weight", DType: numfmt.BF16, Shape: []int64{128}}, Data: make([]byte, 256)}, false)
		}, 1, "index.tensor_duplicate", lm + "norm.weight"},
		{"shard missing", false, func(d string) { require.NoError(t, os.Remove(filepath.Join(d, shardOf(t, d, downProj)))) }, 1, "index.shard_missing", "model-00001-of-00004.safetensors"},
		{"shard name escapes", false, func(d string) {
			editIndex(t, d, func(wm, _ map[string]any) { wm[lm+"norm.weight"] = "../outside.safetensors" })
		}, 1, "index.shard_name", "../outside.safetensors"},
		{"total_size wrong", false, func(d string) {
			editIndex(t, d, func(_, meta map[string]any) { meta["total_size"] = 12345 })
		}, 1, "index.total_size", "12345"},
		{"truncated shard", false, func(d string) {
			p := filepath.Join(d, shardOf(t, d, downProj))
			st, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(p, st.Size()-1000))
		}, 1, "file.size", "model-00001-of-00004.safetensors"},
		{"trailing bytes", false, func(d string) {
			f, err := os.OpenFile(filepath.Join(d, shardOf(t, d, downProj)), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			f.Write(make([]byte, 100))
			f.Close()
		}, 1, "file.size", "100 trailing bytes"},
		// item 3: FP8
		{"scale missing", false, func(d string) { dropTensor(d, ckpt.ScaleName(downProj), true) }, 1, "fp8.scale_missing", downProj},
		{"scale shape", false, func(d string) {
			editTensor(t, d, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) {
				mt.Shape = []int64{mt.Shape[0] * 2, mt.Shape[1] / 2}
			})
		}, 1, "fp8.scale_shape", ckpt.ScaleName(downProj)},
		{"scale dtype", false, func(d string) {
			editTensor(t, d, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) { mt.DType = numfmt.I16 })
		}, 1, "fp8.scale_dtype", ckpt.ScaleName(downProj)},
		{"orphan scale", false, func(d string) {
			addTensor(d, upProj, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: lm + "layers.0.mlp.gone.weight_scale_inv", DType: numfmt.BF16, Shape: []int64{1, 1}}, Data: bf16Bits(1)}, true)
		}, 1, "fp8.scale_orphan", lm + "layers.0.mlp.gone.weight_scale_inv"},
		{"scale next to a bf16 weight", false, func(d string) {
			editTensor(t, d, upProj, func(mt *ckpt.MemTensor) {
				mt.DType, mt.Data = numfmt.BF16, make([]byte, 2*len(mt.Data))
			})
			editIndex(t, d, func(_, meta map[string]any) { meta["total_size"] = meta["total_size"].(float64) + 320*128 })
		}, 1, "fp8.scale_orphan", ckpt.ScaleName(upProj)},
		{"fp8 tensor not 2-D", false, func(d string) {
			editTensor(t, d, upProj, func(mt *ckpt.MemTensor) { mt.Shape = []int64{320, 64, 2} })
		}, 1, "fp8.rank", upProj},
		{"fp8 module in modules_to_not_convert", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) {
				q := quant(m)
				q["modules_to_not_convert"] = append(q["modules_to_not_convert"].([]any), "layers.1.mlp.down_proj")
			})
		}, 1, "fp8.not_convert", downProj},
		{"no quantization_config", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { delete(m, "quantization_config") })
		}, 1, "fp8.config", "no quantization_config"},
		{"no weight_block_size", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { delete(quant(m), "weight_block_size") })
		}, 1, "fp8.config", "weight_block_size"},
		{"fmt e5m2", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { quant(m)["fmt"] = "e5m2" })
		}, 1, "fp8.config", "e5m2"},
		{"compressed-tensors naming", false, func(d string) {
			s := ckpt.ScaleName(downProj)
			editTensor(t, d, s, func(mt *ckpt.MemTensor) { mt.Name = downProj + "_scale" })
			editIndex(t, d, func(wm, _ map[string]any) { wm[downProj+"_scale"] = wm[s]; delete(wm, s) })
		}, 1, "fp8.compressed_tensors", downProj + "_scale"},
		// item 5: architecture
		{"expected tensor missing", false, func(d string) { dropTensor(d, lm+"layers.1.linear_attn.dt_bias", true) }, 1, "arch.missing", lm + "layers.1.linear_attn.dt_bias"},
		{"unexpected tensor", false, func(d string) {
			addTensor(d, upProj, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: lm + "layers.0.mlp.bias", DType: numfmt.BF16, Shape: []int64{4}}, Data: make([]byte, 8)}, true)
		}, 1, "arch.unexpected", lm + "layers.0.mlp.bias"},
		{"config disagrees with shapes", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { text(m)["intermediate_size"] = 336 })
		}, 1, "arch.shape", "text_config.intermediate_size = 336 implies [336,128], found [320,128]"},
		{"config key named", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { text(m)["intermediate_size"] = 336 })
		}, 1, "arch.config", "text_config.intermediate_size = 336"},
		{"tensor reshaped", false, func(d string) {
			editTensor(t, d, lm+"layers.0.linear_attn.conv1d.weight", func(mt *ckpt.MemTensor) { mt.Shape = []int64{mt.Shape[0], 4, 1} })
		}, 1, "arch.shape", "text_config.linear_conv_kernel_dim = 4"},
		// A float tensor of another float dtype is a warning
		// (TestDeclaredDType); an integer where a float belongs fails.
		{"wrong dtype", false, func(d string) {
			editTensor(t, d, lm+"layers.0.linear_attn.A_log", func(mt *ckpt.MemTensor) { mt.DType = numfmt.I16 })
		}, 1, "arch.dtype", lm + "layers.0.linear_attn.A_log"},
		{"layer kind disagrees", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) { text(m)["layer_types"].([]any)[0] = "full_attention" })
		}, 1, "arch.config", "text_config.layer_types[0]"},
		{"layer count disagrees", false, func(d string) {
			editJSON(t, cfgPath(d), func(m map[string]any) {
				text(m)["num_hidden_layers"] = 3
				text(m)["layer_types"] = text(m)["layer_types"].([]any)[:3]
			})
		}, 1, "arch.config", "text_config.num_hidden_layers = 3"},
		// item 4: data
		{"NaN scale", true, func(d string) {
			editTensor(t, d, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) { copy(mt.Data[2:], bf16Bits(float32(math.NaN()))) })
		}, 1, "data.scale_values", ckpt.ScaleName(downProj)},
		{"zero scale", true, func(d string) {
			editTensor(t, d, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) { copy(mt.Data, bf16Bits(0)) })
		}, 1, "data.scale_values", "zero 1"},
		{"negative scale", true, func(d string) {
			editTensor(t, d, ckpt.ScaleName(downProj), func(mt *ckpt.MemTensor) { copy(mt.Data, bf16Bits(-0.5)) })
		}, 1, "data.scale_values", "negative 1"},
		{"FP8 NaN codes", true, func(d string) {
			editTensor(t, d, downProj, func(mt *ckpt.MemTensor) { mt.Data[5], mt.Data[1000] = 0x7f, 0xff })
		}, 1, "data.fp8_nan", "2 of 40960 F8_E4M3 codes are NaN"},
		{"Inf in bf16", true, func(d string) {
			editTensor(t, d, lm+"layers.2.post_attention_layernorm.weight", func(mt *ckpt.MemTensor) { copy(mt.Data[6:], bf16Bits(float32(math.Inf(1)))) })
		}, 1, "data.float_nonfinite", lm + "layers.2.post_attention_layernorm.weight (BF16): 0 NaN and 1 Inf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copyDir(t, base)
			tc.mutate(dir)
			args := []string{"verify", dir}
			if tc.readData {
				args = append(args, "--read-data")
			}
			code, res, errs := verifyJSON(t, args...)
			require.Equal(t, tc.code, code, "stderr: %s", errs)
			assert.False(t, res.OK)
			found := false
			var fails []string
			for _, c := range res.Checks {
				if c.Status != "fail" {
					continue
				}
				fails = append(fails, string(c.ID)+": "+c.Message)
				if string(c.ID) == tc.id && (strings.Contains(c.Message, tc.culprit) || contains(c.Tensors, tc.culprit)) {
					found = true
				}
			}
			assert.True(t, found, "no failing %s naming %q; failures:\n%s", tc.id, tc.culprit, strings.Join(fails, "\n"))
		})
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestVerifyCleanPasses(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	for _, src := range []string{base, ft} {
		for _, rd := range []bool{false, true} {
			args := []string{"verify", src}
			if rd {
				args = append(args, "--read-data")
			}
			code, res, errs := verifyJSON(t, args...)
			require.Equal(t, 0, code, "%s read-data=%v: %s", src, rd, errs)
			require.True(t, res.OK)
			for _, c := range res.Checks {
				assert.NotEqual(t, "fail", string(c.Status), "%s: %s", c.ID, c.Message)
			}
		}
	}
}

func TestVerifyF32Alternatives(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	dir := copyDir(t, base)
	name := lm + "layers.0.linear_attn.A_log"
	editTensor(t, dir, name, func(mt *ckpt.MemTensor) {
		vals := make([]float32, len(mt.Data)/2)
		require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, mt.Data, vals))
		mt.DType, mt.Data = numfmt.F32, make([]byte, 4*len(vals))
		require.NoError(t, numfmt.EncodeFloat32(numfmt.F32, vals, mt.Data))
	})
	editIndex(t, dir, func(_, meta map[string]any) { meta["total_size"] = meta["total_size"].(float64) + 8 })
	code, res, errs := verifyJSON(t, "verify", dir)
	require.Equal(t, 0, code, errs)
	require.True(t, res.OK)
	// F32 is the releases' dtype of A_log under a bfloat16 config: no
	// declared-dtype warning, in verify or map.
	for _, c := range findingsOf(res, "arch.dtype") {
		assert.Equal(t, ckpt.Pass, c.Status, c.Message)
	}
	code, m, errs := mapJSON(t, dir)
	require.Equal(t, 0, code, errs)
	assert.Empty(t, dtypeWarnings(m.Warnings))
}

func TestVerifyUnreadable(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	dir := copyDir(t, base)
	shard := shardOf(t, dir, downProj)
	p := filepath.Join(dir, shard)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	copy(data[8:], "[not json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	code, _, errs := verifyJSON(t, "verify", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, shard)

	code, _, errs = verifyJSON(t, "verify", filepath.Join(t.TempDir(), "nothing"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "nothing")

	code, _, _ = runApp(t, "verify", base, "--arch", "llama")
	assert.Equal(t, 2, code)
}

func TestVerifyArchNone(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	dir := copyDir(t, base)
	editJSON(t, filepath.Join(dir, "config.json"), func(m map[string]any) {
		m["text_config"].(map[string]any)["intermediate_size"] = 336
	})
	code, _, _ := verifyJSON(t, "verify", dir)
	assert.Equal(t, 1, code)
	code, res, _ := verifyJSON(t, "verify", dir, "--arch", "none")
	assert.Equal(t, 0, code)
	for _, c := range res.Checks {
		if strings.HasPrefix(string(c.ID), "arch.") {
			assert.Equal(t, "skip", string(c.Status))
		}
	}
}

func TestVerifyAgainst(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	dir := t.TempDir()
	contract := filepath.Join(dir, "base.contract.json")
	code, _, errs := runApp(t, "contract", base, "-o", contract, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, errs)

	// the base against its own contract: no difference
	code, res, errs := verifyJSON(t, "verify", base, "--against", contract, "--read-data")
	require.Equal(t, 0, code, errs)
	require.True(t, res.OK)

	code, res, errs = verifyJSON(t, "verify", ft, "--against", contract)
	require.Equal(t, 1, code, errs)
	byID := map[string][]string{}
	for _, c := range res.Checks {
		if c.Status == "fail" {
			byID[string(c.ID)] = append(byID[string(c.ID)], c.Message)
		}
	}
	// exactly: 7 mtp scales removed, 7 mtp weights F8_E4M3 → BF16, 7 not_convert entries
	require.Len(t, byID["contract.key_removed"], 1)
	assert.Contains(t, byID["contract.key_removed"][0], "7 keys of the contract missing: mtp.layers.0.mlp.down_proj.weight_scale_inv")
	require.Len(t, byID["contract.dtype"], 1)
	assert.Contains(t, byID["contract.dtype"][0], "7 tensors changed dtype F8_E4M3 → BF16: mtp.")
	assert.Len(t, byID["contract.fp8_not_convert"], 1)
	assert.NotContains(t, byID, "contract.key_added")
	assert.NotContains(t, byID, "contract.shape")
	assert.NotContains(t, byID, "contract.config")
	assert.NotContains(t, byID, "contract.fp8_scheme")
	require.NotNil(t, res.Against)
	groups := map[string]string{}
	for _, g := range res.Against.Groups {
		groups[g.Group] = g.Summary()
	}
	// The contract has hashes, this run has none (#36 D4): only names,
	// dtypes and shapes were compared, and the summaries say so.
	assert.False(t, res.Against.HashesCompared)
	assert.Equal(t, "mtp: 22 keys in the contract, 15 now: 8 same dtype and shape, 7 removed (7 weight_scale_inv), dtype changed: 7 F8_E4M3 → BF16 (content not compared: run verify with --read-data)", groups["mtp"])
	assert.Equal(t, "text_layers: 78 keys in the contract, 78 now: same names, dtypes and shapes (content not compared: run verify with --read-data)", groups["text_layers"])
	assert.Equal(t, "visual: 21 keys in the contract, 21 now: same names, dtypes and shapes (content not compared: run verify with --read-data)", groups["visual"])
	for _, g := range res.Against.Groups {
		assert.False(t, g.ContentCompared, g.Group)
		assert.Equal(t, "run verify with --read-data", g.ContentNotCompared, g.Group)
	}
	code, text, _ := runApp(t, "verify", ft, "--against", contract)
	require.Equal(t, 1, code)
	assert.NotContains(t, text, "now: identical")
	assert.Contains(t, text, "  text_layers: 78 keys in the contract, 78 now: same names, dtypes and shapes (content not compared: run verify with --read-data)\n")

	// with hashes: the three fine-tuned tensors (and the changed FP8 weight's scale) differ
	code, res, _ = verifyJSON(t, "verify", ft, "--against", contract, "--read-data")
	require.Equal(t, 1, code)
	var hash []string
	for _, c := range res.Checks {
		if c.ID == "contract.hash" && c.Status == "fail" {
			hash = c.Tensors
		}
	}
	assert.ElementsMatch(t, []string{lm + "layers.0.linear_attn.in_proj_a.weight", downProj, ckpt.ScaleName(downProj), lm + "layers.2.post_attention_layernorm.weight"}, hash)
	for _, g := range res.Against.Groups {
		assert.True(t, g.ContentCompared, g.Group)
		if g.Group == "text_layers" {
			assert.Equal(t, "text_layers: 78 keys in the contract, 78 now: 74 identical, 4 content changed", g.Summary())
		}
		if g.Group == "visual" {
			assert.Equal(t, "visual: 21 keys in the contract, 21 now: identical", g.Summary())
		}
	}
	// A contract without hashes says so too.
	plain := filepath.Join(dir, "plain.contract.json")
	code, _, errs = runApp(t, "contract", base, "-o", plain)
	require.Equal(t, 0, code, errs)
	code, text, _ = runApp(t, "verify", base, "--against", plain, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, text)
	assert.Contains(t, text, "  visual: 21 keys in the contract, 21 now: same names, dtypes and shapes (content not compared: the contract has no hashes; write it with contract --read-data)\n")

	// --match restricts the comparison: outside mtp the fine-tune keeps the contract
	code, res, errs = verifyJSON(t, "verify", ft, "--against", contract, "--exclude", "mtp.**")
	require.Equal(t, 0, code, errs)
	require.True(t, res.OK)
	code, _, _ = verifyJSON(t, "verify", ft, "--against", contract, "--match", "mtp.**")
	require.Equal(t, 1, code)
}

// normalize replaces temporary paths in output with stable placeholders.
func normalize(s string, repl map[string]string) string {
	for from, to := range repl {
		s = strings.ReplaceAll(s, from, to)
	}
	return regexp.MustCompile(`[ \t]+\n`).ReplaceAllString(s, "\n")
}

func TestVerifyGolden(t *testing.T) {
	base, ft := fixturePair(t)
	dir := t.TempDir()
	contract := filepath.Join(dir, "base.contract.json")
	code, _, errs := runApp(t, "contract", base, "-o", contract)
	require.Equal(t, 0, code, errs)
	repl := map[string]string{contract: "BASE.contract.json", base: "BASE", ft: "FT"}
	for _, g := range []struct {
		file string
		args []string
		code int
	}{
		{"verify_base.txt.golden", []string{"verify", base, "--format", "text"}, 0},
		{"verify_base.json.golden", []string{"verify", base, "--format", "json"}, 0},
		{"verify_ft_read_data.txt.golden", []string{"verify", ft, "--format", "text", "--read-data", "--progress", "none"}, 0},
		{"verify_ft_against.txt.golden", []string{"verify", ft, "--against", contract, "--format", "text"}, 1},
		{"verify_ft_against.json.golden", []string{"verify", ft, "--against", contract, "--format", "json"}, 1},
		{"contract_base.json.golden", []string{"contract", base}, 0},
	} {
		code, out, errs := runApp(t, g.args...)
		require.Equal(t, g.code, code, "%s: %s", g.file, errs)
		golden(t, g.file, normalize(out, repl))
	}
}

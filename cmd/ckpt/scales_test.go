package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scaleCases are the ways a quantised weight (the block-FP8 down_proj of
// layer 1 in the small base) loses the scale ckpt can apply: the scale is
// gone, hidden from the index, or replaced by a companion of a scheme ckpt
// does not read. want are the strings every refusal must name.
func scaleCases(t *testing.T) []struct {
	name   string
	mutate func(dir string)
	want   []string
} {
	scale := ckpt.ScaleName(downProj)
	module := strings.TrimSuffix(downProj, ".weight")
	// replace swaps the weight_scale_inv for a tensor of another name,
	// dtype and shape (all values 1), in the same shard and the index.
	replace := func(dir, name string, shape []int64) {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		data := make([]byte, 4*n)
		for i := int64(0); i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(1))
		}
		shard := shardOf(t, dir, scale)
		var old int
		rewriteShard(t, dir, scale, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
			for i := range ts {
				if ts[i].Name == scale {
					old = len(ts[i].Data)
					ts[i] = ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: name, DType: numfmt.F32, Shape: shape}, Data: data}
				}
			}
			return ts
		})
		editIndex(t, dir, func(wm, meta map[string]any) {
			delete(wm, scale)
			wm[name] = shard
			meta["total_size"] = meta["total_size"].(float64) - float64(old) + float64(len(data))
		})
	}
	return []struct {
		name   string
		mutate func(dir string)
		want   []string
	}{
		{"scale removed from shard and index", func(d string) {
			var n int
			rewriteShard(t, d, scale, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
				var out []ckpt.MemTensor
				for _, mt := range ts {
					if mt.Name == scale {
						n = len(mt.Data)
						continue
					}
					out = append(out, mt)
				}
				return out
			})
			editIndex(t, d, func(wm, meta map[string]any) {
				delete(wm, scale)
				meta["total_size"] = meta["total_size"].(float64) - float64(n)
			})
		}, []string{downProj, "has no scale", scale}},
		{"scale in its shard, not in weight_map", func(d string) {
			editIndex(t, d, func(wm, _ map[string]any) { delete(wm, scale) })
		}, []string{downProj, "has no scale", "not listed in the index's weight_map"}},
		{"per-channel weight_scale", func(d string) { replace(d, downProj+"_scale", []int64{128, 1}) },
			[]string{downProj, downProj + "_scale", "[128 1]"}},
		{"compressed-tensors per-channel weight_scale", func(d string) {
			replace(d, downProj+"_scale", []int64{128, 1})
			editJSON(t, filepath.Join(d, "config.json"), func(m map[string]any) {
				m["quantization_config"] = map[string]any{"quant_method": "compressed-tensors", "format": "float-quantized",
					"config_groups": map[string]any{"group_0": map[string]any{"targets": []any{"Linear"},
						"weights": map[string]any{"num_bits": 8, "type": "float", "strategy": "channel"}}}}
			})
		}, []string{downProj, downProj + "_scale", "[128 1]"}},
		{"weight_scale_2", func(d string) { replace(d, downProj+"_scale_2", []int64{1}) },
			[]string{downProj, downProj + "_scale_2"}},
		{"input_scale only", func(d string) { replace(d, module+".input_scale", []int64{1}) },
			[]string{downProj, module + ".input_scale"}},
	}
}

// TestQuantisedWeightNeedsItsScale: a block-FP8 weight whose scale is
// missing, or whose companion is of a scheme ckpt does not read, is
// refused by every command that would read its values (extract --dtype,
// diff in values mode, cache build) and is a plan problem for map and
// cache verify --source; exit 1 everywhere, naming the weight and what it
// found. Before, all of them succeeded from the codes alone.
func TestQuantisedWeightNeedsItsScale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(base, synth.Small()))
	built := filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "--out", built, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	layer1MLP := lm + "layers.1.mlp.down_proj.**"

	for _, tc := range scaleCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			src := copyDir(t, base)
			tc.mutate(src)
			contains := func(s, what string) {
				t.Helper()
				for _, w := range tc.want {
					assert.Contains(t, s, w, what)
				}
			}

			// A weight_scale [N, 1] under a compressed-tensors FP8
			// per-channel config is a scheme extract and diff read (issue
			// #28); map and cache still lay out block FP8 only.
			reads := tc.name == "compressed-tensors per-channel weight_scale"

			// extract --dtype bf16: refused, nothing written, no JSON.
			t.Run("extract", func(t *testing.T) {
				if reads {
					out := filepath.Join(t.TempDir(), "x.safetensors")
					code, stdout, stderr := runApp(t, "extract", src, "--match", layer1MLP, "--dtype", "bf16", "--out", out, "--format", "json", "--progress", "none")
					require.Equal(t, 0, code, "%s%s", stdout, stderr)
					var rep extract.Result
					require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
					assert.Equal(t, 1, rep.Summary.Dequantized, "the weight dequantised, its weight_scale not written")
					assert.Equal(t, 1, rep.Summary.Tensors)
					return
				}
				for _, format := range []string{"text", "json"} {
					out := filepath.Join(t.TempDir(), "x.safetensors")
					code, stdout, stderr := runApp(t, "extract", src, "--match", layer1MLP, "--dtype", "bf16", "--out", out, "--format", format, "--progress", "none")
					require.Equal(t, 1, code, "extract %s: %s%s", format, stdout, stderr)
					contains(stderr, "extract")
					assert.Empty(t, stdout, "extract --format %s", format)
					_, err := os.Stat(out)
					assert.ErrorIs(t, err, os.ErrNotExist)
				}
			})

			// diff (values mode, the default): refused; header mode still runs.
			t.Run("diff", func(t *testing.T) {
				if reads {
					code, stdout, stderr := runApp(t, "diff", base, src, "--match", layer1MLP, "--format", "json", "--progress", "none")
					require.Equal(t, 1, code, "%s%s", stdout, stderr)
					var doc struct {
						Tensors []struct {
							Name         string
							Relation     string
							ChangedElems *int64 `json:"changed_elems"`
						}
					}
					require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
					var found bool
					for _, r := range doc.Tensors {
						if r.Name == downProj {
							found = true
							assert.Equal(t, "changed", r.Relation)
							assert.NotNil(t, r.ChangedElems, "compared by values")
						}
					}
					assert.True(t, found, stdout)
					return
				}
				for _, format := range []string{"text", "json"} {
					code, stdout, stderr := runApp(t, "diff", base, src, "--match", layer1MLP, "--format", format, "--progress", "none")
					require.Equal(t, 1, code, "diff %s: %s%s", format, stdout, stderr)
					contains(stderr, "diff")
					assert.Empty(t, stdout, "diff --format %s", format)
				}
				code, stdout, stderr := runApp(t, "diff", base, src, "--match", layer1MLP, "--mode", "header", "--format", "json")
				require.Equal(t, 1, code, stderr)
				assert.True(t, json.Valid([]byte(stdout)))
			})

			// map: a problem "scale" naming the weight, not "complete".
			t.Run("map", func(t *testing.T) {
				code, stdout, _ := runApp(t, "map", src, "--mesh", "1x2")
				require.Equal(t, 1, code, stdout)
				assert.Contains(t, stdout, "problem (scale): ")
				contains(stdout, "map")
				assert.NotContains(t, stdout, ": complete")
				code, stdout, _ = runApp(t, "map", src, "--mesh", "1x2", "--format", "json")
				require.Equal(t, 1, code)
				var res mapping.Document
				require.NoError(t, json.Unmarshal([]byte(stdout), &res))
				var found bool
				for _, p := range res.Problems {
					if p.ID == mapping.ProblemScale && slices.Contains(p.Tensors, downProj) {
						found = true
						assert.Equal(t, ckpt.Fail, p.Status)
						contains(p.Message, "map json")
					}
				}
				assert.True(t, found, "map JSON problems: %+v", res.Problems)
				assert.Positive(t, res.Summary.Problems)
				for _, e := range res.Entries {
					assert.NotContains(t, e.Sources, downProj, "the weight is in no entry")
				}
			})

			// cache build: the plan's problem, nothing written.
			t.Run("cache build", func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "cache")
				code, stdout, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none")
				require.Equal(t, 1, code, stdout+stderr)
				assert.Contains(t, stdout, "problem (scale): ")
				contains(stdout, "cache build")
				_, err := os.Stat(out)
				assert.ErrorIs(t, err, os.ErrNotExist)
			})

			// cache verify --source: the cache of the intact base is stale
			// for this source.
			t.Run("cache verify", func(t *testing.T) {
				code, stdout, _ := runApp(t, "cache", "verify", built, "--source", src, "--progress", "none")
				require.Equal(t, 1, code, stdout)
				assert.NotContains(t, stdout, "ok: ")
				contains(stdout, "cache verify")
				code, stdout, _ = runApp(t, "cache", "verify", built, "--source", src, "--progress", "none", "--format", "json")
				require.Equal(t, 1, code, stdout)
				var all check.Result // the text folder and its vision folder
				require.NoError(t, json.Unmarshal([]byte(stdout), &all))
				assert.False(t, all.OK)
				var findings []ckpt.Finding
				for _, r := range all.Folders {
					findings = append(findings, r.Findings...)
				}
				cr := struct{ Findings []ckpt.Finding }{findings}
				found := false
				for _, f := range cr.Findings {
					if f.ID == check.FindingStale && strings.Contains(f.Message, "problem (scale)") && slices.Contains(f.Tensors, downProj) {
						found = true
						contains(f.Message, "cache verify json")
					}
				}
				assert.True(t, found, "cache verify findings: %+v", cr.Findings)
			})
		})
	}
}

// TestExtractKeepQuantisedWithoutScale: under --dtype keep a quantised
// weight is copied as stored, with a warning when its scale is missing from
// the source or its companion is left out; --with-scales brings a
// companion of another scheme along too.
func TestExtractKeepQuantisedWithoutScale(t *testing.T) {
	t.Parallel()
	_, base := extractBase(t)
	cases := scaleCases(t)
	for _, tc := range []struct {
		name    string
		mutate  func(string)
		args    []string
		warning string
		tensors []string
	}{
		{"scale removed", cases[0].mutate, nil, "warning: tensor \"" + downProj + "\" is F8_E4M3 without a scale (no \"" + ckpt.ScaleName(downProj) + "\" in the source)", []string{downProj}},
		{"per-channel scale not selected", cases[2].mutate, nil, "warning: tensor \"" + downProj + "\" is F8_E4M3 with scale companion \"" + downProj + "_scale\", which is not extracted", []string{downProj}},
		{"per-channel scale with --with-scales", cases[2].mutate, []string{"--with-scales"}, "", []string{downProj, downProj + "_scale"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := copyDir(t, base)
			tc.mutate(src)
			out := filepath.Join(t.TempDir(), "x.safetensors")
			args := append([]string{"extract", src, "--match", downProj, "--out", out, "--format", "json", "--progress", "none"}, tc.args...)
			code, stdout, stderr := runApp(t, args...)
			require.Equal(t, 0, code, stderr)
			if tc.warning == "" {
				assert.NotContains(t, stderr, "warning")
			} else {
				assert.Contains(t, stderr, tc.warning)
			}
			var res extract.Result
			require.NoError(t, json.Unmarshal([]byte(stdout), &res))
			var names []string
			for _, x := range res.Tensors {
				names = append(names, x.Name)
				assert.Equal(t, "copy", x.Action)
			}
			assert.Equal(t, tc.tensors, names)
		})
	}
}

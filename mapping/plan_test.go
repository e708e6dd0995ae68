package mapping_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Expected targets of the 27B (48 GDN + 16 full-attention layers + MTP) on
// a 1xN mesh with the built-in profile, the same for FP8 and bf16 and for
// N = 2 and 4:
//
//	GDN layer:        qkvzab, out, dt_bias, A_log, norm_w, tap0..3   9 × 48 = 432
//	attention layer:  wqkv_fused_qkvg, wo                            2 × 16 =  32
//	MLP, every layer: gate, up, down, gate_up.swiglu                 4 × 64 = 256
//	norms, every layer: input/post_attention (+ _distributed)        4 × 64 = 256
//	tok_embeddings, norm.weight (+ _distributed), output.weight.vshard     4
//	MTP head under mtp/: fc, 3 norms (+ _distributed), and the decoder
//	layer as layer 3: wqkv, wo, 4 MLP files, 2 norms (+ _distributed)     17
//	                                                                     ---
//	                                                                     997
//
// Ignored: the 333 vision tensors and the 17 × 2 q_norm / k_norm of the
// full-attention layers and the MTP layer (not cached) = 367.
const (
	targets27B = 997
	// targets27BMain: the MTP line less its mtp/ targets, plus 48 out.colpar
	// and the fused GDN decode's dt_bias_fp32 and neg_exp_A_fp32 of the 48
	// GDN layers.
	targets27BMain = 997 - 17 + 48 + 96
	ignored27B     = 367
)

func open(t *testing.T, dir string) *ckpt.Checkpoint {
	t.Helper()
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func builtin(t *testing.T) *mapping.Profile {
	t.Helper()
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	return p
}

// openSmall writes and opens the small fixture (synth.Small).
func openSmall(t *testing.T) *ckpt.Checkpoint {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	return open(t, dir)
}

func entryByTarget(pl *mapping.Plan, target string) *mapping.Entry {
	for _, e := range pl.Entries {
		if e.Target == target {
			return e
		}
	}
	return nil
}

func TestBuild27BMapsCompletely(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"fp8", "bf16"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			dir, n := writeInventory(t, variant, nil)
			c := open(t, dir)
			require.Len(t, c.Tensors, n)
			for _, mesh := range []mapping.Mesh{{Rows: 1, Cols: 2}, {Rows: 1, Cols: 4}} {
				pl, err := mapping.BuildWith(c, builtin(t), mesh, nil, nil)
				require.NoError(t, err, "mesh %s", mesh)
				assert.Equal(t, targets27B, len(pl.Entries), "mesh %s", mesh)
				assert.Equal(t, ignored27B, len(pl.Ignored))
				assert.Empty(t, pl.Unmapped)
				assert.Empty(t, pl.Problems)

				// 100% coverage: every tensor is a source, a consumed scale or ignored.
				covered := map[string]bool{}
				for _, e := range pl.Entries {
					for _, s := range e.Sources {
						covered[s.Name] = true
						if s.Scale != nil {
							covered[s.Scale.Name] = true
						}
					}
				}
				for _, ig := range pl.Ignored {
					assert.False(t, covered[ig.Name], "%s both mapped and ignored", ig.Name)
					assert.True(t, hasPrefix(ig.Name, "model.visual.") || strings.HasSuffix(ig.Name, "_norm.weight"), ig.Name)
					covered[ig.Name] = true
				}
				mtp := 0
				for _, tn := range c.Tensors {
					assert.True(t, covered[tn.Name], "%s is not covered", tn.Name)
					if strings.HasPrefix(tn.Name, "mtp.") {
						mtp++
						assert.NotContains(t, pl.Ignored, mapping.Ignored{Name: tn.Name}, "mtp tensors are mapped")
					}
				}
				if variant == "fp8" {
					assert.Equal(t, 22, mtp) // 15 tensors + 7 scales
				} else {
					assert.Equal(t, 15, mtp)
				}

				// Per-device shapes of the fused and sharded targets.
				N := int64(mesh.Cols)
				shapes := map[string][2][]int64{
					"layers.0/tp/qkvzab.il":                       {{5120, 16384 + 96}, {5120, (16384 + 96) / N}},
					"layers.3/tp/wqkv_fused_qkvg.il":              {{5120, 14336}, {5120, 14336 / N}},
					"layers.0/tp/out":                             {{6144, 5120}, {6144 / N, 5120}},
					"layers.3/tp/wo":                              {{6144, 5120}, {6144 / N, 5120}},
					"layers.5/mlp.down_proj.weight.tp":            {{17408, 5120}, {17408 / N, 5120}},
					"layers.5/mlp.gate_up.weight.swiglu.tp":       {{5120, 34816}, {5120, 34816 / N}},
					"layers.0/tp/tap2":                            {{1, 1, 10240}, {1, 1, 10240 / N}},
					"layers.0/tp/dt_bias":                         {{1, 1, 48}, {1, 1, 48 / N}},
					"layers.0/tp/norm_w":                          {{1, 1, 128}, {1, 1, 128}},
					"layers.7.input_layernorm.weight":             {{1, 1, 160, 32}, {1, 1, 160, 32}},
					"layers.7.input_layernorm.weight_distributed": {{1, 1, 160, 32}, {1, 1, 160 / N, 32}},
					"tok_embeddings.weight":                       {{1, 1, 248320, 5120}, {1, 1, 248320, 5120 / N}},
					"output.weight.vshard":                        {{5120, 248320}, {5120, 248320 / N}},
					"mtp/fc":                                      {{10240, 5120}, {10240, 5120 / N}},
					"mtp/mtp.norm.weight_distributed":             {{1, 1, 160, 32}, {1, 1, 160 / N, 32}},
					"mtp/layers.3/tp/wqkv_fused_qkvg.il":          {{5120, 14336}, {5120, 14336 / N}},
					"mtp/layers.3/mlp.gate_up.weight.swiglu.tp":   {{5120, 34816}, {5120, 34816 / N}},
					"mtp/layers.3.input_layernorm.weight":         {{1, 1, 160, 32}, {1, 1, 160, 32}},
				}
				for target, want := range shapes {
					e := entryByTarget(pl, target)
					require.NotNil(t, e, target)
					assert.Equal(t, want[0], e.Shape, "%s full shape", target)
					assert.Equal(t, want[1], e.DeviceShape, "%s per-device shape", target)
				}
				qkvzab := entryByTarget(pl, "layers.0/tp/qkvzab.il")
				assert.Equal(t, mapping.BFloat8B, qkvzab.DType)
				assert.Equal(t, mapping.DRAMInterleaved, qkvzab.Memory.Kind)
				assert.NotEmpty(t, qkvzab.Warnings, "8240 / 4120 wide shards are not tile multiples")
				assert.Len(t, qkvzab.Shards, mesh.Cols)
				assert.Len(t, qkvzab.Shards[0], 6, "q, k, v, z, a, b pieces")
				assert.Equal(t, map[int]string{2: "P300", 4: "P150x4"}[mesh.Cols]+"/tensor_cache_bfp8_mesh"+mesh.String()+
					"/layers.0/tp/qkvzab.il_dtype_BFLOAT8_B_layout_TILE.tensorbin", qkvzab.File)
				for _, e := range pl.Entries {
					assert.NotContains(t, e.Target, "dramshard", "proj_1d_decode and mlp_1d_decode are on for a 1x%d mesh", mesh.Cols)
					if strings.HasSuffix(e.Target, "_distributed") || e.Target == "tok_embeddings.weight" {
						assert.True(t, e.Placement.Is2D(), "%s uses ShardTensor2dMesh", e.Target)
					} else {
						assert.False(t, e.Placement.Is2D(), e.Target)
					}
				}
				gateUp := entryByTarget(pl, "layers.5/mlp.gate_up.weight.swiglu.tp")
				assert.Equal(t, mapping.BFloat4B, gateUp.DType)
				assert.Len(t, gateUp.Shards[0], 2*17408/32/mesh.Cols, "alternating 32-row tiles of gate and up")
				if variant == "fp8" {
					require.NotNil(t, qkvzab.Sources[0].Scale)
					assert.Nil(t, qkvzab.Sources[2].Scale, "in_proj_a is not quantised")
				}
			}
		})
	}
}

func TestBuildFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		variant string
		mesh    mapping.Mesh
		edit    func(ts []invTensor, text map[string]any) []invTensor
		kind    string
		mention []string
	}{
		{name: "unknown tensor", variant: "fp8", mesh: mapping.Mesh{Rows: 1, Cols: 2},
			edit: func(ts []invTensor, _ map[string]any) []invTensor {
				return append(ts, invTensor{Name: "model.language_model.layers.0.mlp.shared_expert_gate.weight", DType: "BF16", Shape: []int64{1, 5120}})
			},
			kind: "unmapped", mention: []string{"model.language_model.layers.0.mlp.shared_expert_gate.weight"}},
		{name: "non-dividing mesh", variant: "bf16", mesh: mapping.Mesh{Rows: 1, Cols: 3},
			kind: "indivisible", mention: []string{"num_key_value_heads", "linear_num_key_heads", "mesh 1x3"}},
		{name: "mtp configured but absent", variant: "fp8", mesh: mapping.Mesh{Rows: 1, Cols: 2},
			edit: func(ts []invTensor, _ map[string]any) []invTensor {
				var out []invTensor
				for _, x := range ts {
					if !strings.HasPrefix(x.Name, "mtp.") {
						out = append(out, x)
					}
				}
				return out
			},
			kind: "missing", mention: []string{"mtp.fc.weight", "mtp_num_hidden_layers gt 0"}},
		{name: "mtp present but not configured", variant: "bf16", mesh: mapping.Mesh{Rows: 1, Cols: 2},
			edit: func(ts []invTensor, text map[string]any) []invTensor {
				text["mtp_num_hidden_layers"] = 0
				return ts
			},
			kind: "unmapped", mention: []string{"mtp.fc.weight"}},
		{name: "fused source missing", variant: "fp8", mesh: mapping.Mesh{Rows: 1, Cols: 2},
			edit: func(ts []invTensor, _ map[string]any) []invTensor {
				var out []invTensor
				for _, x := range ts {
					if !strings.HasPrefix(x.Name, "model.language_model.layers.4.linear_attn.in_proj_z.weight") {
						out = append(out, x)
					}
				}
				return out
			},
			kind: "incomplete", mention: []string{"layers.4/tp/qkvzab.il", "layers.4.linear_attn.in_proj_z.weight"}},
		{name: "no full-attention layer to host the MTP layer", variant: "bf16", mesh: mapping.Mesh{Rows: 1, Cols: 2},
			edit: func(ts []invTensor, text map[string]any) []invTensor {
				lt := make([]string, 64)
				for i := range lt {
					lt[i] = "linear_attention"
				}
				text["layer_types"] = lt
				return ts
			},
			kind: "config", mention: []string{"first_full_attention_layer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, _ := writeInventory(t, tc.variant, tc.edit)
			pl, err := mapping.BuildWith(open(t, dir), builtin(t), tc.mesh, nil, nil)
			var pe *mapping.PlanError
			require.ErrorAs(t, err, &pe)
			require.NotNil(t, pl, "the plan comes with its problems")
			var msgs []string
			kinds := map[string]bool{}
			for _, p := range pe.Problems {
				kinds[string(p.ID)] = true
				msgs = append(msgs, p.Message)
			}
			assert.True(t, kinds[tc.kind], "want a %s problem in %v", tc.kind, msgs)
			all := strings.Join(msgs, "\n")
			for _, m := range tc.mention {
				assert.Contains(t, all, m)
			}
		})
	}
}

func TestBuildRejectsBadInput(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "bf16", nil)
	c := open(t, dir)
	_, err := mapping.BuildWith(c, builtin(t), mapping.Mesh{Rows: 2, Cols: 2}, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "1xN")
	var pe *mapping.PlanError
	assert.False(t, errors.As(err, &pe))
	_, err = mapping.BuildWith(c, nil, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	require.Error(t, err)
}

// BenchmarkBuild27B plans the full-scale FP8 27B layout (1606 tensors,
// headers only) on a 1x2 mesh.
func BenchmarkBuild27B(b *testing.B) {
	dir, _ := writeInventory(b, "fp8", nil)
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(b, err)
	defer c.Close()
	p, _ := mapping.Builtin(mapping.BuiltinName)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVariablesChangeExactlyTheirFiles: each switch of the qwen36 config
// changes only the files its upstream branch changes, on the small
// fixture at 1x2.
func TestVariablesChangeExactlyTheirFiles(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	mesh := mapping.Mesh{Rows: 1, Cols: 2}
	plan := func(set mapping.Settings) map[string]*mapping.Entry {
		t.Helper()
		pl, err := mapping.BuildWith(c, builtin(t), mesh, set, nil)
		require.NoError(t, err)
		for k, v := range set {
			assert.Equal(t, v, pl.Settings[k])
		}
		out := map[string]*mapping.Entry{}
		for _, e := range pl.Entries {
			out[e.Target] = e
		}
		return out
	}
	base := plan(nil)
	// Small: layers 0-2 GDN, layer 3 full attention, MTP hosted as layer 3.
	tests := []struct {
		set     mapping.Settings
		renamed map[string]string // default target -> target with the switch flipped
		memory  string            // memory config of the renamed targets
		dropped []string
	}{
		{set: mapping.Settings{"proj_1d_decode": false}, memory: mapping.DRAMWidthSharded, renamed: map[string]string{
			"layers.0/tp/qkvzab.il": "layers.0/tp/qkvzab.dramshard", "layers.1/tp/qkvzab.il": "layers.1/tp/qkvzab.dramshard",
			"layers.2/tp/qkvzab.il": "layers.2/tp/qkvzab.dramshard", "layers.3/tp/wqkv_fused_qkvg.il": "layers.3/tp/wqkv_fused_qkvg.dramshard",
			"mtp/layers.3/tp/wqkv_fused_qkvg.il": "mtp/layers.3/tp/wqkv_fused_qkvg.dramshard"}},
		{set: mapping.Settings{"mlp_1d_decode": false}, memory: mapping.DRAMWidthSharded, renamed: func() map[string]string {
			m := map[string]string{}
			for _, l := range []string{"layers.0", "layers.1", "layers.2", "layers.3", "mtp/layers.3"} {
				for _, n := range []string{"gate_proj", "up_proj"} {
					m[l+"/mlp."+n+".weight.tp"] = l + "/mlp." + n + ".weight.dramshard.tp"
				}
			}
			return m
		}()},
		{set: mapping.Settings{"mlp_gateup_agmm_enabled": false}, dropped: []string{"layers.0/mlp.gate_up.weight.swiglu.tp",
			"layers.1/mlp.gate_up.weight.swiglu.tp", "layers.2/mlp.gate_up.weight.swiglu.tp", "layers.3/mlp.gate_up.weight.swiglu.tp",
			"mtp/layers.3/mlp.gate_up.weight.swiglu.tp"}},
	}
	for _, tc := range tests {
		got := plan(tc.set)
		want := map[string]bool{}
		for from, to := range tc.renamed {
			b, g := base[from], got[to]
			require.NotNil(t, b, from)
			require.NotNil(t, g, "%v: %s", tc.set, to)
			assert.Nil(t, got[from], "%v still plans %s", tc.set, from)
			assert.Equal(t, tc.memory, g.Memory.Kind, to)
			assert.Equal(t, b.DeviceShape, g.DeviceShape, to)
			assert.Equal(t, b.DType, g.DType, to)
			assert.Equal(t, b.Shards, g.Shards, "%s: same data as %s", to, from)
			want[to] = true
		}
		for _, d := range tc.dropped {
			require.NotNil(t, base[d], d)
			assert.Nil(t, got[d], "%v still plans %s", tc.set, d)
		}
		assert.Equal(t, len(base)-len(tc.dropped), len(got), "%v", tc.set)
		for name, e := range got {
			if want[name] {
				continue
			}
			b := base[name]
			require.NotNil(t, b, "%v plans %s, which the default does not", tc.set, name)
			assert.Equal(t, describeEntry(b), describeEntry(e), "%v changed %s", tc.set, name)
		}
	}
}

func TestSettingsErrors(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	mesh := mapping.Mesh{Rows: 1, Cols: 2}
	_, err := mapping.BuildWith(c, builtin(t), mesh, mapping.Settings{"proj_1d": true}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no variable "proj_1d"`)
	assert.Contains(t, err.Error(), "proj_1d_decode")
	_, err = mapping.BuildWith(c, builtin(t), mesh, mapping.Settings{"rope_permuted_enabled": true}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not transcribed")
	pl, err := mapping.BuildWith(c, builtin(t), mesh, mapping.Settings{"rope_permuted_enabled": false}, nil)
	require.NoError(t, err)
	assert.Equal(t, mapping.Settings{"proj_1d_decode": true, "mlp_1d_decode": true, "mlp_gateup_agmm_enabled": true, "rope_permuted_enabled": false}, pl.Settings)
	// On one device the multi-device switches are off (model_config sets them only for TP).
	pl, err = mapping.BuildWith(c, builtin(t), mapping.Mesh{Rows: 1, Cols: 1}, nil, nil)
	require.NoError(t, err)
	assert.False(t, pl.Settings["proj_1d_decode"])

	set, err := mapping.ParseSettings([]string{"proj_1d_decode=false", " mlp_1d_decode = On"})
	require.NoError(t, err)
	assert.Equal(t, mapping.Settings{"proj_1d_decode": false, "mlp_1d_decode": true}, set)
	for _, bad := range [][]string{{"proj_1d_decode"}, {"=true"}, {"x=maybe"}, {"x=1", "x=0"}} {
		_, err := mapping.ParseSettings(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestTargetExpressions(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	p := &mapping.Profile{Name: "expr", Device: "D", Tag: "t", Rules: []mapping.Rule{{ID: "w",
		Target:  "layer{first_full_attention_layer + 1}/fc.{num_hidden_layers}",
		Sources: []string{"mtp.fc.weight"}, Placement: mapping.Placement{Kind: "replicate"}, DType: mapping.BFloat16, Layout: mapping.Tile,
		Memory: mapping.DRAMInterleaved}}}
	pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	var pe *mapping.PlanError
	require.ErrorAs(t, err, &pe, "the other tensors are unmapped")
	e := entryByTarget(pl, "layer4/fc.4")
	require.NotNil(t, e, "first_full_attention_layer is 3 in the small fixture")
	p.Rules[0].Target = "layer{no_such_var}/fc"
	pl, _ = mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
	var found bool
	for _, pr := range pl.Problems {
		found = found || pr.ID == "config" && strings.Contains(pr.Message, "no_such_var")
	}
	assert.True(t, found, "an unknown variable in a target is a config problem")
}

// ttnn refuses a DRAM width-sharded TILE tensor whose shard height is not
// a multiple of 32; the plan does too (ROW_MAJOR has no such rule).
func TestDRAMWidthShardedTileHeight(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	tests := []struct {
		name   string
		rows   string // the reshaped height of mtp.fc.weight ([128, 256])
		layout string
		refuse bool
	}{
		{"tile height 16", "16", mapping.Tile, true},
		{"tile height 32", "32", mapping.Tile, false},
		{"row-major height 16", "16", mapping.RowMajor, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &mapping.Profile{Name: "ws", Device: "D", Tag: "t", Rules: []mapping.Rule{{ID: "w", Target: "fc",
				Sources:   []string{"mtp.fc.weight"},
				Transform: []mapping.Step{{Op: "reshape", Shape: []string{tc.rows, "rows*cols/" + tc.rows}}},
				Placement: mapping.Placement{Kind: "replicate"}, DType: mapping.BFloat16, Layout: tc.layout, Memory: mapping.DRAMWidthSharded}}}
			pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
			var pe *mapping.PlanError
			require.ErrorAs(t, err, &pe, "the other tensors are unmapped")
			var msgs []string
			for _, pr := range pl.Problems {
				if strings.Contains(pr.Message, "target fc:") {
					msgs = append(msgs, string(pr.ID)+": "+pr.Message)
				}
			}
			if tc.refuse {
				require.Len(t, msgs, 1)
				assert.Contains(t, msgs[0], "config: target fc: DRAM width sharding of a TILE tensor needs a per-device height that is a multiple of 32")
				assert.Nil(t, entryByTarget(pl, "fc"))
			} else {
				assert.Empty(t, msgs)
				require.NotNil(t, entryByTarget(pl, "fc"))
			}
		})
	}
}

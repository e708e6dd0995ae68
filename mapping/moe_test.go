package mapping_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planOf writes a synthetic checkpoint of o and plans it with profile on
// a 1xN mesh.
func planOf(t *testing.T, o synth.Options, profile string, n int) (*mapping.Plan, *ckpt.Checkpoint, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(dir, o))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p, err := mapping.Builtin(profile)
	require.NoError(t, err)
	pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: n}, nil, nil)
	return pl, c, err
}

// moeFiles are the files of one MoE layer under dir at 1xN (the default
// interleaved switches).
func moeFiles(dir string, n int) []string {
	return []string{
		fmt.Sprintf("%s/moe.experts.gate_proj_ep_swiglu%d_dtype_BFLOAT4_B_layout_TILE.tensorbin", dir, n),
		fmt.Sprintf("%s/moe.experts.up_proj_ep_swiglu%d_dtype_BFLOAT4_B_layout_TILE.tensorbin", dir, n),
		fmt.Sprintf("%s/moe.experts.down_proj_ep_swiglu%d_dtype_BFLOAT8_B_layout_TILE.tensorbin", dir, n),
		dir + "/moe.router.weight_dtype_BFLOAT16_layout_TILE.tensorbin",
		dir + "/moe.shared_expert_gate.weight_dtype_BFLOAT16_layout_TILE.tensorbin",
		dir + "/shared_expert/mlp.gate_proj.weight.tp_dtype_BFLOAT4_B_layout_TILE.tensorbin",
		dir + "/shared_expert/mlp.up_proj.weight.tp_dtype_BFLOAT4_B_layout_TILE.tensorbin",
		dir + "/shared_expert/mlp.down_proj.weight.tp_dtype_BFLOAT8_B_layout_TILE.tensorbin",
	}
}

// TestMoEPlans: the tiny Qwen3.5-MoE checkpoint, fused and per expert,
// bf16 and FP8, maps completely with both profiles at 1x2 and 1x4: every
// layer (and the MTP line's MTP layer, under mtp/) gets the eight MoE
// files of the qwen36 MoE loader and no dense mlp.* file; both layouts
// plan the same files with the same shapes; the experts are split whole
// over the devices along dim 1.
func TestMoEPlans(t *testing.T) {
	t.Parallel()
	for _, profile := range mapping.BuiltinNames() {
		for _, n := range []int{2, 4} {
			for _, fp8 := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/1x%d/fp8=%v", profile, n, fp8), func(t *testing.T) {
					t.Parallel()
					shapes := map[bool]map[string]string{}
					for _, per := range []bool{false, true} {
						o := synth.SmallMoE()
						o.FP8, o.PerExpert = fp8, per
						pl, c, err := planOf(t, o, profile, n)
						require.NoError(t, err)
						require.Empty(t, pl.Unmapped)
						for _, ig := range pl.Ignored { // only the q/k norms the loader does not cache (and main's MTP head)
							if profile == mapping.ProfileMain && strings.HasPrefix(ig.Name, "mtp.") {
								continue
							}
							assert.Regexp(t, `self_attn\.[qk]_norm\.weight$`, ig.Name)
						}
						require.Empty(t, pl.Unaccounted(c))
						files := map[string]*mapping.Entry{}
						shapes[per] = map[string]string{}
						for _, e := range pl.Entries {
							rel := strings.TrimPrefix(e.File, pl.CacheDir+"/")
							files[rel] = e
							shapes[per][rel] = fmt.Sprint(e.DType, e.Shape, e.DeviceShape, e.Placement)
							assert.False(t, strings.Contains(rel, "/mlp.") && !strings.Contains(rel, "/shared_expert/"), "a dense MLP file on a MoE layer: %s", rel)
						}
						dirs := []string{"layers.0", "layers.1", "layers.2", "layers.3"}
						if profile == mapping.ProfileMTP {
							dirs = append(dirs, "mtp/layers.3")
						}
						for _, d := range dirs {
							for _, f := range moeFiles(d, n) {
								require.Contains(t, files, f)
							}
						}
						gate := files[fmt.Sprintf("layers.0/moe.experts.gate_proj_ep_swiglu%d_dtype_BFLOAT4_B_layout_TILE.tensorbin", n)]
						assert.Equal(t, []int64{1, 8, 128, 64}, gate.Shape)
						assert.Equal(t, []int64{1, int64(8 / n), 128, 64}, gate.DeviceShape)
						assert.Equal(t, "shard(dim=1)", gate.Placement.String())
						assert.Equal(t, int64(64), gate.BatchRows)
						down := files[fmt.Sprintf("layers.0/moe.experts.down_proj_ep_swiglu%d_dtype_BFLOAT8_B_layout_TILE.tensorbin", n)]
						assert.Equal(t, []int64{1, 8, 64, 128}, down.Shape)
						router := files["layers.0/moe.router.weight_dtype_BFLOAT16_layout_TILE.tensorbin"]
						assert.Equal(t, []int64{1, 1, 128, 8}, router.Shape)
						assert.Equal(t, "replicate", router.Placement.String())
						sg := files["layers.0/moe.shared_expert_gate.weight_dtype_BFLOAT16_layout_TILE.tensorbin"]
						assert.Equal(t, []int64{1, 1, 128, 1}, sg.Shape)
					}
					assert.Equal(t, shapes[false], shapes[true], "the fused and the per-expert layouts plan the same files")
				})
			}
		}
	}
}

// TestKVHeadsReplicated: on a mesh with more devices than KV heads, the
// full-attention in-projection gives device d KV head floor(d·kv/N) whole
// (tp_common.replicate_kv_weight) instead of reporting the mesh as
// indivisible: 2 KV heads at 1x4, 1 at 1x2, both switches.
func TestKVHeadsReplicated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		n, kv  int
		moe    bool
		target string
	}{
		{"moe 2 kv at 1x4", 4, 2, true, "layers.3/tp/wqkv_fused_qkvg.il"},
		{"dense 2 kv at 1x4", 4, 2, false, "layers.3/tp/wqkv_fused_qkvg.il"},
		{"dense 1 kv at 1x2", 2, 1, false, "layers.3/tp/wqkv_fused_qkvg.il"},
		{"mtp layer 2 kv at 1x4", 4, 2, true, "mtp/layers.3/tp/wqkv_fused_qkvg.il"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := synth.Small()
			if tc.moe {
				o = synth.SmallMoE()
			}
			o.Heads, o.KVHeads, o.LinKHeads, o.LinVHeads, o.Vision = 4, tc.kv, 4, 8, false
			if !tc.moe {
				o.Intermediate = 512
			}
			for _, sets := range [][]string{nil, {"proj_1d_decode=false"}} {
				dir := filepath.Join(t.TempDir(), "src")
				require.NoError(t, synth.Write(dir, o))
				c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
				require.NoError(t, err)
				defer c.Close()
				set, err := mapping.ParseSettings(sets)
				require.NoError(t, err)
				pl, err := mapping.BuildWith(c, builtinT(t), mapping.Mesh{Rows: 1, Cols: tc.n}, set, nil)
				require.NoError(t, err)
				target := tc.target
				if sets != nil {
					target = strings.Replace(target, ".il", ".dramshard", 1)
				}
				var e *mapping.Entry
				for _, x := range pl.Entries {
					if x.Target == target {
						e = x
					}
				}
				require.NotNil(t, e, target)
				hd, qh := int64(o.HeadDim), int64(o.Heads/tc.n)
				// Per device: its q heads, its KV head's k and v, its gates.
				require.Equal(t, (2*qh+2)*hd, e.MatrixRows)
				for d, ps := range e.Shards {
					head := int64(d * tc.kv / tc.n)
					var k, v []mapping.Piece
					for _, p := range ps {
						switch p.Source {
						case 1:
							k = append(k, p)
						case 2:
							v = append(v, p)
						}
					}
					want := []mapping.Piece{{Source: 1, Row: head * hd, Rows: hd, Cols: int64(o.Hidden)}}
					assert.Equal(t, want, k, "device %d takes KV head %d", d, head)
					want[0].Source = 2
					assert.Equal(t, want, v, "device %d", d)
				}
				assert.Equal(t, []int64{int64(o.Hidden), (2*qh + 2) * hd * int64(tc.n)}, e.Shape)
			}
		})
	}
}

func builtinT(t *testing.T) *mapping.Profile {
	t.Helper()
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	return p
}

// TestMoEPlanProblems: what a MoE checkpoint can lack or hold too much of
// is named, never skipped: a layer without experts, a per-expert
// checkpoint missing one expert, an expert index beyond num_experts, and
// both layouts at once.
func TestMoEPlanProblems(t *testing.T) {
	t.Parallel()
	pre := "model.language_model.layers.1.mlp.experts."
	for _, tc := range []struct {
		name    string
		per     bool
		drop    func(name string) bool
		add     func(dir string) error
		kind    string
		mention []string
	}{
		{name: "no experts", drop: func(n string) bool { return strings.HasPrefix(n, pre) },
			kind: "missing", mention: []string{"moe.experts.gate_proj_ep_swiglu{num_devices}", "for layer(s) 1", pre + "gate_up_proj"}},
		{name: "one expert missing", per: true, drop: func(n string) bool { return strings.HasPrefix(n, pre+"5.up_proj") },
			kind: "incomplete", mention: []string{"layers.1/moe.experts.up_proj_ep_swiglu2", pre + "5.up_proj.weight"}},
		{name: "expert beyond num_experts", per: true, add: func(dir string) error {
			return copyTensor(dir, pre+"0.gate_proj.weight", pre+"8.gate_proj.weight")
		}, kind: "config", mention: []string{"{X} = 8 is not an index below num_experts = 8"}},
		{name: "both layouts", add: func(dir string) error {
			return copyTensor(dir, "model.language_model.layers.1.mlp.shared_expert.gate_proj.weight", pre+"0.gate_proj.weight")
		}, kind: "incomplete", mention: []string{pre + "1.gate_proj.weight"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := synth.SmallMoE()
			o.FP8, o.PerExpert = false, tc.per
			dir := filepath.Join(t.TempDir(), "src")
			require.NoError(t, synth.Write(dir, o))
			if tc.drop != nil {
				require.NoError(t, rewrite(dir, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
					return slices.DeleteFunc(ts, func(m ckpt.MemTensor) bool { return tc.drop(m.Name) })
				}))
			}
			if tc.add != nil {
				require.NoError(t, tc.add(dir))
			}
			c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
			require.NoError(t, err)
			defer c.Close()
			pl, err := mapping.BuildWith(c, builtinT(t), mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
			var pe *mapping.PlanError
			require.ErrorAs(t, err, &pe)
			require.NotNil(t, pl)
			var msgs []string
			kinds := map[string]bool{}
			for _, p := range pe.Problems {
				kinds[string(p.ID)] = true
				msgs = append(msgs, p.Message)
			}
			assert.True(t, kinds[tc.kind], "want a %s problem in %v", tc.kind, msgs)
			assert.False(t, kinds[string(mapping.ProblemUnaccounted)], "every tensor accounted for: %v", msgs)
			assert.Empty(t, pl.Unaccounted(c))
			for _, m := range tc.mention {
				assert.Contains(t, strings.Join(msgs, "\n"), m)
			}
		})
	}
}

// rewrite rewrites a synthetic checkpoint as one file holding the tensors
// edit keeps (the index removed).
func rewrite(dir string, edit func([]ckpt.MemTensor) []ckpt.MemTensor) error {
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	if err != nil {
		return err
	}
	var ts []ckpt.MemTensor
	for _, t := range c.Tensors {
		b := make([]byte, t.NBytes())
		if _, err := t.ReadAt(b, 0); err != nil {
			c.Close()
			return err
		}
		ts = append(ts, ckpt.MemTensor{WriteSpec: ckpt.WriteSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}, Data: b})
	}
	files := c.Files
	c.Close()
	for _, f := range files {
		if err := os.Remove(f.Location); err != nil {
			return err
		}
	}
	_ = os.Remove(filepath.Join(dir, "model.safetensors.index.json"))
	return ckpt.WriteFile(filepath.Join(dir, "model.safetensors"), edit(ts), map[string]string{"format": "pt"})
}

// copyTensor adds a copy of tensor from under the name to.
func copyTensor(dir, from, to string) error {
	return rewrite(dir, func(ts []ckpt.MemTensor) []ckpt.MemTensor {
		for _, m := range ts {
			if m.Name == from {
				m.Name = to
				return append(ts, m)
			}
		}
		return ts
	})
}

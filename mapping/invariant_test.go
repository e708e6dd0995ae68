package mapping_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlanAccountsForEveryTensor holds every plan, of every fixture with
// every built-in profile (plans with problems too), to its invariant: no
// tensor of the checkpoint is in none of the plan's entries, ignored list,
// unmapped list and problems (Plan.Unaccounted), and BuildWith never had
// to add one (no ProblemUnaccounted).
func TestPlanAccountsForEveryTensor(t *testing.T) {
	t.Parallel()
	small := func(edit func(*synth.Options)) func(t *testing.T) string {
		return func(t *testing.T) string {
			o := synth.Small()
			edit(&o)
			dir := t.TempDir()
			require.NoError(t, synth.Write(dir, o))
			return dir
		}
	}
	inventory := func(variant string, edit func(ts []invTensor, text map[string]any) []invTensor) func(t *testing.T) string {
		return func(t *testing.T) string { dir, _ := writeInventory(t, variant, edit); return dir }
	}
	fixtures := map[string]func(t *testing.T) string{
		"small fp8":                    small(func(*synth.Options) {}),
		"small fine-tune":              small(func(o *synth.Options) { o.FineTune = true }),
		"small bf16 single file":       small(func(o *synth.Options) { o.FP8, o.LayersPerShard = false, 0 }),
		"small without mtp and vision": small(func(o *synth.Options) { o.MTP, o.Vision = false, false }),
		// transformers' FineGrainedFP8 layout: BF16 in_proj_a/b with the
		// weight_scale_inv transformers writes beside them
		"transformers fp8":          small(func(o *synth.Options) { o.TransformersFP8 = true }),
		"transformers fp8, visual":  small(func(o *synth.Options) { o.TransformersFP8, o.NotConvert = true, []string{"visual"} }),
		"transformers fp8, resaved": small(func(o *synth.Options) { o.TransformersFP8, o.Resaved = true, true }),
		"27B fp8":                   inventory("fp8", nil),
		"27B bf16":                  inventory("bf16", nil),
		"27B fp8 without in_proj_z of layer 4 (incomplete)": inventory("fp8", func(ts []invTensor, _ map[string]any) []invTensor {
			var out []invTensor
			for _, x := range ts {
				if x.Name != "model.language_model.layers.4.linear_attn.in_proj_z.weight" {
					out = append(out, x)
				}
			}
			return out
		}),
		"27B bf16 with an unknown tensor": inventory("bf16", func(ts []invTensor, _ map[string]any) []invTensor {
			return append(ts, invTensor{Name: "model.language_model.layers.0.mlp.shared_expert_gate.weight", DType: "BF16", Shape: []int64{1, 5120}})
		}),
	}
	for name, make := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := open(t, make(t))
			for _, profile := range mapping.BuiltinNames() {
				p, err := mapping.Builtin(profile)
				require.NoError(t, err)
				for _, mesh := range []mapping.Mesh{{Rows: 1, Cols: 1}, {Rows: 1, Cols: 2}, {Rows: 1, Cols: 3}, {Rows: 1, Cols: 4}} {
					pl, _ := mapping.BuildWith(c, p, mesh, nil, nil)
					require.NotNil(t, pl, "%s %s", profile, mesh)
					assert.Empty(t, pl.Unaccounted(c), "%s %s", profile, mesh)
					for _, f := range pl.Problems {
						assert.NotEqual(t, mapping.ProblemUnaccounted, f.ID, "%s %s: %s", profile, mesh, f.Message)
					}
					if strings.HasPrefix(name, "transformers fp8") && mesh.Cols == 2 {
						ignored := map[string]string{}
						for _, ig := range pl.Ignored {
							ignored[ig.Name] = ig.Reason
						}
						orphan := "model.language_model.layers.0.linear_attn.in_proj_a.weight_scale_inv"
						assert.Contains(t, ignored[orphan], "weight_scale_inv of a weight that is BF16, not F8_E4M3: not applied", "%s %s", profile, mesh)
					}
				}
			}
		})
	}
}

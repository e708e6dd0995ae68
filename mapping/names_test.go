package mapping_test

import (
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relFiles are a plan's file paths relative to its cache folder.
func relFiles(plan *mapping.Plan) []string {
	var out []string
	for _, e := range plan.Entries {
		out = append(out, strings.TrimPrefix(e.File, plan.CacheDir+"/"))
	}
	return out
}

// PlanNames, given only the file names of a plan made from the source,
// names exactly the files of that plan, with the rule, dtype, layout,
// memory config and placement of each: for every built-in profile and
// setting of its variables, for the small fixture and the 27B layout.
func TestPlanNamesReproducesPlan(t *testing.T) {
	t.Parallel()
	small := openSmall(t)
	dir, _ := writeInventory(t, "fp8", nil)
	big := open(t, dir)
	mesh := mapping.Mesh{Rows: 1, Cols: 2}
	for _, c := range []*ckpt.Checkpoint{small, big} {
		for _, name := range mapping.BuiltinNames() {
			p, err := mapping.Builtin(name)
			require.NoError(t, err)
			for _, set := range []mapping.Settings{nil, {mapping.VarProj1DDecode: false}, {mapping.VarMLP1DDecode: false, mapping.VarProj1DDecode: false}} {
				plan, err := mapping.BuildWith(c, p, mesh, set, nil)
				require.NoError(t, err)
				np, notes, err := mapping.PlanNames(p, mesh, set, plan.Device, relFiles(plan))
				require.NoError(t, err)
				assert.Equal(t, plan.CacheDir, np.CacheDir)
				require.Equal(t, relFiles(plan), relFiles(np), "%s %v", name, set)
				for i, e := range plan.Entries {
					g := np.Entries[i]
					assert.Equal(t, []any{e.Rule, e.Target, e.DType, e.Layout, e.Memory.Kind, e.Placement.String(), len(e.Shards)},
						[]any{g.Rule, g.Target, g.DType, g.Layout, g.Memory.Kind, g.Placement.String(), len(g.Shards)}, e.File)
				}
				require.NotEmpty(t, notes)
				assert.Contains(t, notes[0], "shapes not compared: no source")
			}
		}
	}
}

// What the names cannot show is said: a removed file of a required rule
// is still planned (so the comparison finds it missing); without any mtp/
// file, the MTP line plans no MTP head and says why.
func TestPlanNamesInference(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	mesh := mapping.Mesh{Rows: 1, Cols: 2}
	p, err := mapping.Builtin(mapping.ProfileMTP)
	require.NoError(t, err)
	plan, err := mapping.BuildWith(c, p, mesh, nil, nil)
	require.NoError(t, err)
	files := relFiles(plan)
	var kept []string
	var dropped string
	for _, f := range files {
		switch {
		case strings.HasPrefix(f, "mtp/"):
		case dropped == "" && strings.HasPrefix(f, "layers.1/tp/out_"):
			dropped = f
		default:
			kept = append(kept, f)
		}
	}
	require.NotEmpty(t, dropped)
	np, notes, err := mapping.PlanNames(p, mesh, nil, plan.Device, kept)
	require.NoError(t, err)
	got := relFiles(np)
	assert.Contains(t, got, dropped, "the required file of a GDN layer is planned")
	for _, f := range got {
		assert.False(t, strings.HasPrefix(f, "mtp/"), f)
	}
	assert.Len(t, got, len(kept)+1)
	assert.Contains(t, strings.Join(notes, "\n"), "config not known without the source: the cache has no file of the rules of profile "+p.Name+" that apply when mtp_num_hidden_layers gt 0 (e.g. mtp/")
	assert.Contains(t, strings.Join(notes, "\n"), "decoder layers not known without the source: the names show layers 0 to 3, the last a full_attention layer; a cache that lacks its last layers reads the same")

	// A stray layer index far beyond the layers makes no files expected.
	stray := append(append([]string(nil), kept...), "layers.99999999/tp/out_dtype_BFLOAT8_B_layout_TILE.tensorbin")
	np, _, err = mapping.PlanNames(p, mesh, nil, plan.Device, stray)
	require.NoError(t, err)
	assert.Len(t, np.Entries, len(kept)+1)

	_, _, err = mapping.PlanNames(p, mapping.Mesh{Rows: 2, Cols: 2}, nil, "X", kept)
	require.Error(t, err)
	_, _, err = mapping.PlanNames(p, mesh, mapping.Settings{"nope": true}, plan.Device, kept)
	require.Error(t, err)
}

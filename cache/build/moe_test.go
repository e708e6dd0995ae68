package build_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// planMoE writes the tiny MoE fixture with edit applied and plans it with
// the built-in profile on a 1xN mesh.
func planMoE(t *testing.T, n int, edit func(o *synth.Options)) (*ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	o := synth.SmallMoE()
	edit(&o)
	dir := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(dir, o))
	c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	plan, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: n}, nil, nil)
	require.NoError(t, err)
	return c, plan
}

// TestBuildMoEMatchesMaterialize builds the expert-parallel files (each
// expert's run of rows transposed on its own, several experts per device)
// with bands much smaller than an expert, and holds every file against
// Entry.Materialize; the fused and the per-expert layouts build the same
// bytes, bf16 and block FP8 (3-D stacks and 2-D per-expert weights).
func TestBuildMoEMatchesMaterialize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{2, 4} {
		for _, fp8 := range []bool{true, false} {
			files := map[bool]map[string][]byte{}
			for _, per := range []bool{false, true} {
				c, plan := planMoE(t, n, func(o *synth.Options) { o.FP8, o.PerExpert = fp8, per })
				out := filepath.Join(t.TempDir(), "cache")
				res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 3, BandBytes: 2048, NoSync: true})
				require.NoError(t, err)
				require.Len(t, res.Built, len(plan.Entries))
				checkAgainstMaterialize(t, c, plan, out)
				files[per] = map[string][]byte{}
				experts := 0
				for _, e := range plan.Entries {
					b, err := os.ReadFile(filepath.Join(out, e.File))
					require.NoError(t, err)
					files[per][e.File] = b
					if strings.Contains(e.Target, "moe.experts.") {
						experts++
						require.Equal(t, int64(8/n), e.DeviceShape[1], "%s: experts per device", e.Target)
					}
				}
				require.Equal(t, 5*3, experts, "three expert files for each of the 4 layers and the MTP layer")
			}
			require.Equal(t, len(files[false]), len(files[true]))
			for f, b := range files[false] {
				assert.Equal(t, b, files[true][f], "mesh 1x%d fp8=%v: %s differs between the fused and the per-expert layout", n, fp8, f)
			}
		}
	}
}

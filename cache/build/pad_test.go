package build_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// TestBuildPaddedMatchesMaterialize builds entries with zero pieces and
// pieces side by side (mapping.Piece bands: heads and widths padded, a
// vector broadcast, an FP8 source read in column units) on 1x2 and 1x4,
// with bands that end inside pieces, and checks every file against
// Entry.Materialize; at 1x4 one device of fc1 and of fc2 holds padding
// only.
func TestBuildPaddedMatchesMaterialize(t *testing.T) {
	t.Parallel()
	const vb = "model.visual.blocks.0."
	rule := func(id, src string, dt string, pl mapping.Placement, steps ...mapping.Step) mapping.Rule {
		steps = append([]mapping.Step{{Op: mapping.OpRound, DType: "BF16"}}, steps...)
		return mapping.Rule{ID: id, Target: "x/" + id, Sources: []string{src}, Transform: steps, Placement: pl,
			DType: dt, Layout: mapping.Tile, Memory: mapping.DRAMInterleaved}
	}
	tr := mapping.Step{Op: mapping.OpTranspose}
	cols := mapping.Placement{Kind: "shard", Dim: -1, Split: "rows", MeshAxes: []string{mapping.AxisReplicate, mapping.AxisShard}}
	rows := mapping.Placement{Kind: "shard", Dim: -2, Split: "cols"}
	p := &mapping.Profile{Name: "pad", Device: "D", Tag: "t", Rules: []mapping.Rule{
		rule("fc1", vb+"mlp.linear_fc1.weight", mapping.BFloat8B, cols, mapping.Step{Op: mapping.OpPad, Rows: "96"}, tr),
		rule("fc2", vb+"mlp.linear_fc2.weight", mapping.BFloat8B, rows, mapping.Step{Op: mapping.OpPad, Cols: "96"}, tr),
		rule("fc1_b", vb+"mlp.linear_fc1.bias", mapping.BFloat16, cols, mapping.Step{Op: mapping.OpPad, Rows: "96"},
			mapping.Step{Op: mapping.OpReshape, Shape: []string{"rows"}}),
		rule("norm", vb+"norm1.weight", mapping.BFloat16, mapping.Placement{Kind: "replicate"},
			mapping.Step{Op: mapping.OpSelectCols, Start: "0", Count: "1", Repeat: "32"}, tr,
			mapping.Step{Op: mapping.OpReshape, Shape: []string{"1", "rows", "cols"}}),
		// block FP8 [128, 256]: its input columns in units of 64, each
		// followed by 32 zero columns, split over the devices
		rule("mtp_fc", "mtp.fc.weight", mapping.BFloat8B, rows, mapping.Step{Op: mapping.OpSelectCols, Start: "0", Count: "256", Unit: "64", Pad: "32"}, tr),
	}}
	dir := t.TempDir()
	require.NoError(t, synth.Write(dir, synth.Small()))
	c, _ := openPlan(t, dir)
	for _, n := range []int{2, 4} {
		pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: n}, nil, nil)
		require.Error(t, err, "the other tensors are unmapped")
		for _, pr := range pl.Problems {
			require.Equal(t, mapping.ProblemUnmapped, pr.ID, pr.Message)
		}
		require.Len(t, pl.Entries, len(p.Rules))
		out := filepath.Join(t.TempDir(), "cache")
		res, err := build.Write(context.Background(), c, pl, out, build.WriteOptions{Workers: 3, BandBytes: 1024})
		require.NoError(t, err)
		require.Len(t, res.Built, len(p.Rules))
		checkAgainstMaterialize(t, c, pl, out)
	}
}

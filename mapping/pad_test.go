package mapping_test

import (
	"testing"

	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The small fixture's vision block 0 (hidden 32, 2 heads of 16,
// intermediate 64) in bf16: sources for the padding and reordering ops.
const vb = "model.visual.blocks.0."

// padProfile is a profile of one rule per op under test.
func padProfile() *mapping.Profile {
	tile := func(id, target, src string, pl mapping.Placement, steps ...mapping.Step) mapping.Rule {
		return mapping.Rule{ID: id, Target: target, Sources: []string{src}, Transform: steps, Placement: pl,
			DType: mapping.BFloat16, Layout: mapping.Tile, Memory: mapping.DRAMInterleaved}
	}
	round := mapping.Step{Op: mapping.OpRound, DType: "BF16"}
	tr := mapping.Step{Op: mapping.OpTranspose}
	cols := mapping.Placement{Kind: "shard", Dim: -1, Split: "rows"}
	rows := mapping.Placement{Kind: "shard", Dim: -2, Split: "cols"}
	head := func(label, off string) mapping.Part {
		return mapping.Part{Source: 0, Label: label, Offset: off, Units: "2", UnitRows: "16", Pad: "16"}
	}
	q, k, v := head("q", "0"), head("k", "32"), head("v", "64")
	q.Order, k.Order = mapping.OrderInterleaveHalves, mapping.OrderInterleaveHalves
	return &mapping.Profile{Name: "pad", Device: "D", Tag: "t", Rules: []mapping.Rule{
		// heads: per device [q_d | k_d | v_d], each head 16 rows + 16 zeros, q and k reordered
		tile("qkv", "qkv", vb+"attn.qkv.weight", cols, round, mapping.Step{Op: mapping.OpFuse, Parts: []mapping.Part{q, k, v}}, tr),
		// the MLP width padded to 96 rows, then split whole
		tile("fc1", "fc1", vb+"mlp.linear_fc1.weight", cols, round, mapping.Step{Op: mapping.OpPad, Rows: "96"}, tr),
		// the input columns of each head padded (wo_row)
		tile("wo", "wo", vb+"attn.proj.weight", rows, round, mapping.Step{Op: mapping.OpSelectCols, Start: "0", Count: "32", Unit: "16", Pad: "16"}, tr),
		// the input width padded to 96 columns, split whole (fc2_w_row)
		tile("fc2", "fc2", vb+"mlp.linear_fc2.weight", rows, round, mapping.Step{Op: mapping.OpPad, Cols: "96"}, tr),
		// a vector broadcast to 32 rows (LayerNorm weights)
		tile("norm", "norm", vb+"norm1.weight", mapping.Placement{Kind: "replicate"}, round,
			mapping.Step{Op: mapping.OpSelectCols, Start: "0", Count: "1", Repeat: "32"}, tr,
			mapping.Step{Op: mapping.OpReshape, Shape: []string{"1", "rows", "cols"}}),
	}}
}

// TestPaddingOps checks each padding and reordering op against the
// source rows, on 1x2 and 1x4.
func TestPaddingOps(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	p := padProfile()
	for _, n := range []int{2, 4} {
		pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: n}, nil, nil)
		var pe *mapping.PlanError
		require.ErrorAs(t, err, &pe, "the other tensors are unmapped")
		for _, pr := range pl.Problems {
			if n == 4 && pr.ID == mapping.ProblemIndivisible {
				continue // 2 heads on 4 devices: qkv and wo
			}
			require.Equal(t, mapping.ProblemUnmapped, pr.ID, pr.Message)
		}
		src := func(name string) [][]float32 { return source(t, c, name) }
		zero := make([]float32, 64)
		// want builds a device block row by row (before the transpose).
		check := func(target string, shape []int64, want func(d int) [][]float32) {
			t.Helper()
			vals, ds := materialize(t, c, pl, target)
			require.Equal(t, shape, ds, target)
			require.Len(t, vals, len(vals))
			for d, got := range vals {
				w := want(d)
				assert.Equal(t, transposedRows(w), got, "%s at 1x%d, device %d", target, n, d)
			}
		}
		if n == 2 {
			qkv := src(vb + "attn.qkv.weight")
			check("qkv", []int64{32, 96}, func(d int) [][]float32 {
				var out [][]float32
				for _, base := range []int{0, 32, 64} {
					h := base + 16*d
					for i := 0; i < 16; i++ {
						r := h + i
						if base < 64 { // q and k: row 2i is row i, 2i+1 is row i+8
							r = h + i/2 + i%2*8
						}
						out = append(out, qkv[r])
					}
					for i := 0; i < 16; i++ {
						out = append(out, zero[:32])
					}
				}
				return out
			})
			wo := src(vb + "attn.proj.weight")
			check("wo", []int64{32, 32}, func(d int) [][]float32 {
				var out [][]float32
				for _, r := range wo {
					out = append(out, append(append([]float32(nil), r[16*d:16*d+16]...), zero[:16]...))
				}
				return out
			})
		}
		per := 96 / n
		fc1 := src(vb + "mlp.linear_fc1.weight")
		check("fc1", []int64{32, int64(per)}, func(d int) [][]float32 {
			var out [][]float32
			for r := d * per; r < (d+1)*per; r++ {
				if r < len(fc1) {
					out = append(out, fc1[r])
				} else {
					out = append(out, zero[:32])
				}
			}
			return out
		})
		fc2 := src(vb + "mlp.linear_fc2.weight")
		check("fc2", []int64{int64(per), 32}, func(d int) [][]float32 {
			var out [][]float32
			for _, r := range fc2 {
				row := make([]float32, per)
				for j := range row {
					if c := d*per + j; c < len(r) {
						row[j] = r[c]
					}
				}
				out = append(out, row)
			}
			return out
		})
		norm := src(vb + "norm1.weight")
		vals, ds := materialize(t, c, pl, "norm")
		require.Equal(t, []int64{1, 32, 32}, ds)
		for i := 0; i < 32; i++ {
			for j := 0; j < 32; j++ {
				require.Equal(t, norm[j][0], vals[0][i*32+j], "norm row %d col %d", i, j)
			}
		}
	}
}

// TestPaddingPieces: zero rows and columns are pieces of their own, a
// device that holds padding only has one zero piece, and full-width
// entries keep the pieces they had (no At, no Zero).
func TestPaddingPieces(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	p := padProfile()
	pl, _ := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 4}, nil, nil)
	fc1 := entryByTarget(pl, "fc1")
	require.NotNil(t, fc1)
	assert.Equal(t, [][]mapping.Piece{
		{{Source: 0, Row: 0, Rows: 24, Cols: 32}},
		{{Source: 0, Row: 24, Rows: 24, Cols: 32}},
		{{Source: 0, Row: 48, Rows: 16, Cols: 32}, {Rows: 8, Cols: 32, Zero: true}},
		{{Rows: 24, Cols: 32, Zero: true}},
	}, fc1.Shards)
	fc2 := entryByTarget(pl, "fc2")
	require.NotNil(t, fc2)
	assert.Equal(t, []mapping.Piece{{Source: 0, Row: 0, Rows: 32, Col: 48, Cols: 16}, {Rows: 32, Cols: 8, At: 16, Zero: true}}, fc2.Shards[2])
	assert.Equal(t, []mapping.Piece{{Rows: 32, Cols: 24, Zero: true}}, fc2.Shards[3])
	assert.Equal(t, []string{"round(bf16)", "pad(cols=96)", "transpose"}, fc2.Describe())
	norm := entryByTarget(pl, "norm")
	require.NotNil(t, norm)
	require.Len(t, norm.Shards[0], 32, "one column piece per repeat")
	assert.Equal(t, mapping.Piece{Source: 0, Row: 0, Rows: 32, Col: 0, Cols: 1, At: 31}, norm.Shards[0][31])
	assert.Contains(t, norm.Describe(), "select_cols(start=0, count=1, repeat=32)")

	// A plan of the builtin profile has no padding pieces.
	_, small := smallPlan(t, mapping.Mesh{Rows: 1, Cols: 2})
	for _, e := range small.Entries {
		for _, ps := range e.Shards {
			for _, pc := range ps {
				require.False(t, pc.Zero || pc.At != 0 || pc.Cols != e.MatrixCols, "%s: %+v", e.Target, pc)
			}
		}
	}
}

func TestPaddingProblems(t *testing.T) {
	t.Parallel()
	c := openSmall(t)
	tests := []struct {
		name string
		edit func(r *mapping.Rule)
		want string
	}{
		{"pad below the block", func(r *mapping.Rule) { r.Transform[1].Rows = "32" }, "pad to 32 rows: the block has 64 already"},
		{"padded rows indivisible", func(r *mapping.Rule) { r.Transform[1].Rows = "66" }, "66 rows of the padded block along the sharded dimension do not divide by the 4 devices"},
		{"odd halves", func(r *mapping.Rule) {
			r.Transform[1] = mapping.Step{Op: mapping.OpFuse, Parts: []mapping.Part{{Source: 0, Label: "x", UnitRows: "1", Order: mapping.OrderInterleaveHalves}}}
		}, "part x interleaves the halves of units of 1 rows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := padProfile()
			p.Rules = p.Rules[1:2] // fc1
			tc.edit(&p.Rules[0])
			pl, err := mapping.BuildWith(c, p, mapping.Mesh{Rows: 1, Cols: 4}, nil, nil)
			require.Error(t, err)
			var msgs []string
			for _, pr := range pl.Problems {
				msgs = append(msgs, pr.Message)
			}
			assert.Contains(t, joinLines(msgs), tc.want)
		})
	}
	bad := padProfile()
	bad.Rules[1].Transform[1] = mapping.Step{Op: mapping.OpPad}
	assert.ErrorContains(t, bad.Validate(), "pad needs rows or cols")
	bad = padProfile()
	bad.Rules[0].Transform[1].Parts[0].Order = "shuffle"
	assert.ErrorContains(t, bad.Validate(), `order "shuffle"`)
	bad = padProfile()
	bad.Rules[2].Transform[1].Unit = ""
	assert.ErrorContains(t, bad.Validate(), "pad needs unit")
}

func joinLines(s []string) string {
	out := ""
	for _, x := range s {
		out += x + "\n"
	}
	return out
}

func TestEvalRoundup(t *testing.T) {
	t.Parallel()
	vars := mapping.Vars{"intermediate_size": 4304, "N": 2, "hd": 72}
	for expr, want := range map[string]int64{
		"roundup(intermediate_size, 32*N)": 4352, "roundup(hd, 32)": 96, "roundup(64, 32)": 64, "2*roundup(hd,32)+1": 193,
	} {
		got, err := mapping.Eval(expr, vars)
		require.NoError(t, err, expr)
		assert.Equal(t, want, got, expr)
	}
	for expr, msg := range map[string]string{
		"roundup(hd)": "2 arguments", "roundup(hd, 0)": "positive", "ceil(hd, 2)": `unknown function "ceil"`, "roundup(hd, 2": "missing )",
	} {
		_, err := mapping.Eval(expr, vars)
		assert.ErrorContains(t, err, msg, expr)
	}
}

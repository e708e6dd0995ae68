package mapping_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of this package")

// describeEntry is one line of the target golden: file, dtype, layout,
// placement, full and per-device shape, memory config, stored shards.
func describeEntry(e *mapping.Entry) string {
	mem := e.Memory.Kind
	if e.Memory.Kind == mapping.DRAMWidthSharded {
		mem += fmt.Sprintf(" shard %s grid %v %s", ckpt.FormatShape(e.Memory.ShardShape), e.Memory.Grid, e.Memory.Orientation)
	}
	return strings.Join([]string{e.File, e.DType, e.Layout, e.Placement.String(),
		ckpt.FormatShape(e.Shape), ckpt.FormatShape(e.DeviceShape), mem, fmt.Sprintf("shards=%d", len(e.Shards))}, "\t")
}

func describePlan(pl *mapping.Plan) string {
	var sb strings.Builder
	names := make([]string, 0, len(pl.Settings))
	for k := range pl.Settings {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(&sb, "# profile %s, mesh %s, %d targets\n", pl.Profile.Name, pl.Mesh, len(pl.Entries))
	for _, k := range names {
		fmt.Fprintf(&sb, "# %s=%v\n", k, pl.Settings[k])
	}
	for _, e := range pl.Entries {
		sb.WriteString(describeEntry(e))
		sb.WriteByte('\n')
	}
	return sb.String()
}

// TestGolden27BFP8Mesh1x2 holds the complete target list of the 27B FP8
// layout at 1x2 with each built-in profile (names, dtypes, layouts,
// placements, shapes, memory configs) against testdata; go test
// ./mapping -run Golden -update rewrites them.
func TestGolden27BFP8Mesh1x2(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	for _, tc := range []struct {
		profile, golden string
		targets         int
	}{
		{mapping.ProfileMTP, "qwen3_5-27b-fp8-mesh1x2.targets", targets27B},
		{mapping.ProfileMain, "qwen3_5-27b-fp8-mesh1x2-main.targets", targets27BMain},
	} {
		prof, err := mapping.Builtin(tc.profile)
		require.NoError(t, err)
		pl, err := mapping.BuildWith(open(t, dir), prof, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
		require.NoError(t, err)
		got := describePlan(pl)
		path := filepath.Join("testdata", tc.golden)
		if *update {
			require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		if got != string(want) {
			// Name the first differing line instead of dumping 1000 lines.
			g, w := strings.Split(got, "\n"), strings.Split(string(want), "\n")
			for i := 0; i < max(len(g), len(w)); i++ {
				var gl, wl string
				if i < len(g) {
					gl = g[i]
				}
				if i < len(w) {
					wl = w[i]
				}
				if gl != wl {
					t.Fatalf("%s line %d:\n got: %s\nwant: %s\n(run go test ./mapping -run Golden -update after checking the change)", path, i+1, gl, wl)
				}
			}
		}
		assert.Equal(t, tc.targets+len(pl.Settings)+1, strings.Count(got, "\n"), "%s: header lines + one line per target", tc.profile)
	}
}

// The lines differ where upstream differs: main caches out.colpar for
// every GDN layer and no MTP head (mtp.* ignored with the reason); the
// MTP line caches mtp/ and no out.colpar.
func TestProfileLines27B(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	c := open(t, dir)
	plans := map[string]*mapping.Plan{}
	for _, name := range []string{mapping.ProfileMain, mapping.ProfileMTP} {
		prof, err := mapping.Builtin(name)
		require.NoError(t, err)
		pl, err := mapping.BuildWith(c, prof, mapping.Mesh{Rows: 1, Cols: 2}, nil, nil)
		require.NoError(t, err, name)
		require.Empty(t, pl.Unmapped, name)
		plans[name] = pl
	}
	count := func(pl *mapping.Plan, pred func(*mapping.Entry) bool) int {
		n := 0
		for _, e := range pl.Entries {
			if pred(e) {
				n++
			}
		}
		return n
	}
	colpar := func(e *mapping.Entry) bool { return strings.HasSuffix(e.Target, "/tp/out.colpar") }
	mtp := func(e *mapping.Entry) bool { return strings.HasPrefix(e.Target, "mtp/") }
	main, mtpLine := plans[mapping.ProfileMain], plans[mapping.ProfileMTP]
	assert.Equal(t, 48, count(main, colpar), "one out.colpar per GDN layer")
	assert.Zero(t, count(main, mtp))
	assert.Zero(t, count(mtpLine, colpar))
	assert.Positive(t, count(mtpLine, mtp))
	e := entryByTarget(main, "layers.0/tp/out.colpar")
	require.NotNil(t, e)
	assert.Equal(t, []int64{6144, 5120}, e.Shape)
	assert.Equal(t, []int64{6144, 2560}, e.DeviceShape)
	assert.Equal(t, mapping.BFloat8B, e.DType)
	// The fused GDN decode's fp32 constants: two per GDN layer, FLOAT32
	// TILE [1, 1, 48] sharded by value head, only on main, and only with
	// the switch on.
	fp32 := func(e *mapping.Entry) bool {
		return strings.HasSuffix(e.Target, "/tp/dt_bias_fp32") || strings.HasSuffix(e.Target, "/tp/neg_exp_A_fp32")
	}
	assert.Equal(t, 96, count(main, fp32))
	assert.Zero(t, count(mtpLine, fp32))
	for _, name := range []string{"dt_bias_fp32", "neg_exp_A_fp32"} {
		e := entryByTarget(main, "layers.0/tp/"+name)
		require.NotNil(t, e, name)
		assert.Equal(t, mapping.Float32, e.DType)
		assert.Equal(t, mapping.Tile, e.Layout)
		assert.Equal(t, []int64{1, 1, 48}, e.Shape)
		assert.Equal(t, []int64{1, 1, 24}, e.DeviceShape)
		assert.Equal(t, "shard(dim=-1)", e.Placement.String())
	}
	assert.Equal(t, []mapping.ValueOp{{Op: mapping.OpNegExp}}, entryByTarget(main, "layers.0/tp/neg_exp_A_fp32").Values, "no bf16 rounding")
	assert.Empty(t, entryByTarget(main, "layers.0/tp/dt_bias_fp32").Values, "the source's values as they are")
	prof0, err := mapping.Builtin(mapping.ProfileMain)
	require.NoError(t, err)
	off, err := mapping.BuildWith(c, prof0, mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{mapping.VarGDNFusedDecode: false}, nil)
	require.NoError(t, err)
	assert.Zero(t, count(off, fp32), "QWEN36_GDN_FUSED_DECODE=0")
	assert.Equal(t, len(main.Entries)-96, len(off.Entries))
	ignoredMTP := 0
	for _, ig := range main.Ignored {
		if strings.HasPrefix(ig.Name, "mtp.") {
			ignoredMTP++
			assert.Contains(t, ig.Reason, "drops every mtp.* key")
		}
	}
	assert.Equal(t, 15+7, ignoredMTP, "the 15 MTP tensors and the scales of its 7 FP8 weights, each named: never silently skipped")
	// On one device main writes no out.colpar.
	prof, err := mapping.Builtin(mapping.ProfileMain)
	require.NoError(t, err)
	_, err = prof.Resolve(mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{mapping.VarOutColpar: false})
	require.ErrorContains(t, err, "not a switch upstream")
	_, err = prof.Resolve(mapping.Mesh{Rows: 1, Cols: 2}, mapping.Settings{mapping.VarGateUpAGMM: false})
	require.ErrorContains(t, err, "QWEN36_NO_AGMM")
}

func TestFormerProfileName(t *testing.T) {
	t.Parallel()
	p, err := mapping.Builtin("qwen3_5-tt")
	require.NoError(t, err)
	assert.Equal(t, mapping.ProfileMTP, p.Name)
	assert.NotContains(t, mapping.BuiltinNames(), "qwen3_5-tt")
	_, err = mapping.Builtin("nope")
	require.ErrorContains(t, err, mapping.ProfileMain)
}

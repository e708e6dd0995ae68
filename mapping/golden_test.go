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
// layout at 1x2 with the default profile (names, dtypes, layouts,
// placements, shapes, memory configs) against testdata; go test
// ./mapping -run Golden -update rewrites it.
func TestGolden27BFP8Mesh1x2(t *testing.T) {
	t.Parallel()
	dir, _ := writeInventory(t, "fp8", nil)
	pl, err := mapping.Build(open(t, dir), builtin(t), mapping.Mesh{Rows: 1, Cols: 2})
	require.NoError(t, err)
	got := describePlan(pl)
	path := filepath.Join("testdata", "qwen3_5-27b-fp8-mesh1x2.targets")
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
	assert.Equal(t, targets27B+5, strings.Count(got, "\n"), "header lines + one line per target")
}

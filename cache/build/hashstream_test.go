package build_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// TestBuildHashesAsWritten: a fresh build hashes every file from the
// bytes it writes and reads none back, and its manifest is the one of a
// build that reads every file back to hash it (the build before), for
// every built-in profile on the small fixtures (bfloat16 and block-FP8
// [128, 128] sources; BFLOAT16, BFLOAT8_B, BFLOAT4_B tiles and row-major
// targets; replicated and sharded files; partial tiles) on 1x1 and 1x2
// meshes, with bands small enough to stage tiles across bands. A third
// build compares both hashes of every file.
func TestBuildHashesAsWritten(t *testing.T) {
	t.Parallel()
	large := synth.Large()
	large.Hidden, large.Intermediate, large.Layers, large.Heads, large.KVHeads, large.HeadDim = 256, 512, 4, 2, 2, 64
	large.LinKHeads, large.LinVHeads, large.LinKDim, large.LinVDim, large.Vocab = 2, 2, 64, 64, 256
	fixtures := map[string]synth.Options{"small": synth.Small(), "large": large}
	seen := map[string]bool{}
	for _, fx := range []string{"small", "large"} {
		dir := filepath.Join(t.TempDir(), fx)
		require.NoError(t, synth.Write(dir, fixtures[fx]))
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		for _, name := range mapping.BuiltinNames() {
			p, err := mapping.Builtin(name)
			require.NoError(t, err)
			for _, mesh := range []mapping.Mesh{{Rows: 1, Cols: 1}, {Rows: 1, Cols: 2}} {
				plan, err := mapping.BuildWith(c, p, mesh, nil, nil)
				if err != nil {
					t.Logf("%s %s %s: not planned: %v", fx, name, mesh, err)
					continue
				}
				what := fmt.Sprintf("%s %s %s", fx, name, mesh)
				for _, e := range plan.Entries {
					seen[e.DType+" "+e.Layout] = true
					seen[e.Placement.Kind] = true
					if e.MatrixRows%32 != 0 || e.MatrixCols%32 != 0 {
						seen["partial tiles"] = true
					}
				}
				var streamedReads, readBacks, compared atomic.Int64
				o := build.WriteOptions{Workers: 2, BandBytes: 4096, NoSync: true}
				streamed, err := build.WriteHooked(context.Background(), c, plan, filepath.Join(t.TempDir(), "a"),
					build.HashStreamed(build.Hook(o), func(string) { streamedReads.Add(1) }))
				require.NoError(t, err, what)
				require.Len(t, streamed.Built, len(plan.Entries), what)
				require.Zero(t, streamedReads.Load(), "%s: files read back", what)
				back, err := build.WriteHooked(context.Background(), c, plan, filepath.Join(t.TempDir(), "b"),
					build.HashReadBack(build.Hook(o), func(string) { readBacks.Add(1) }))
				require.NoError(t, err, what)
				require.EqualValues(t, len(plan.Entries), readBacks.Load(), what)
				_, err = build.WriteHooked(context.Background(), c, plan, filepath.Join(t.TempDir(), "c"),
					build.HashCompare(build.Hook(o), func(string) { compared.Add(1) }))
				require.NoError(t, err, what)
				require.EqualValues(t, len(plan.Entries), compared.Load(), what)
				require.Equal(t, records(back.Manifest), records(streamed.Manifest), what)
			}
		}
	}
	var kinds []string
	for k := range seen {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	t.Logf("covered: %v", kinds)
	for _, k := range []string{"BFLOAT16 TILE", "BFLOAT8_B TILE", "BFLOAT4_B TILE", "replicate", "shard", "partial tiles"} {
		require.True(t, seen[k], "no %s target in the fixtures' plans (covered: %v)", k, kinds)
	}
	require.True(t, seen["BFLOAT16 ROW_MAJOR"] || seen["FLOAT32 ROW_MAJOR"], "no row-major target (covered: %v)", kinds)
}

// records are a manifest's file records without their mtimes.
func records(m *cache.Manifest) []cache.FileRecord {
	out := append([]cache.FileRecord(nil), m.Files...)
	for i := range out {
		out[i].MTimeNS = 0
	}
	return out
}

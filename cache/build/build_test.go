package cache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/cache/tile"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

// fixture writes a checkpoint with opts, opens it and builds its plan.
func fixture(t *testing.T, opts synth.Options) (string, *ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "src")
	require.NoError(t, synth.Write(dir, opts))
	c, plan := openPlan(t, dir)
	return dir, c, plan
}

func openPlan(t testing.TB, dir string) (*ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	return cachetest.OpenPlan(t, dir)
}

// checkAgainstMaterialize decodes every file of a built cache and compares
// it with Entry.Materialize: bytes equal to packing the materialised shard
// with the same packer, and decoded values within the format's error.
func checkAgainstMaterialize(t *testing.T, c *ckpt.Checkpoint, plan *mapping.Plan, out string) {
	t.Helper()
	ctx := context.Background()
	for _, e := range plan.Entries {
		path := filepath.Join(out, filepath.FromSlash(e.File))
		f, err := os.Open(path)
		require.NoError(t, err, e.Target)
		st, err := f.Stat()
		require.NoError(t, err)
		h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
		require.NoError(t, err, e.Target)
		want, err := cache.HeaderFor(e)
		require.NoError(t, err)
		require.Empty(t, cache.DiffHeaders(want, h), e.Target)
		require.Equal(t, want.FileSize(), st.Size(), e.Target)
		shards, shape, err := e.Materialize(ctx, c)
		require.NoError(t, err, e.Target)
		require.Len(t, h.Shards, len(shards), e.Target)
		for i, vals := range shards {
			got, err := io.ReadAll(tensorbin.ShardSection(f, h, i))
			require.NoError(t, err)
			exp, err := cache.PackShard(e, vals)
			require.NoError(t, err)
			require.True(t, bytes.Equal(exp, got), "%s shard %d: bytes differ from packing Materialize's output", e.Target, i)
			checkDecoded(t, e, h.Spec.DType, h.Spec.Layout, shape, vals, got)
		}
		f.Close()
	}
}

// checkDecoded decodes a shard (untilizing TILE data) and checks each
// value against the materialised one within the format's error: exact for
// bf16-representable values in BFLOAT16, else one unit in the last place
// of the 16-value face row's shared exponent (bounded by the row's largest
// magnitude times 2^-6 for BFLOAT8_B, 2^-2 for BFLOAT4_B).
func checkDecoded(t *testing.T, e *mapping.Entry, dt tile.DType, layout tile.Layout, shape []int64, want []float32, data []byte) {
	t.Helper()
	n := len(want)
	got := make([]float32, n)
	if layout == tile.ROW_MAJOR {
		require.Equal(t, tile.BFLOAT16, dt)
		for i := range got {
			got[i] = ckpt.BF16ToF32(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
		}
	} else {
		h, w, outer := 1, int(shape[len(shape)-1]), 1
		if len(shape) >= 2 {
			h = int(shape[len(shape)-2])
			for _, d := range shape[:len(shape)-2] {
				outer *= int(d)
			}
		}
		per := tile.TilesBytes(dt, h, w)
		for o := 0; o < outer; o++ {
			require.NoError(t, tile.UnpackTiles(dt, got[o*h*w:(o+1)*h*w], data[o*per:], h, w))
		}
	}
	w := int(shape[len(shape)-1])
	rel := map[tile.DType]float64{tile.BFLOAT16: 1.0 / 256, tile.BFLOAT8_B: 1.0 / 64, tile.BFLOAT4_B: 1.0 / 4}[dt]
	// Face rows: 16 values of a row from a column that is a multiple of 16
	// (a row's last one may be shorter when w is not a multiple of 16).
	for i0 := 0; i0 < n; {
		row := i0 / w
		end := min(i0+16, (row+1)*w, n)
		next := end
		var amax float64
		for i := i0; i < end; i++ {
			amax = math.Max(amax, math.Abs(float64(want[i])))
		}
		for i := i0; i < end; i++ {
			d := math.Abs(float64(got[i]) - float64(want[i]))
			// require only on failure: a call per value costs seconds.
			if dt == tile.BFLOAT16 {
				if d > math.Abs(float64(want[i]))*rel {
					require.LessOrEqual(t, d, math.Abs(float64(want[i]))*rel, "%s value %d", e.Target, i)
				}
				continue
			}
			if d > amax*rel {
				require.LessOrEqual(t, d, amax*rel, "%s value %d: got %v want %v", e.Target, i, got[i], want[i])
			}
		}
		i0 = next
	}
}

func TestBuildMatchesMaterialize(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	// Small bands force staging across band boundaries and partial tiles.
	res, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 3, BandBytes: 2048, ToolVersion: "test"})
	require.NoError(t, err)
	require.Len(t, res.Built, len(plan.Entries))
	require.Empty(t, res.Skipped)
	checkAgainstMaterialize(t, c, plan, out)

	m, err := cache.ReadManifest(cache.FolderOf(out, plan.CacheDir).Path())
	require.NoError(t, err)
	require.Len(t, m.Files, len(plan.Entries))
	require.Equal(t, mapping.BuiltinName, m.Profile)
	require.NotNil(t, m.Pinned)
	for _, f := range m.Files {
		require.NotEmpty(t, f.DataXXH3)
		for _, s := range f.Sources {
			require.Len(t, s.XXH3, 16, "%s source %s", f.Path, s.Name)
		}
	}
	_, err = os.Stat(filepath.Join(cache.FolderOf(out, plan.CacheDir).Path(), cache.JournalName))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestBuildBlockFP8128MatchesMaterialize builds Large's layout (block-FP8
// with [128, 128] blocks, BFLOAT4_B MLP targets, the tile-interleaved
// gate|up) at hidden 256, with fsync off, and checks every file against
// Entry.Materialize.
func TestBuildBlockFP8128MatchesMaterialize(t *testing.T) {
	t.Parallel()
	o := synth.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 256, 512, 4, 2, 2, 64
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 2, 2, 64, 64, 256
	_, c, plan := fixture(t, o)
	out := filepath.Join(t.TempDir(), "cache")
	res, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, BandBytes: 32 << 10, NoSync: true})
	require.NoError(t, err)
	require.Len(t, res.Built, len(plan.Entries))
	checkAgainstMaterialize(t, c, plan, out)
}

func TestBuildBandSizesAgree(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	var first *cache.Manifest
	for _, band := range []int64{512, 4096, 1 << 20} {
		out := filepath.Join(t.TempDir(), "cache")
		res, err := cache.Build(context.Background(), c, plan, out, cache.BuildOptions{Workers: 2, BandBytes: band})
		require.NoError(t, err)
		if first == nil {
			first = res.Manifest
			continue
		}
		for i, f := range res.Manifest.Files {
			require.Equal(t, first.Files[i].DataXXH3, f.DataXXH3, "band %d: %s", band, f.Path)
		}
	}
}

// TestBuildNoSyncRecordsBoot: files written without fsync carry the boot
// id until a durable build syncs them; after a reboot (another boot id in
// the manifest) a rebuild keeps only files whose bytes are still the
// recorded ones and rebuilds a file whose data was lost.
func TestBuildNoSyncRecordsBoot(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	ctx := context.Background()
	res, err := cache.Build(ctx, c, plan, out, cache.BuildOptions{NoSync: true})
	require.NoError(t, err)
	for _, f := range res.Manifest.Files {
		require.NotEmpty(t, f.UnsyncedBoot, f.Path)
	}
	boot := res.Manifest.Files[0].UnsyncedBoot

	// A durable rebuild in the same boot syncs the kept files.
	res, err = cache.Build(ctx, c, plan, out, cache.BuildOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Built)
	for _, f := range res.Manifest.Files {
		require.Empty(t, f.UnsyncedBoot, f.Path)
	}

	// Unsynced again, then "rebooted": one file lost a byte of data
	// (size and mtime kept, as after a crash that lost its pages).
	_, err = cache.Build(ctx, c, plan, out, cache.BuildOptions{NoSync: true, Force: true})
	require.NoError(t, err)
	m, err := cache.ReadManifest(dir)
	require.NoError(t, err)
	if boot == "unknown" {
		t.Log("no boot id on this system: every unsynced file is rehashed")
	}
	var lost cache.FileRecord
	for i := range m.Files {
		m.Files[i].UnsyncedBoot = "another-boot"
		if lost.Path == "" && m.Files[i].Size > int64(m.Files[i].HeaderSize)+16 {
			lost = m.Files[i]
		}
	}
	p := filepath.Join(out, filepath.FromSlash(lost.Path))
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{0xA5, 0x5A, 0xA5, 0x5A}, lost.Size-4)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	mt := time.Unix(0, lost.MTimeNS)
	require.NoError(t, os.Chtimes(p, mt, mt))
	js, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, cache.ManifestName), js, 0o644))

	res, err = cache.Build(ctx, c, plan, out, cache.BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{lost.Path}, res.Built)
	require.Len(t, res.Skipped, len(m.Files)-1)
	for _, f := range res.Manifest.Files {
		require.Empty(t, f.UnsyncedBoot, f.Path)
	}
	checkAgainstMaterialize(t, c, plan, out)
}

package build_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture writes a checkpoint with opts, opens it and builds its plan.
func fixture(t *testing.T, opts synth.Options) (string, *ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	return cachetest.Fixture(t, opts)
}

func openPlan(t testing.TB, dir string) (*ckpt.Checkpoint, *mapping.Plan) {
	t.Helper()
	return cachetest.OpenPlan(t, dir)
}

// checkAgainstMaterialize is cachetest.CheckAgainstMaterialize with the
// build's packer.
func checkAgainstMaterialize(t *testing.T, c *ckpt.Checkpoint, plan *mapping.Plan, out string) {
	t.Helper()
	cachetest.CheckAgainstMaterialize(t, c, plan, out, build.PackShard)
}

func TestBuildMatchesMaterialize(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	// Small bands force staging across band boundaries and partial tiles.
	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 3, BandBytes: 2048, ToolVersion: "test"})
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
	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, BandBytes: 32 << 10, NoSync: true})
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
		res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2, BandBytes: band})
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
	res, err := build.Write(ctx, c, plan, out, build.WriteOptions{NoSync: true})
	require.NoError(t, err)
	for _, f := range res.Manifest.Files {
		require.NotEmpty(t, f.UnsyncedBoot, f.Path)
	}
	boot := res.Manifest.Files[0].UnsyncedBoot

	// A durable rebuild in the same boot syncs the kept files.
	res, err = build.Write(ctx, c, plan, out, build.WriteOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Built)
	for _, f := range res.Manifest.Files {
		require.Empty(t, f.UnsyncedBoot, f.Path)
	}

	// Unsynced again, then "rebooted": one file lost a byte of data
	// (size and mtime kept, as after a crash that lost its pages).
	_, err = build.Write(ctx, c, plan, out, build.WriteOptions{NoSync: true, Force: true})
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

	res, err = build.Write(ctx, c, plan, out, build.WriteOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{lost.Path}, res.Built)
	require.Len(t, res.Skipped, len(m.Files)-1)
	for _, f := range res.Manifest.Files {
		require.Empty(t, f.UnsyncedBoot, f.Path)
	}
	checkAgainstMaterialize(t, c, plan, out)
}

// TestBuildRebuildsUnpackedFiles: files that an unpacked manifest
// (cache.Unpacked) describes are never kept as unchanged on its word: a
// rebuild writes each from the source, says so, and writes a manifest
// without the mark, which the next rebuild trusts.
func TestBuildRebuildsUnpackedFiles(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	ctx := context.Background()
	_, err := build.Write(ctx, c, plan, out, build.WriteOptions{NoSync: true})
	require.NoError(t, err)
	m, err := cache.ReadManifest(dir)
	require.NoError(t, err)
	m.Unpacked = &cache.Unpacked{Archive: "shipped.tar.zst"}
	require.NoError(t, cache.WriteManifest(dir, m))

	res, err := build.Write(ctx, c, plan, out, build.WriteOptions{NoSync: true})
	require.NoError(t, err)
	assert.Empty(t, res.Skipped)
	assert.Len(t, res.Built, len(plan.Entries))
	assert.Len(t, res.FromArchive, len(plan.Entries))
	assert.Contains(t, res.Notes(), fmt.Sprintf("%d files came from shipped.tar.zst (cache unpack): rebuilt from the source, as an archive's manifest is no proof of what they were built from", len(plan.Entries)))
	assert.Nil(t, res.Manifest.Unpacked)

	res, err = build.Write(ctx, c, plan, out, build.WriteOptions{NoSync: true})
	require.NoError(t, err)
	assert.Empty(t, res.Built)
	assert.Empty(t, res.FromArchive)
}

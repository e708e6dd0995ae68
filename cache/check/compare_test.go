package check_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyTree copies a directory tree into a temporary directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, cachetest.CopyTree(src, dst))
	return dst
}

func inject(t *testing.T, cdir string, plan *mapping.Plan) cachetest.Injected {
	t.Helper()
	inj, err := cachetest.Inject(cdir, plan)
	require.NoError(t, err)
	return inj
}

// byFile groups differences by file.
func byFile(rep *compare.Report) map[string][]compare.Difference {
	m := map[string][]compare.Difference{}
	for _, d := range rep.Diffs {
		m[d.File] = append(m[d.File], d)
	}
	return m
}

// fieldsByFile lists each file's differences as kind:field.
func fieldsByFile(m map[string][]compare.Difference) map[string][]string {
	out := map[string][]string{}
	for f, ds := range m {
		for _, d := range ds {
			out[f] = append(out[f], string(d.Kind)+":"+d.Field)
		}
	}
	return out
}

func TestCompareCaches(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))
	ctx := context.Background()

	self, err := compare.Dirs(ctx, cdir, cdir, compare.DirsOptions{})
	require.NoError(t, err)
	assert.True(t, self.Same(), "%v", self.Diffs)
	assert.Equal(t, len(plan.Entries), self.Common)
	assert.Equal(t, self.Common, self.Identical)
	assert.Positive(t, self.Bytes)

	copied := copyTree(t, cdir)
	inj := inject(t, copied, plan)
	// Small chunks (two tiles) exercise the chunked streaming.
	rep, err := compare.Dirs(ctx, cdir, copied, compare.DirsOptions{ChunkBytes: 2048, Workers: 3})
	require.NoError(t, err)
	require.False(t, rep.Same())
	assert.False(t, rep.Unreadable())
	got := byFile(rep)
	assert.Equal(t, inj.Want(true), fieldsByFile(got))
	assert.Equal(t, "[Replicate, Shard(2)]", got[inj.Topology][1].A)
	assert.Equal(t, "[Shard(2)]", got[inj.Topology][1].B)
	assert.Equal(t, "BFLOAT8_B", got[inj.DType][0].A)
	assert.Equal(t, "BFLOAT4_B", got[inj.DType][0].B)
	assert.Contains(t, got[inj.Memory][0].B, "WidthSharded")
	d := got[inj.Flipped][0]
	require.NotNil(t, d.Shard)
	assert.Equal(t, inj.FlippedShard, *d.Shard)
	assert.Equal(t, []uint32{0, 1}, d.Device)
	require.NotNil(t, d.Tile)
	assert.Equal(t, int64(inj.FlippedTile), *d.Tile)
	assert.Equal(t, int64(1), *d.TileRow, "tiles are row-major over a 5 x 4 grid")
	assert.Equal(t, int64(2), *d.TileCol)
	assert.Equal(t, inj.FlippedByte, *d.FirstByte)
	assert.Equal(t, int64(1), d.DiffUnits)
	require.NotNil(t, d.MaxAbsDiff)
	assert.Positive(t, *d.MaxAbsDiff)
	assert.Contains(t, d.Message, "first differing tile 6")

	// The dtype change also makes the data decode differently, but the
	// bytes are equal: no data difference for that file.
	for _, x := range got[inj.DType] {
		assert.NotEqual(t, compare.DiffData, x.Kind)
	}
}

func TestCompareUnreadable(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))
	copied := copyTree(t, cdir)
	f := filepath.Join(copied, filepath.FromSlash(strings.TrimPrefix(entryFile(t, plan, "layers.0/tp/A_log"), plan.CacheDir+"/")))
	require.NoError(t, os.WriteFile(f, []byte("not a tensorbin"), 0o644))
	rep, err := compare.Dirs(context.Background(), cdir, copied, compare.DirsOptions{})
	require.NoError(t, err)
	assert.True(t, rep.Unreadable())
	_, err = compare.Dirs(context.Background(), cdir, filepath.Join(copied, "nope"), compare.DirsOptions{})
	assert.Error(t, err)
}

func TestCheckPlanAgainstCache(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))

	// The cache root and the cache directory both work.
	for _, dir := range []string{out, cdir} {
		rep, err := check.PlanAgainst(plan, dir)
		require.NoError(t, err)
		assert.True(t, rep.Same(), "%v", rep.Diffs)
		assert.Equal(t, cdir, rep.B)
		assert.Equal(t, len(plan.Entries), rep.Identical)
	}

	copied := copyTree(t, cdir)
	inj := inject(t, copied, plan)
	rep, err := check.PlanAgainst(plan, copied)
	require.NoError(t, err)
	got := byFile(rep)
	// No data is read: a flipped byte in a shard is invisible to the plan
	// check (cache compare finds it).
	assert.Equal(t, inj.Want(false), fieldsByFile(got))
	assert.Equal(t, "layers.0/tp/qkvzab.il", got[inj.RenamedFrom][0].Target)
	assert.Contains(t, got[inj.RenamedTo][0].Message, "the plan has "+inj.RenamedFrom, "a renamed file names its planned twin")
	assert.Equal(t, "[1,2]", got[inj.Topology][0].A, "the plan's 2-D distribution")

	// A plan built with other switches names exactly the renamed files.
	c, _ := openPlan(t, filepath.Join(filepath.Dir(plan.Source), filepath.Base(plan.Source)))
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	other, err := mapping.BuildWith(c, p, plan.Mesh, mapping.Settings{"proj_1d_decode": false}, nil)
	require.NoError(t, err)
	rep, err = check.PlanAgainst(other, cdir)
	require.NoError(t, err)
	kinds := map[compare.Kind]int{}
	for _, d := range rep.Diffs {
		kinds[d.Kind]++
	}
	// Small: 3 GDN qkvzab + 1 attention wqkv + 1 MTP wqkv renamed.
	assert.Equal(t, map[compare.Kind]int{compare.DiffMissing: 5, compare.DiffExtra: 5}, kinds)
}

// TestBuild2DMapperHeaders: the files of ShardTensor2dMesh targets parse
// back with the 2-D topology of the 1x2 mesh.
func TestBuild2DMapperHeaders(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	for target, dim := range map[string]int32{"tok_embeddings.weight": 3, "layers.2.input_layernorm.weight_distributed": 2,
		"norm.weight_distributed": 2, "mtp/mtp.pre_fc_norm_hidden.weight_distributed": 2} {
		h, err := tensorbin.ReadTensorbinFile(filepath.Join(out, filepath.FromSlash(entryFile(t, plan, target))))
		require.NoError(t, err, target)
		assert.Equal(t, []uint32{1, 2}, h.MeshShape, target)
		require.NotNil(t, h.Topology, target)
		assert.Equal(t, []uint32{1, 2}, h.Topology.DistributionShape, target)
		assert.Equal(t, []tensorbin.Placement{{Shard: false, Dim: -1}, {Shard: true, Dim: dim}}, h.Topology.Placements, target)
		assert.Equal(t, [][]uint32{{0, 0}, {0, 1}}, h.Topology.MeshCoords, target)
		require.Len(t, h.Shards, 2, target)
		assert.Equal(t, []uint32{0, 1}, h.Shards[1].Coord, target)
	}
	// A 1-D ShardTensorToMesh target keeps distribution [2], [Shard(-1)].
	h, err := tensorbin.ReadTensorbinFile(filepath.Join(out, filepath.FromSlash(entryFile(t, plan, "mtp/fc"))))
	require.NoError(t, err)
	assert.Equal(t, []uint32{2}, h.Topology.DistributionShape)
	assert.Equal(t, []tensorbin.Placement{{Shard: true, Dim: -1}}, h.Topology.Placements)
}

// TestHeaders27BMesh1x2: the header cache build writes for every file of the
// 27B FP8 plan at 1x2 (HeaderFor): DRAM interleaved everywhere (no
// .dramshard layout), the 2-D topology on tok_embeddings.weight and every
// _distributed norm, the 1-D one on the other sharded files.
func TestHeaders27BMesh1x2(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := synth.WriteInventoryEdited(dir, "fp8", nil)
	require.NoError(t, err)
	_, plan := openPlan(t, dir)
	require.Len(t, plan.Entries, 997)
	twoD := 0
	for _, e := range plan.Entries {
		h, err := cache.HeaderFor(e)
		require.NoError(t, err, e.Target)
		assert.Equal(t, tensorbin.InterleavedConfig(), h.Spec.Memory, e.Target)
		assert.NotContains(t, e.File, "dramshard")
		switch {
		case e.Target == "tok_embeddings.weight" || strings.HasSuffix(e.Target, "_distributed"):
			twoD++
			assert.Equal(t, []uint32{1, 2}, h.Topology.DistributionShape, e.Target)
			assert.Equal(t, "[Replicate, Shard("+map[bool]string{true: "3", false: "2"}[e.Target == "tok_embeddings.weight"]+")]",
				cache.FormatPlacements(h.Topology.Placements), e.Target)
		case e.Placement.Kind == "shard":
			assert.Equal(t, []uint32{2}, h.Topology.DistributionShape, e.Target)
		default:
			assert.Equal(t, []uint32{1}, h.Topology.DistributionShape, e.Target)
		}
	}
	// 64 layers x 2 norms + final norm + 3 MTP norms + 2 MTP layer norms, + the embedding.
	assert.Equal(t, 64*2+1+3+2+1, twoD)
}

package cache_test

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// copyTree copies a directory tree (regular files only).
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, r), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, r), b, 0o644)
	}))
	return dst
}

// rewriteHeader rewrites a .tensorbin file with an edited header and the
// same shard bytes.
func rewriteHeader(t *testing.T, path string, edit func(h *tensorbin.Header)) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	st, err := f.Stat()
	require.NoError(t, err)
	h, err := tensorbin.ReadTensorbinHeader(f, st.Size())
	require.NoError(t, err)
	var shards [][]byte
	for i := range h.Shards {
		b, err := io.ReadAll(tensorbin.ShardSection(f, h, i))
		require.NoError(t, err)
		shards = append(shards, b)
	}
	f.Close()
	edit(h)
	out, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, tensorbin.WriteTensorbin(out, h, shards))
	require.NoError(t, out.Close())
}

// injected names the five differences the tests inject into a copy of a
// built cache, by file relative to the cache directory.
type injected struct {
	renamedFrom, renamedTo, topology, dtype, memory, flipped string
	flippedShard, flippedTile                                int
}

// inject damages a copy of the cache directory cdir (the plan's
// tensor_cache_... directory) in five ways, one file each.
func inject(t *testing.T, cdir string, plan *mapping.Plan) injected {
	t.Helper()
	rel := func(target string) string {
		return strings.TrimPrefix(entryFile(t, plan, target), plan.CacheDir+"/")
	}
	inj := injected{
		renamedFrom: rel("layers.0/tp/qkvzab.il"),
		topology:    rel("layers.2.input_layernorm.weight_distributed"),
		dtype:       rel("layers.1/tp/out"),
		memory:      rel("layers.3/tp/wqkv_fused_qkvg.il"),
		flipped:     rel("layers.1/mlp.down_proj.weight.tp"),
		// layers.1 down_proj: [160, 128] bfp8 per device = 5 x 4 tiles.
		flippedShard: 1, flippedTile: 6,
	}
	inj.renamedTo = strings.Replace(inj.renamedFrom, "qkvzab.il", "qkvzab.dramshard", 1)
	p := func(r string) string { return filepath.Join(cdir, filepath.FromSlash(r)) }
	require.NoError(t, os.Rename(p(inj.renamedFrom), p(inj.renamedTo)))
	rewriteHeader(t, p(inj.topology), func(h *tensorbin.Header) {
		// The 1-D ShardTensorToMesh topology instead of ShardTensor2dMesh's.
		h.Topology.DistributionShape = []uint32{2}
		h.Topology.Placements = []tensorbin.Placement{tensorbin.PlacementShard(2)}
	})
	rewriteHeader(t, p(inj.dtype), func(h *tensorbin.Header) { h.Spec.DType = 4 }) // BFLOAT4_B
	rewriteHeader(t, p(inj.memory), func(h *tensorbin.Header) {
		h.Spec.Memory = tensorbin.DRAMWidthSharded(int(h.Spec.Shape[0]), int(h.Spec.Shape[1]))
	})
	h, err := tensorbin.ReadTensorbinFile(p(inj.flipped))
	require.NoError(t, err)
	f, err := os.OpenFile(p(inj.flipped), os.O_RDWR, 0)
	require.NoError(t, err)
	at := int64(h.DataOffset+h.Shards[inj.flippedShard].Offset) + int64(inj.flippedTile)*1088 + 64 + 300 // a code byte of tile 6
	var b [1]byte
	_, err = f.ReadAt(b[:], at)
	require.NoError(t, err)
	b[0] ^= 0x11
	_, err = f.WriteAt(b[:], at)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return inj
}

// byFile groups differences by file.
func byFile(rep *cache.CompareReport) map[string][]cache.Difference {
	m := map[string][]cache.Difference{}
	for _, d := range rep.Diffs {
		m[d.File] = append(m[d.File], d)
	}
	return m
}

func fields(ds []cache.Difference) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Kind+":"+d.Field)
	}
	return out
}

func TestCompareCaches(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))
	ctx := context.Background()

	self, err := cache.Compare(ctx, cdir, cdir, cache.CompareOptions{})
	require.NoError(t, err)
	assert.True(t, self.Same(), "%v", self.Diffs)
	assert.Equal(t, len(plan.Entries), self.Common)
	assert.Equal(t, self.Common, self.Identical)
	assert.Positive(t, self.Bytes)

	copied := copyTree(t, cdir)
	inj := inject(t, copied, plan)
	// Small chunks (two tiles) exercise the chunked streaming.
	rep, err := cache.Compare(ctx, cdir, copied, cache.CompareOptions{ChunkBytes: 2048, Workers: 3})
	require.NoError(t, err)
	require.False(t, rep.Same())
	assert.False(t, rep.Unreadable())
	got := byFile(rep)
	assert.Len(t, got, 6, "%v", rep.Diffs)
	assert.Equal(t, []string{"missing:"}, fields(got[inj.renamedFrom]))
	assert.Equal(t, []string{"extra:"}, fields(got[inj.renamedTo]))
	assert.Equal(t, []string{"header:topology.distribution_shape", "header:topology.placements"}, fields(got[inj.topology]))
	assert.Equal(t, "[Replicate, Shard(2)]", got[inj.topology][1].A)
	assert.Equal(t, "[Shard(2)]", got[inj.topology][1].B)
	assert.Equal(t, []string{"header:dtype"}, fields(got[inj.dtype]))
	assert.Equal(t, "BFLOAT8_B", got[inj.dtype][0].A)
	assert.Equal(t, "BFLOAT4_B", got[inj.dtype][0].B)
	assert.Equal(t, []string{"header:memory_config"}, fields(got[inj.memory]))
	assert.Contains(t, got[inj.memory][0].B, "WidthSharded")
	require.Equal(t, []string{"data:"}, fields(got[inj.flipped]))
	d := got[inj.flipped][0]
	require.NotNil(t, d.Shard)
	assert.Equal(t, inj.flippedShard, *d.Shard)
	assert.Equal(t, []uint32{0, 1}, d.Device)
	require.NotNil(t, d.Tile)
	assert.Equal(t, int64(inj.flippedTile), *d.Tile)
	assert.Equal(t, int64(1), *d.TileRow, "tiles are row-major over a 5 x 4 grid")
	assert.Equal(t, int64(2), *d.TileCol)
	assert.Equal(t, int64(inj.flippedTile*1088+64+300), *d.FirstByte)
	assert.Equal(t, int64(1), d.DiffUnits)
	require.NotNil(t, d.MaxAbsDiff)
	assert.Positive(t, *d.MaxAbsDiff)
	assert.Contains(t, d.Message, "first differing tile 6")

	// The dtype change also makes the data decode differently, but the
	// bytes are equal: no data difference for that file.
	for _, x := range got[inj.dtype] {
		assert.NotEqual(t, cache.DiffData, x.Kind)
	}
}

func TestCompareUnreadable(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))
	copied := copyTree(t, cdir)
	f := filepath.Join(copied, filepath.FromSlash(strings.TrimPrefix(entryFile(t, plan, "layers.0/tp/A_log"), plan.CacheDir+"/")))
	require.NoError(t, os.WriteFile(f, []byte("not a tensorbin"), 0o644))
	rep, err := cache.Compare(context.Background(), cdir, copied, cache.CompareOptions{})
	require.NoError(t, err)
	assert.True(t, rep.Unreadable())
	_, err = cache.Compare(context.Background(), cdir, filepath.Join(copied, "nope"), cache.CompareOptions{})
	assert.Error(t, err)
}

func TestCheckPlanAgainstCache(t *testing.T) {
	t.Parallel()
	_, out, plan := built(t)
	cdir := filepath.Join(out, filepath.FromSlash(plan.CacheDir))

	// The cache root and the cache directory both work.
	for _, dir := range []string{out, cdir} {
		rep, err := cache.CheckPlan(plan, dir)
		require.NoError(t, err)
		assert.True(t, rep.Same(), "%v", rep.Diffs)
		assert.Equal(t, cdir, rep.B)
		assert.Equal(t, len(plan.Entries), rep.Identical)
	}

	copied := copyTree(t, cdir)
	inj := inject(t, copied, plan)
	rep, err := cache.CheckPlan(plan, copied)
	require.NoError(t, err)
	got := byFile(rep)
	assert.Len(t, got, 5, "%v", rep.Diffs)
	assert.Equal(t, []string{"missing:"}, fields(got[inj.renamedFrom]))
	assert.Equal(t, "layers.0/tp/qkvzab.il", got[inj.renamedFrom][0].Target)
	require.Equal(t, []string{"extra:"}, fields(got[inj.renamedTo]))
	assert.Contains(t, got[inj.renamedTo][0].Message, "the plan has "+inj.renamedFrom, "a renamed file names its planned twin")
	assert.Equal(t, []string{"header:topology.distribution_shape", "header:topology.placements"}, fields(got[inj.topology]))
	assert.Equal(t, "[1, 2]", got[inj.topology][0].A, "the plan's 2-D distribution")
	assert.Equal(t, []string{"header:dtype"}, fields(got[inj.dtype]))
	assert.Equal(t, []string{"header:memory_config"}, fields(got[inj.memory]))
	// No data is read: a flipped byte in a shard is invisible to the plan
	// check (cache compare finds it).
	assert.Empty(t, got[inj.flipped])

	// A plan built with other switches names exactly the renamed files.
	c, _ := openPlan(t, filepath.Join(filepath.Dir(plan.Source), filepath.Base(plan.Source)))
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	other, err := mapping.BuildWith(c, p, plan.Mesh, mapping.Settings{"proj_1d_decode": false})
	require.NoError(t, err)
	rep, err = cache.CheckPlan(other, cdir)
	require.NoError(t, err)
	kinds := map[string]int{}
	for _, d := range rep.Diffs {
		kinds[d.Kind]++
	}
	// Small: 3 GDN qkvzab + 1 attention wqkv + 1 MTP wqkv renamed.
	assert.Equal(t, map[string]int{cache.DiffMissing: 5, cache.DiffExtra: 5}, kinds)
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

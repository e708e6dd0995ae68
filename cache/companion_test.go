package cache_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// touch makes the empty files (slash paths under root) and their folders.
func touch(t *testing.T, root string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(root, filepath.FromSlash(f))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
}

const (
	wqkv4 = "visual.blocks.0.attention.wqkv_col.tp4_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	wqkv2 = "visual.blocks.0.attention.wqkv_col.tp2_dtype_BFLOAT8_B_layout_TILE.tensorbin"
	norm  = "visual.blocks.0.norm1weight_dtype_BFLOAT16_layout_TILE.tensorbin"
	text  = "norm.weight_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin"
)

// InferMesh tells the mesh of a vision folder named without one and
// without a manifest from its .tpN file names and the text folder beside
// it, says how, and refuses (*cache.MeshError naming the folder) when
// neither tells it, when the names give two widths, or when they and the
// text folder disagree. Before, such a folder had no mesh at all.
func TestInferMesh(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		files  []string // under the device folder D
		mesh   string
		from   string
		reason string
	}{
		{"names and text", []string{"tensor_cache_bfp8/" + wqkv4, "tensor_cache_bfp8/" + norm, "tensor_cache_bfp8_mesh1x4/" + text}, "1x4",
			"the .tp4 file names and the text folder D/tensor_cache_bfp8_mesh1x4 beside it", ""},
		{"names alone", []string{"tensor_cache_bfp8/" + wqkv2}, "1x2", "the .tp2 file names (no text folder beside it)", ""},
		{"text alone", []string{"tensor_cache_bfp8/" + norm, "tensor_cache_bfp8_mesh1x2/" + text}, "1x2",
			"the text folder D/tensor_cache_bfp8_mesh1x2 beside it (no file name ends in .tp<N>)", ""},
		{"names of one text folder of two", []string{"tensor_cache_bfp8/" + wqkv4, "tensor_cache_bfp8_mesh1x2/" + text, "tensor_cache_bfp8_mesh1x4/" + text}, "1x4",
			"the .tp4 file names and the text folder D/tensor_cache_bfp8_mesh1x4 beside it", ""},
		{"names disagree with text", []string{"tensor_cache_bfp8/" + wqkv4, "tensor_cache_bfp8_mesh1x2/" + text}, "", "",
			"its file names end in .tp4 (mesh 1x4, e.g. " + wqkv4 + "), and the text folder beside it, D/tensor_cache_bfp8_mesh1x2, is for mesh 1x2"},
		{"two widths", []string{"tensor_cache_bfp8/" + wqkv4, "tensor_cache_bfp8/" + wqkv2}, "", "",
			"its file names end in different mesh widths: .tp2 (1 file(s), e.g. " + wqkv2 + "), .tp4 (1 file(s), e.g. " + wqkv4 + ")"},
		{"nothing tells", []string{"tensor_cache_bfp8/" + norm}, "", "",
			"no file name ends in .tp<N>, no text folder (tensor_cache_<tag>_mesh1xN) is beside it, and it has no ckpt manifest"},
		{"two text folders, no names", []string{"tensor_cache_bfp8/" + norm, "tensor_cache_bfp8_mesh1x2/" + text, "tensor_cache_bfp8_mesh1x4/" + text}, "", "",
			"no file name ends in .tp<N>, and the text folders beside it are for meshes 1x2, 1x4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			touch(t, filepath.Join(root, "D"), tc.files...)
			f, err := cache.ResolveFolder(filepath.Join(root, "D", "tensor_cache_bfp8"), cache.Selector{})
			require.NoError(t, err)
			files, err := cache.TensorbinFiles(f.Path())
			require.NoError(t, err)
			inf, err := cache.InferMesh(f, files)
			if tc.reason != "" {
				var me *cache.MeshError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, "vision folder "+f.Path()+": cannot tell its mesh: "+tc.reason, err.Error())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, cache.MeshInference{Mesh: tc.mesh, From: tc.from}, inf)
		})
	}
}

// A stack's cache root (no manifests) holding a text folder and the vision
// folder beside it is one model: it resolves to the text folder, whose
// companion is the vision folder; a device folder resolves as its root
// does (before: an ambiguous root of two folders, and a device folder that
// held "no cache folder").
func TestStackModelFolders(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	touch(t, filepath.Join(root, "P300"), "tensor_cache_bfp8/"+wqkv2, "tensor_cache_bfp8_mesh1x2/"+text)
	for _, dir := range []string{root, filepath.Join(root, "P300")} {
		f, err := cache.ResolveFolder(dir, cache.Selector{})
		require.NoError(t, err, dir)
		assert.Equal(t, "P300/tensor_cache_bfp8_mesh1x2", f.Dir)
		assert.Equal(t, root, f.Root)
		comp, named, exists, ok := cache.FindCompanion(f)
		require.True(t, ok)
		assert.False(t, named, "no manifest names it")
		assert.True(t, exists)
		assert.Equal(t, "P300/tensor_cache_bfp8", comp.Dir)
	}
	fs, err := cache.Folders(filepath.Join(root, "P300"))
	require.NoError(t, err)
	require.Len(t, fs, 2)
	assert.Equal(t, "P300/tensor_cache_bfp8", fs[0].Dir)
	// An unmeshed folder that holds no vision file is no companion.
	other := t.TempDir()
	touch(t, filepath.Join(other, "P300"), "tensor_cache_bfp8/"+text, "tensor_cache_bfp8_mesh1x2/"+text)
	_, err = cache.ResolveFolder(other, cache.Selector{})
	var amb *cache.AmbiguousCacheError
	require.ErrorAs(t, err, &amb)
}

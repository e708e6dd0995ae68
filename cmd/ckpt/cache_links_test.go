package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/cache/list"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const smallFolder = "P300/tensor_cache_bfp8_mesh1x2"

// builtPair builds the small fixture's cache ("ours") and a copy
// ("theirs"); it returns the source and both cache roots.
func builtPair(t *testing.T) (dir, src, ours, theirs string) {
	t.Helper()
	dir = t.TempDir()
	src = filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	ours, theirs = filepath.Join(dir, "ours"), filepath.Join(dir, "theirs")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", ours, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	require.NoError(t, cachetest.CopyTree(ours, theirs))
	return dir, src, ours, theirs
}

// moveToLink moves path elsewhere (under dir/elsewhere) and leaves a
// symbolic link to it in its place.
func moveToLink(t *testing.T, dir, path string) {
	t.Helper()
	away := filepath.Join(dir, "elsewhere", strings.ReplaceAll(strings.TrimPrefix(path, dir), string(filepath.Separator), "_"))
	require.NoError(t, os.MkdirAll(filepath.Dir(away), 0o755))
	require.NoError(t, os.Rename(path, away))
	require.NoError(t, os.Symlink(away, path))
}

// tensorbinIn returns the slash path, under folder, of the one .tensorbin
// file whose path contains part.
func tensorbinIn(t *testing.T, folder, part string) string {
	t.Helper()
	es, err := cache.List(folder)
	require.NoError(t, err)
	var found []string
	for _, e := range es {
		if strings.Contains(e.Path, part) {
			found = append(found, e.Path)
		}
	}
	require.Len(t, found, 1, "%s in %s", part, folder)
	return found[0]
}

// TestCacheCompareFollowsLinks: cache folders given as symbolic links,
// and sub-folders that are symbolic links on both sides, are compared
// (the differing file is named, exit 1, "same": false); cache ls lists a
// linked folder's files; cache verify passes a cache whose folder and
// sub-folder are links and says what it trusted; a comparison of folders
// without any .tensorbin file is an error (exit 2), not "identical".
func TestCacheCompareFollowsLinks(t *testing.T) {
	t.Parallel()
	dir, src, ours, theirs := builtPair(t)
	a, b := filepath.Join(ours, smallFolder), filepath.Join(theirs, smallFolder)
	n := len(mustList(t, a))
	require.Greater(t, n, 10)
	// One byte of the last shard of a file in the layers.2 sub-folder differs.
	changed := tensorbinIn(t, a, "layers.2/tp/dt_bias")
	p := filepath.Join(b, filepath.FromSlash(changed))
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	data[len(data)-1] ^= 0x40
	require.NoError(t, os.WriteFile(p, data, 0o644))
	// Sub-folders linked on both sides, and both folders given as links.
	moveToLink(t, dir, filepath.Join(a, "layers.2"))
	moveToLink(t, dir, filepath.Join(b, "layers.2"))
	aLink, bLink := filepath.Join(dir, "A_link"), filepath.Join(dir, "B_link")
	require.NoError(t, os.Symlink(a, aLink))
	require.NoError(t, os.Symlink(b, bLink))

	code, stdout, stderr := runApp(t, "cache", "compare", aLink, bLink, "--progress", "none", "--format", "text")
	require.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stdout, changed)
	assert.Contains(t, stdout, "A "+aLink+" ("+strconv.Itoa(n)+" files) vs B "+bLink+" ("+strconv.Itoa(n)+" files)")
	assert.Contains(t, stdout, ": DIFFERENT")
	code, stdout, _ = runApp(t, "cache", "compare", aLink, bLink, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code)
	res := decodeCompare(t, stdout)
	assert.False(t, res.Same)
	assert.Equal(t, n, res.FilesA)
	assert.Equal(t, n, res.FilesB)
	assert.Equal(t, map[string][]string{changed: {"data:"}}, diffFields(res))

	// cache ls of a linked folder.
	code, stdout, stderr = runApp(t, "cache", "ls", aLink, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var ls list.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &ls))
	assert.Len(t, ls.Files, n)

	// cache verify of a root whose cache folder is a link (and holds one);
	// the model's vision folder beside it is a link too (a root without
	// it fails: the model is incomplete).
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "P300"), 0o755))
	require.NoError(t, os.Symlink(a, filepath.Join(root, smallFolder)))
	require.NoError(t, os.Symlink(filepath.Join(ours, "P300", "tensor_cache_bfp8"), filepath.Join(root, "P300", "tensor_cache_bfp8")))
	code, stdout, stderr = runApp(t, "cache", "verify", root, "--source", src, "--progress", "none", "--format", "text")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "ok: ")
	assert.Contains(t, stdout, "; sources trusted by file size and mtime, not read; --rehash reads them")
	code, stdout, stderr = runApp(t, "cache", "verify", root, "--source", src, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code, stdout+stderr)
	var all check.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	assert.True(t, all.OK)
	require.Len(t, all.Folders, 2, "the text folder and its vision folder")
	vr := all.Folders[1] // in the order of the folders' names: the vision folder first
	assert.Equal(t, filepath.Join(root, smallFolder), vr.Dir)
	assert.True(t, vr.OK)
	assert.False(t, vr.Rehash)
	assert.Equal(t, 0, vr.Rehashed)
	code, stdout, stderr = runApp(t, "cache", "verify", root, "--source", src, "--progress", "none", "--format", "text", "--rehash")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Regexp(t, `(?m); every source tensor read and hashed \([1-9][0-9]*\)$`, stdout)

	// Nothing to compare: exit 2, in text and JSON.
	e1, e2 := filepath.Join(dir, "empty1"), filepath.Join(dir, "empty2")
	require.NoError(t, os.MkdirAll(e1, 0o755))
	require.NoError(t, os.MkdirAll(e2, 0o755))
	for _, format := range []string{"text", "json"} {
		code, stdout, stderr = runApp(t, "cache", "compare", e1, e2, "--progress", "none", "--format", format)
		assert.Equal(t, 2, code, stdout)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "nothing to compare: neither "+e1+" nor "+e2+" holds a .tensorbin file")
	}
	code, _, stderr = runApp(t, "cache", "compare", a, e2, "--progress", "none")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "nothing to compare: "+e2+" holds no .tensorbin file")
}

func mustList(t *testing.T, dir string) []cache.ListEntry {
	t.Helper()
	es, err := cache.List(dir)
	require.NoError(t, err)
	return es
}

// TestCacheComparePadding: a change confined to the padding of a TILE
// tile (an element beyond a [1, 2] shard) is reported as padding, not as
// a decoded value difference (text and JSON; still exit 1).
func TestCacheComparePadding(t *testing.T) {
	t.Parallel()
	_, _, ours, theirs := builtPair(t)
	a, b := filepath.Join(ours, smallFolder), filepath.Join(theirs, smallFolder)
	rel := tensorbinIn(t, a, "layers.0/tp/dt_bias")
	p := filepath.Join(b, filepath.FromSlash(rel))
	h, err := tensorbin.ReadTensorbinFile(p)
	require.NoError(t, err)
	require.Equal(t, "BFLOAT16", h.Spec.DType.String())
	require.Equal(t, []uint32{1, 1, 2}, h.Spec.Shape)
	// Tile element (0, 5), in face 0 row 0: padding of a 1x2 matrix; 1.0.
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	one := binary.LittleEndian.AppendUint16(nil, 0x3f80)
	_, err = f.WriteAt(one, int64(h.DataOffset)+int64(h.Shards[0].Offset)+5*2)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	code, stdout, stderr := runApp(t, "cache", "compare", a, b, "--progress", "none", "--format", "text")
	require.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stdout, "1 differing tiles, only in their padding (beyond the 1x2 matrix): every value decodes the same")
	assert.NotContains(t, stdout, "decoded max abs difference")
	code, stdout, _ = runApp(t, "cache", "compare", a, b, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code)
	res := decodeCompare(t, stdout)
	require.Len(t, res.Diffs, 1)
	d := res.Diffs[0]
	assert.Equal(t, rel, d.File)
	assert.Equal(t, compare.DiffData, d.Kind)
	assert.EqualValues(t, 1, d.DiffUnits)
	assert.EqualValues(t, 1, d.PaddingUnits)
	assert.Nil(t, d.MaxAbsDiff)

	// A value inside the matrix as well: a decoded difference again.
	f, err = os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(binary.LittleEndian.AppendUint16(nil, 0x4000), int64(h.DataOffset)+int64(h.Shards[0].Offset)+1*2)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	code, stdout, _ = runApp(t, "cache", "compare", a, b, "--progress", "none", "--format", "json")
	require.Equal(t, 1, code)
	res = decodeCompare(t, stdout)
	require.Len(t, res.Diffs, 1)
	assert.EqualValues(t, 0, res.Diffs[0].PaddingUnits)
	require.NotNil(t, res.Diffs[0].MaxAbsDiff)
	assert.Positive(t, *res.Diffs[0].MaxAbsDiff)
	assert.Contains(t, res.Diffs[0].Message, "decoded max abs difference")
}

// Two builds of a NaN-holding source under the two NaN styles differ only
// in NaN bits: compare names them instead of "decoded max abs difference
// 0" alone, which read as if the values were the same.
func TestCacheCompareNaNBits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	require.NoError(t, ckpttest.SetNaN(src, "model.language_model.norm.weight", 1))
	var folders []string
	for _, style := range []string{"vector", "scalar"} {
		out := filepath.Join(dir, style)
		code, _, stderr := runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "--fsync=false", "--allow-nonfinite", "--nan", style)
		require.Equal(t, 0, code, stderr)
		folders = append(folders, filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"))
	}
	code, stdout, stderr := runApp(t, "cache", "compare", folders[0], folders[1], "--progress", "none", "--format", "text")
	require.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stdout, "norm.weight_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin")
	assert.Contains(t, stdout, "1 differing elements, decoded max abs difference 0; 1 element(s) NaN on both sides with different bits")
}

package archive

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pairRoot is a cache root holding an earlier copy of both folders of the
// tiny vision model (a file each that the archive does not hold) and
// another mesh's folder; it returns the root and the folders' paths.
func pairRoot(t *testing.T) (root, main, vision string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "root")
	main = filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
	vision = filepath.Join(root, filepath.FromSlash(cachetest.TinyVisionDir))
	mustWrite(t, filepath.Join(main, cache.ManifestName), "{}")
	mustWrite(t, filepath.Join(main, "a", "old.tensorbin"), "old")
	mustWrite(t, filepath.Join(vision, cache.ManifestName), "{}")
	mustWrite(t, filepath.Join(vision, "v", "old.tensorbin"), "old vision")
	mustWrite(t, filepath.Join(root, "P150", "tensor_cache_bfp8_mesh1x1", cache.ManifestName), "{}")
	return root, main, vision
}

func tarArchive(t *testing.T, es []cachetest.ArchiveEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, cachetest.WriteArchive(&b, es, nil))
	return b.Bytes()
}

func snap(t *testing.T, dir string) map[string]string {
	t.Helper()
	s, err := cachetest.SnapshotTree(dir)
	require.NoError(t, err)
	return s
}

// TestUnpackVisionPair: an archive of a vision model's two folders places
// both, whole (the old files of each gone and counted), into a cache root
// or beside the folder named, whichever of the two it is; nothing else of
// the root changes and no staging folder is left. (Before: the second
// manifest was "not in the manifest", a bad archive.)
func TestUnpackVisionPair(t *testing.T) {
	t.Parallel()
	es, m, v, err := cachetest.TinyVisionPair(3, 2)
	require.NoError(t, err)
	arch := tarArchive(t, es)
	for _, named := range []string{"", "main", "vision"} {
		t.Run("dest="+named, func(t *testing.T) {
			t.Parallel()
			root, mainDir, visionDir := pairRoot(t)
			dest := map[string]string{"": root, "main": mainDir, "vision": visionDir}[named]
			before := snap(t, root)
			u, err := Extract(context.Background(), bytes.NewReader(arch), dest, ExtractOptions{noSync: true, Archive: "/x/pair.tar.zst"})
			require.NoError(t, err)
			require.NotNil(t, u.Companion)
			assert.Equal(t, m.CacheDir, u.Manifest.CacheDir)
			assert.Equal(t, v.CacheDir, u.Companion.Manifest.CacheDir)
			assert.Equal(t, mainDir, u.Folder.Path())
			assert.Equal(t, visionDir, u.Companion.Folder.Path())
			assert.Empty(t, u.Missing)
			assert.True(t, u.Replaced)
			assert.Equal(t, []string{cachetest.TinyFolderDir + "/a/old.tensorbin"}, u.Dropped)
			assert.True(t, u.Companion.Replaced)
			assert.Equal(t, []string{cachetest.TinyVisionDir + "/v/old.tensorbin"}, u.Companion.Dropped)
			checkPlaced(t, u)
			checkPlaced(t, u.Companion)
			for _, dir := range []string{mainDir, visionDir} {
				got, err := cache.ReadManifest(dir)
				require.NoError(t, err)
				require.NotNil(t, got.Unpacked, dir)
				assert.Equal(t, "pair.tar.zst", got.Unpacked.Archive)
				assert.NoFileExists(t, filepath.Join(dir, cache.LockName), "the locks are released")
			}
			after := snap(t, root)
			assert.Empty(t, diffSnapshots(before, after, m.CacheDir+"/", v.CacheDir+"/"), "nothing else changed")
		})
	}
}

// TestUnpackVisionPairAllOrNothing: when anything about either folder
// fails — the second folder's data, its lock, the free space for both
// together, the swap of the folder placed last — the cache root is exactly
// as it was: neither folder is placed (the vision folder swapped in first
// is swapped back), nothing is left. (Before: no such archive unpacked.)
func TestUnpackVisionPairAllOrNothing(t *testing.T) {
	t.Parallel()
	es, m, v, err := cachetest.TinyVisionPair(3, 2)
	require.NoError(t, err)
	var mainBytes, visionBytes int64
	for _, f := range m.Files {
		mainBytes += f.Size
	}
	for _, f := range v.Files {
		visionBytes += f.Size
	}
	flipped := append([]cachetest.ArchiveEntry(nil), es...)
	last := &flipped[len(flipped)-1]
	last.Data = bytes.Clone(last.Data)
	last.Data[len(last.Data)-1] ^= 1
	cases := []struct {
		name    string
		entries []cachetest.ArchiveEntry
		opt     func(root string, opt *ExtractOptions)
		lock    bool // the vision folder held by another process
		check   func(t *testing.T, err error, root string)
	}{
		{"vision file damaged", flipped, nil, false, func(t *testing.T, err error, root string) {
			var b *BadArchiveError
			require.True(t, errors.As(err, &b), "%v", err)
			assert.Equal(t, last.Name, b.Entry)
			assert.Contains(t, b.Reason, "data hash")
		}},
		{"vision folder locked", es, nil, true, func(t *testing.T, err error, root string) {
			var l *cache.LockedError
			require.True(t, errors.As(err, &l), "%v", err)
		}},
		{"room for either, not both", es, func(root string, opt *ExtractOptions) {
			opt.freeBytes = func(string) (int64, bool) { return mainBytes + visionBytes - 1, true }
		}, false, func(t *testing.T, err error, root string) {
			require.ErrorIs(t, err, atomicfile.ErrWrite)
			mainDir := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
			visionDir := filepath.Join(root, filepath.FromSlash(cachetest.TinyVisionDir))
			assert.Contains(t, err.Error(), mainDir+": the archive's 5 files of the model's two folders (this one and "+visionDir+", on one file system) need ")
			assert.Contains(t, err.Error(), ckpt.FormatBytes(mainBytes+visionBytes))
			assert.Contains(t, err.Error(), ckpt.FormatBytes(mainBytes+visionBytes-1))
			assert.Contains(t, err.Error(), "is free beside the folders")
		}},
		{"main swap fails", es, func(root string, opt *ExtractOptions) {
			mainDir := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
			opt.exchange = func(stage, dir string) (string, error) {
				if dir == mainDir {
					return "", errors.New("injected failure")
				}
				return exchange(stage, dir)
			}
		}, false, func(t *testing.T, err error, root string) {
			require.ErrorIs(t, err, atomicfile.ErrWrite)
			assert.Contains(t, err.Error(), "injected failure")
		}},
		{"main swap fails, two renames where the file system cannot exchange", es, func(root string, opt *ExtractOptions) {
			mainDir := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
			opt.exchange = func(stage, dir string) (string, error) {
				if dir == mainDir {
					return "", errors.New("injected failure")
				}
				return swapRenames(stage, dir)
			}
		}, false, func(t *testing.T, err error, root string) {
			require.ErrorIs(t, err, atomicfile.ErrWrite)
			assert.Contains(t, err.Error(), "injected failure")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, _, visionDir := pairRoot(t)
			if tc.lock {
				l, err := cache.LockFolder(visionDir)
				require.NoError(t, err)
				defer l.Release()
			}
			before := snap(t, root)
			opt := ExtractOptions{noSync: true}
			if tc.opt != nil {
				tc.opt(root, &opt)
			}
			_, err := Extract(context.Background(), bytes.NewReader(tarArchive(t, tc.entries)), root, opt)
			require.Error(t, err)
			tc.check(t, err, root)
			assert.Equal(t, before, snap(t, root), "the cache root is as it was")
		})
	}
	// Each folder alone fits in that room: the check counts both.
	require.Less(t, mainBytes, mainBytes+visionBytes-1)
	require.Less(t, visionBytes, mainBytes+visionBytes-1)
}

// TestUnpackRefusesHostilePairs: a second manifest that is not the vision
// folder the first names, naming it back, of the same device, right after
// the first, once, is a bad archive naming that entry; the cache root is
// as it was.
func TestUnpackRefusesHostilePairs(t *testing.T) {
	t.Parallel()
	es, m, v, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	vEntry := func(fn func(v *cache.Manifest)) cachetest.ArchiveEntry {
		c := *v
		c.Files = append([]cache.FileRecord(nil), v.Files...)
		fn(&c)
		e := cachetest.ManifestEntry(&c)
		e.Name = es[1].Name
		return e
	}
	rest := es[2:]
	with := func(first ...cachetest.ArchiveEntry) []cachetest.ArchiveEntry {
		return append(append([]cachetest.ArchiveEntry(nil), first...), rest...)
	}
	// The vision folder's manifest first, the main one second.
	vFirst := cachetest.ManifestEntry(v)
	mSecond := cachetest.ManifestEntry(m)
	mSecond.Name = m.CacheDir + "/" + cache.ManifestName
	cases := []struct {
		name    string
		entries []cachetest.ArchiveEntry
		entry   string
		want    string
	}{
		{"names another companion", with(es[0], vEntry(func(v *cache.Manifest) { v.Companion = "P300/tensor_cache_bfp4_mesh1x2" })), es[1].Name,
			`names "P300/tensor_cache_bfp4_mesh1x2" as its companion`},
		{"not a vision part", with(es[0], vEntry(func(v *cache.Manifest) { v.Part = "" })), es[1].Name, "is not the folder of its device"},
		{"vision first", with(vFirst, mSecond), mSecond.Name, "the second manifest must be of the vision folder"},
		{"out of place", append([]cachetest.ArchiveEntry{es[0], es[2], es[3], es[1]}, es[4:]...), es[1].Name, "a manifest out of place"},
		{"twice", with(es[0], es[1], es[1]), es[1].Name, "appears twice"},
		{"a file of the other folder inside it", with(es[0], vEntry(func(v *cache.Manifest) { v.Files[0].Path = cachetest.TinyFolderDir + "/a/f0.tensorbin" })),
			es[1].Name, "outside the cache folder"},
		{"lacking a vision file", es[:len(es)-1], "", `lacks "` + es[len(es)-1].Name + `"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireRefusedPair(t, tc.entries, tc.entry, tc.want)
		})
	}
}

// TestUnpackOneFolderOfVisionModel: an archive of one folder whose
// manifest names a companion (as cache pack wrote a vision model's text
// folder before, and writes it when the vision folder is missing) still
// unpacks as it did: that folder alone, the vision folder beside it left
// as it is, and Missing names it. The same holds for the layout of
// earlier versions (the manifest last).
func TestUnpackOneFolderOfVisionModel(t *testing.T) {
	t.Parallel()
	es, _, _, err := cachetest.TinyVisionPair(3, 2)
	require.NoError(t, err)
	alone := append([]cachetest.ArchiveEntry{es[0]}, es[2:5]...) // the main manifest and its files
	for name, entries := range map[string][]cachetest.ArchiveEntry{
		"manifest first": alone,
		"manifest last":  append(append([]cachetest.ArchiveEntry(nil), alone[1:]...), alone[0]),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root, mainDir, visionDir := pairRoot(t)
			before := snap(t, root)
			u, err := Extract(context.Background(), bytes.NewReader(tarArchive(t, entries)), root, ExtractOptions{noSync: true})
			require.NoError(t, err)
			assert.Nil(t, u.Companion)
			assert.Equal(t, visionDir, u.Missing)
			assert.Equal(t, mainDir, u.Folder.Path())
			checkPlaced(t, u)
			after := snap(t, root)
			assert.Empty(t, diffSnapshots(before, after, cachetest.TinyFolderDir+"/"), "the vision folder is untouched")
			assert.True(t, strings.HasPrefix(after["P300/tensor_cache_bfp8/v/old.tensorbin"], "file 10 "))
		})
	}
}

// TestUnpackVisionPairSwapBackFails: when the main folder's swap fails
// and swapping the vision folder back fails too, nothing is removed and
// the error says exactly where each vision folder is: the archive's in
// place, the old one beside it.
func TestUnpackVisionPairSwapBackFails(t *testing.T) {
	t.Parallel()
	es, _, _, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	root, mainDir, visionDir := pairRoot(t)
	calls := 0
	opt := ExtractOptions{noSync: true, exchange: func(stage, dir string) (string, error) {
		switch {
		case dir == mainDir:
			return "", errors.New("injected failure")
		case dir == visionDir && calls > 0:
			return "", errors.New("injected second failure")
		}
		calls++
		return exchange(stage, dir)
	}}
	_, err = Extract(context.Background(), bytes.NewReader(tarArchive(t, es)), root, opt)
	require.ErrorIs(t, err, atomicfile.ErrWrite)
	msg := err.Error()
	assert.Contains(t, msg, "injected failure")
	assert.Contains(t, msg, "moving the old folder back also failed (injected second failure): "+visionDir+" holds the archive's folder, the old one is at ")
	old := msg[strings.LastIndex(msg, " the old one is at ")+len(" the old one is at "):]
	assert.FileExists(t, filepath.Join(old, "v", "old.tensorbin"), "the old vision folder is kept where the error says")
	assert.FileExists(t, filepath.Join(visionDir, "a", "f0.tensorbin"), "the archive's vision folder is in place")
	assert.FileExists(t, filepath.Join(mainDir, "a", "old.tensorbin"), "the main folder is as it was")
}

// requireRefusedPair unpacks the archive of entries into a root holding a
// vision model (pairRoot) and requires a bad archive naming entry, its
// reason containing want, and the root exactly as it was.
func requireRefusedPair(t *testing.T, entries []cachetest.ArchiveEntry, entry, want string) {
	t.Helper()
	root, _, _ := pairRoot(t)
	before := snap(t, root)
	_, err := Extract(context.Background(), bytes.NewReader(tarArchive(t, entries)), root, ExtractOptions{noSync: true})
	var b *BadArchiveError
	require.True(t, errors.As(err, &b), "%v", err)
	assert.ErrorIs(t, err, ckpt.ErrMalformed)
	assert.Equal(t, entry, b.Entry, "%v", err)
	assert.Contains(t, b.Reason, want)
	assert.Equal(t, before, snap(t, root))
}

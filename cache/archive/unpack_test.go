package archive_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/archive"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// archiveOf writes entries as an archive.
func archiveOf(t testing.TB, entries []cachetest.ArchiveEntry, tail []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, cachetest.WriteArchive(&b, entries, tail))
	return b.Bytes()
}

// onlyReader hides a reader's Seek.
type onlyReader struct{ r *bytes.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestUnpackRefusesHostileArchives: each archive that lies is refused as a
// bad archive (ckpt.ErrMalformed, never a write error) naming the entry at
// fault, and the cache root it was unpacked into, which holds an earlier
// unpack of the honest archive and another folder, is exactly as it was.
func TestUnpackRefusesHostileArchives(t *testing.T) {
	t.Parallel()
	honest, m, err := cachetest.TinyFolder(3)
	require.NoError(t, err)
	f0, f1, f2 := honest[1].Name, honest[2].Name, honest[3].Name
	edit := func(fn func(m *cache.Manifest)) cachetest.ArchiveEntry {
		c := *m
		c.Files = append([]cache.FileRecord(nil), m.Files...)
		fn(&c)
		return cachetest.ManifestEntry(&c)
	}
	with := func(es ...cachetest.ArchiveEntry) []cachetest.ArchiveEntry { return es }
	flipped := bytes.Clone(honest[2].Data)
	flipped[len(flipped)-1] ^= 1
	cases := []struct {
		name    string
		entries []cachetest.ArchiveEntry
		tail    []byte
		stream  bool // read without Seek
		entry   string
		want    string
	}{
		{"traversal", with(honest[0], honest[1], cachetest.ArchiveEntry{Name: "../evil.tensorbin", Data: honest[2].Data}), nil, false, "../evil.tensorbin", "escapes"},
		{"absolute", with(honest[0], cachetest.ArchiveEntry{Name: "/tmp/evil.tensorbin", Data: honest[1].Data}), nil, false, "/tmp/evil.tensorbin", "absolute"},
		{"symlink", with(honest[0], cachetest.ArchiveEntry{Name: f0, Type: tar.TypeSymlink, Linkname: "/etc/passwd"}), nil, false, f0, "a symbolic link, not a regular file"},
		{"hard link", with(honest[0], cachetest.ArchiveEntry{Name: f0, Type: tar.TypeLink, Linkname: f1}), nil, false, f0, "a hard link"},
		{"device", with(honest[0], cachetest.ArchiveEntry{Name: f0, Type: tar.TypeChar}), nil, false, f0, "a device node"},
		{"sparse", with(honest[0], cachetest.ArchiveEntry{Name: f0, Data: honest[1].Data[:4096], Sparse: 4 << 30}), nil, false, f0, "a sparse file"},
		{"duplicate", with(honest[0], honest[1], honest[1]), nil, false, f0, "appears twice"},
		{"manifest twice", with(honest[0], honest[1], honest[0]), nil, false, cache.ManifestName, "appears twice"},
		{"not listed", with(honest[0], honest[1], honest[2], honest[3], cachetest.ArchiveEntry{Name: cachetest.TinyFolderDir + "/b.tensorbin", Data: honest[1].Data}), nil, false,
			cachetest.TinyFolderDir + "/b.tensorbin", "not in the manifest"},
		{"lacking", with(honest[0], honest[1], honest[2]), nil, false, "", `lacks "` + f2 + `"`},
		{"huge declared size", with(honest[0], cachetest.ArchiveEntry{Name: f0, Data: honest[1].Data, Size: 4 << 30}), cachetest.ZeroFrame(1 << 20), false, f0,
			fmt.Sprintf("declares 4294967296 bytes, the manifest records %d", len(honest[1].Data))},
		{"bomb listed at its size", with(edit(func(m *cache.Manifest) { m.Files[0].Size = 4 << 30; m.Files[0].HeaderSize = 0 }),
			cachetest.ArchiveEntry{Name: f0, Size: 4 << 30}), cachetest.ZeroFrame(4 << 30), false, f0, "header size 0 is too small"},
		{"truncated entry", with(honest[0], cachetest.ArchiveEntry{Name: f0, Data: honest[1].Data[:3000], Size: int64(len(honest[1].Data))}), nil, false, f0, "truncated"},
		{"data hash", with(honest[0], honest[1], cachetest.ArchiveEntry{Name: f1, Data: flipped}, honest[3]), nil, false, f1, "data hash"},
		{"header size", with(edit(func(m *cache.Manifest) { m.Files[0].HeaderSize -= 8 }), honest[1]), nil, false, f0, "header size"},
		{"outside the folder", with(edit(func(m *cache.Manifest) { m.Files[0].Path = "P300/x.tensorbin" })), nil, false, cache.ManifestName, "outside the cache folder"},
		{"file and directory", with(edit(func(m *cache.Manifest) {
			m.Files[1].Path = cachetest.TinyFolderDir + "/a/f0.tensorbin/g.tensorbin"
		})), nil, false, cache.ManifestName, "both as a file and as a directory"},
		{"not tensorbin", with(edit(func(m *cache.Manifest) { m.Files[0].Path = cachetest.TinyFolderDir + "/.bashrc" })), nil, false, cache.ManifestName, "not a .tensorbin file"},
		{"cache_dir of another mesh", with(edit(func(m *cache.Manifest) {
			m.CacheDir = "P150/tensor_cache_bfp8_mesh1x1"
			for i := range m.Files {
				m.Files[i].Path = strings.Replace(m.Files[i].Path, cachetest.TinyFolderDir, m.CacheDir, 1)
			}
		})), nil, false, cache.ManifestName, `is not the folder of its device "P300", tag "bfp8" and mesh 1x2`},
		{"no manifest", with(honest[1], honest[2]), nil, false, "", "no manifest.json"},
		{"manifest last from a stream", with(honest[1], honest[2], honest[3], honest[0]), nil, true, cache.ManifestName, "not the first entry"},
		{"not zstd", nil, []byte("plain bytes, no zstd frame"), false, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "root")
			_, err := archive.Extract(context.Background(), bytes.NewReader(archiveOf(t, honest, nil)), root, archive.ExtractOptions{})
			require.NoError(t, err)
			other := filepath.Join(root, "P150", "tensor_cache_bfp8_mesh1x1")
			require.NoError(t, os.MkdirAll(other, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(other, cache.ManifestName), []byte("{}"), 0o644))
			before, err := cachetest.SnapshotTree(filepath.Dir(root))
			require.NoError(t, err)

			var b []byte
			if tc.entries != nil {
				b = archiveOf(t, tc.entries, tc.tail)
			} else {
				b = tc.tail
			}
			var r interface {
				Read([]byte) (int, error)
			} = bytes.NewReader(b)
			if tc.stream {
				r = onlyReader{bytes.NewReader(b)}
			}
			_, err = archive.Extract(context.Background(), r, root, archive.ExtractOptions{})
			require.Error(t, err)
			t.Log(err)
			assert.False(t, errors.Is(err, atomicfile.ErrWrite), "the archive is at fault, not our side: %v", err)
			if tc.want != "" {
				var ba *archive.BadArchiveError
				require.ErrorAs(t, err, &ba)
				assert.True(t, errors.Is(err, ckpt.ErrMalformed))
				assert.Equal(t, tc.entry, ba.Entry, "%v", err)
				assert.Contains(t, err.Error(), tc.want)
			}
			after, err := cachetest.SnapshotTree(filepath.Dir(root))
			require.NoError(t, err)
			assert.Equal(t, before, after, "the root is as it was")
		})
	}
}

// TestUnpackNamedFolder: -o may name the cache folder itself; the archive's
// cache_dir is checked against it, never followed elsewhere.
func TestUnpackNamedFolder(t *testing.T) {
	t.Parallel()
	honest, _, err := cachetest.TinyFolder(2)
	require.NoError(t, err)
	b := archiveOf(t, honest, nil)
	root := t.TempDir()
	folder := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
	u, err := archive.Extract(context.Background(), bytes.NewReader(b), folder, archive.ExtractOptions{})
	require.NoError(t, err)
	assert.Equal(t, folder, u.Folder.Path())
	require.FileExists(t, filepath.Join(folder, "a", "f1.tensorbin"), "written in the folder named, not under it")

	for _, named := range []string{
		filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x1"), // another mesh
		filepath.Join(root, "P150", "tensor_cache_bfp8_mesh1x2"), // another device
	} {
		_, err = archive.Extract(context.Background(), bytes.NewReader(b), named, archive.ExtractOptions{})
		var fm *archive.FolderMismatchError
		require.ErrorAs(t, err, &fm, named)
		assert.Contains(t, err.Error(), "the archive holds cache folder "+cachetest.TinyFolderDir)
		assert.NoDirExists(t, named)
	}
	assert.NoDirExists(t, filepath.Join(root, "P150"), "no directory is left from the refused unpack")
}

// TestUnpackLeavesOtherStaging: an unpack clears the staging folders that
// an unpack of the same folder left when it died (".unpack-<folder>-<n>"),
// and no other: the staging folder of a folder whose name continues the
// unpacked one's ("<folder>-x_mesh1x2", a tag with a dash) belongs to
// another unpack, under another lock. On the old code the prefix match
// removed it.
func TestUnpackLeavesOtherStaging(t *testing.T) {
	t.Parallel()
	honest, _, err := cachetest.TinyFolder(2)
	require.NoError(t, err)
	root := t.TempDir()
	folder := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
	parent, base := filepath.Dir(folder), filepath.Base(folder)
	other := filepath.Join(parent, ".unpack-"+base+"-x_mesh1x2-12345")
	stale := filepath.Join(parent, ".unpack-"+base+"-67890")
	for _, d := range []string{other, stale} {
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "f"), []byte("x"), 0o644))
	}
	_, err = archive.Extract(context.Background(), bytes.NewReader(archiveOf(t, honest, nil)), root, archive.ExtractOptions{})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(other, "f"), "another folder's staging is not this unpack's to remove")
	assert.NoDirExists(t, stale, "a staging folder of this folder's dead unpack is removed")
}

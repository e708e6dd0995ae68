package archive

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// relabel returns the entries of the tiny vision pair (both folders, or
// the main folder alone) with each manifest edited by its fn and every
// file moved to the folder its manifest now names.
func relabel(t testing.TB, both bool, main, vision func(m *cache.Manifest)) []cachetest.ArchiveEntry {
	t.Helper()
	es, m, v, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	edit := func(orig *cache.Manifest, fn func(m *cache.Manifest)) *cache.Manifest {
		c := *orig
		c.Files = append([]cache.FileRecord(nil), orig.Files...)
		if fn != nil {
			fn(&c)
		}
		for i := range c.Files {
			c.Files[i].Path = c.CacheDir + strings.TrimPrefix(c.Files[i].Path, orig.CacheDir)
		}
		return &c
	}
	mm, vm := edit(m, main), edit(v, vision)
	move := func(e cachetest.ArchiveEntry, from, to string) cachetest.ArchiveEntry {
		e.Name = to + strings.TrimPrefix(e.Name, from)
		return e
	}
	out := []cachetest.ArchiveEntry{cachetest.ManifestEntry(mm)}
	if both {
		ve := cachetest.ManifestEntry(vm)
		ve.Name = vm.CacheDir + "/" + cache.ManifestName
		out = append(out, ve)
	}
	for _, e := range es[2:] {
		switch {
		case strings.HasPrefix(e.Name, m.CacheDir+"/"):
			out = append(out, move(e, m.CacheDir, mm.CacheDir))
		case both:
			out = append(out, move(e, v.CacheDir, vm.CacheDir))
		}
	}
	return out
}

// TestUnpackRefusesHostileFolderNames: a manifest must name folders a
// cache root can hold as the model's: its device one path segment, a
// vision part's folder named without a mesh (a tag ending in _mesh1x2
// would make it the name of a text folder, which it would replace), its
// companion (written into the unpacked manifest, and read later by
// verify, identify, pack and build) a folder of the same device, of the
// other kind, never another root, another device, a path with .. or an
// absolute one; and only the parts ckpt knows. Each is a bad archive
// naming manifest.json (or the second manifest), the root as it was.
// (Before: all of them unpacked, the relabelled vision folders over the
// text folder P300/tensor_cache_bfp8_mesh1x2 or beside it under another
// name, the nested device inside that text folder.)
func TestUnpackRefusesHostileFolderNames(t *testing.T) {
	t.Parallel()
	const meshedVision = "P300/tensor_cache_bfp8_mesh1x2"
	cases := []struct {
		name    string
		entries []cachetest.ArchiveEntry
		entry   string
		want    string
	}{
		{"vision folder named as a text folder, alone", relabel(t, false, func(m *cache.Manifest) {
			m.Part, m.Tag, m.CacheDir, m.Companion = "vision", "bfp8_mesh1x2", meshedVision, "P300/tensor_cache_bfp8_mesh1x4"
		}, nil), cache.ManifestName, "a vision folder is named without a mesh"},
		{"vision folder named as a text folder, in a pair", relabel(t, true, func(m *cache.Manifest) {
			m.Companion = "P300/tensor_cache_x_mesh1x2"
		}, func(v *cache.Manifest) {
			v.Tag, v.CacheDir = "x_mesh1x2", "P300/tensor_cache_x_mesh1x2"
		}), cache.ManifestName, "companion"},
		{"companion in another root", relabel(t, false, func(m *cache.Manifest) { m.Companion = "../../evil/tensor_cache_bfp8" }, nil),
			cache.ManifestName, "companion"},
		{"companion absolute", relabel(t, false, func(m *cache.Manifest) { m.Companion = "/tmp/P300/tensor_cache_bfp8" }, nil),
			cache.ManifestName, "companion"},
		{"companion of another device", relabel(t, false, func(m *cache.Manifest) { m.Companion = "P150/tensor_cache_bfp8" }, nil),
			cache.ManifestName, "companion"},
		{"companion not a cache folder", relabel(t, false, func(m *cache.Manifest) { m.Companion = "P300/etc" }, nil),
			cache.ManifestName, "companion"},
		{"companion itself", relabel(t, false, func(m *cache.Manifest) { m.Companion = m.CacheDir }, nil),
			cache.ManifestName, "companion"},
		{"companion of a text folder meshed", relabel(t, false, func(m *cache.Manifest) { m.Companion = "P300/tensor_cache_bfp8_mesh1x4" }, nil),
			cache.ManifestName, "companion"},
		{"companion of a vision folder unmeshed", relabel(t, false, func(m *cache.Manifest) {
			m.Part, m.CacheDir, m.Companion = "vision", "P300/tensor_cache_bfp8", "P300/tensor_cache_instruct_bfp8"
		}, nil), cache.ManifestName, "companion"},
		{"device nested in a text folder", relabel(t, false, func(m *cache.Manifest) {
			m.Device, m.CacheDir, m.Companion = meshedVision, meshedVision+"/tensor_cache_bfp8_mesh1x2", ""
		}, nil), cache.ManifestName, "device"},
		{"unknown part", relabel(t, false, func(m *cache.Manifest) { m.Part, m.Companion = "audio", "" }, nil),
			cache.ManifestName, "part"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			requireRefusedPair(t, tc.entries, tc.entry, tc.want)
		})
	}
}

// TestUnpackErrorsEscapeNames: the message of a bad archive and of an
// archive of another folder shows the control and bidirectional
// characters of the names the archive gives (a device, a cache_dir)
// escaped: they reach the terminal as the error line. (Before: raw, in
// the reasons that name a folder without quoting it.)
func TestUnpackErrorsEscapeNames(t *testing.T) {
	t.Parallel()
	const dev = "P3\u202e00\u0085"
	hostile := func(m *cache.Manifest) {
		m.Device, m.CacheDir, m.Companion = dev, dev+"/tensor_cache_bfp8_mesh1x2", dev+"/tensor_cache_bfp8"
	}
	pair := relabel(t, true, hostile, func(v *cache.Manifest) {
		v.Device, v.CacheDir, v.Companion = dev, dev+"/tensor_cache_bfp8", dev+"/tensor_cache_bfp4_mesh1x2"
	})
	root, mainDir, _ := pairRoot(t)
	_, err := Extract(context.Background(), bytes.NewReader(tarArchive(t, pair)), root, ExtractOptions{noSync: true})
	require.ErrorIs(t, err, ckpt.ErrMalformed)
	assert.Contains(t, err.Error(), "not the other folder of the model of")
	assert.NotContains(t, err.Error(), "\u202e")
	assert.NotContains(t, err.Error(), "\u0085")
	assert.Contains(t, err.Error(), `P3\u202e00\u0085`)

	alone := relabel(t, false, hostile, nil)
	_, err = Extract(context.Background(), bytes.NewReader(tarArchive(t, alone)), mainDir, ExtractOptions{noSync: true})
	var fm *FolderMismatchError
	require.True(t, errors.As(err, &fm), "%v", err)
	assert.NotContains(t, err.Error(), "\u202e")
	assert.Contains(t, err.Error(), `P3\u202e00\u0085`)
}

// TestUnpackSecondManifestBounded: the second manifest may take only what
// the first left of the bound of one (maxManifestBytes): one declaring
// more is refused before a byte of it is read, naming it. (Before: read up
// to 256 MiB more, a second manifest's worth of memory; this one, whose
// data is cut short, was "truncated".)
func TestUnpackSecondManifestBounded(t *testing.T) {
	t.Parallel()
	es, _, _, err := cachetest.TinyVisionPair(2, 2)
	require.NoError(t, err)
	huge := es[1]
	huge.Size = int64(maxManifestBytes - len(es[0].Data) + 1)
	root, _, _ := pairRoot(t)
	before := snap(t, root)
	_, err = Extract(context.Background(), bytes.NewReader(tarArchive(t, []cachetest.ArchiveEntry{es[0], huge})), root, ExtractOptions{noSync: true})
	var b *BadArchiveError
	require.True(t, errors.As(err, &b), "%v", err)
	assert.Equal(t, es[1].Name, b.Entry)
	assert.Contains(t, b.Reason, "the two manifests at most")
	assert.Equal(t, before, snap(t, root))
}

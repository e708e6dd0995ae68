package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/klauspost/compress/zstd"
)

// fuzzSeeds are the seed archives of FuzzUnpack, as tar streams: an honest
// one (manifest first, and last as earlier versions wrote it) and hostile
// ones (traversal and absolute names, links, a huge declared size, a
// duplicate, a file the manifest does not list, a wrong hash, a manifest
// for another folder, none at all); and a vision model's two folders in
// one archive, honest and hostile (the second folder's file damaged, its
// manifest out of place, twice, naming another companion, or missing; a
// vision folder named as a text folder, a companion in another root).
func fuzzSeeds(tb testing.TB) [][]byte {
	honest, m, err := cachetest.TinyFolder(2)
	if err != nil {
		tb.Fatal(err)
	}
	other := *m
	other.CacheDir = "P150/tensor_cache_bfp8_mesh1x1"
	flipped := bytes.Clone(honest[2].Data)
	flipped[len(flipped)-1] ^= 1
	f0 := honest[1].Name
	sets := [][]cachetest.ArchiveEntry{
		honest,
		{honest[1], honest[2], honest[0]},
		{honest[0], {Name: "../../escape.tensorbin", Data: honest[1].Data}},
		{honest[0], {Name: "/abs.tensorbin", Data: honest[1].Data}},
		{honest[0], {Name: f0, Type: tar.TypeSymlink, Linkname: "../../../../etc/passwd"}},
		{honest[0], {Name: f0, Type: tar.TypeLink, Linkname: honest[2].Name}},
		{honest[0], {Name: f0, Data: honest[1].Data[:100], Size: 1 << 40}},
		{honest[0], honest[1], honest[1], honest[2]},
		{honest[0], honest[1], honest[2], {Name: cachetest.TinyFolderDir + "/a/extra.tensorbin", Data: honest[1].Data}},
		{honest[0], honest[1], {Name: honest[2].Name, Data: flipped}},
		{cachetest.ManifestEntry(&other), honest[1], honest[2]},
		{honest[1], honest[2]},
		{honest[0], {Name: cachetest.TinyFolderDir + "/a", Type: tar.TypeDir}, honest[1], honest[2]},
	}
	pair, _, vm, err := cachetest.TinyVisionPair(2, 2)
	if err != nil {
		tb.Fatal(err)
	}
	pflipped := bytes.Clone(pair[5].Data)
	pflipped[len(pflipped)-1] ^= 1
	stranger := *vm
	stranger.Companion = "P300/tensor_cache_bfp4_mesh1x2"
	se := cachetest.ManifestEntry(&stranger)
	se.Name = pair[1].Name
	sets = append(sets,
		pair,
		[]cachetest.ArchiveEntry{pair[0], pair[1], pair[2], pair[3], pair[4], {Name: pair[5].Name, Data: pflipped}},
		[]cachetest.ArchiveEntry{pair[0], pair[2], pair[3], pair[1], pair[4], pair[5]},
		[]cachetest.ArchiveEntry{pair[0], pair[1], pair[1], pair[2], pair[3], pair[4], pair[5]},
		[]cachetest.ArchiveEntry{pair[0], se, pair[2], pair[3], pair[4], pair[5]},
		[]cachetest.ArchiveEntry{pair[0], pair[2], pair[3]},
		// A vision folder named as a text folder (a tag ending in
		// _mesh1x2), a companion in another root.
		relabel(tb, true, func(m *cache.Manifest) { m.Companion = "P300/tensor_cache_x_mesh1x2" },
			func(v *cache.Manifest) { v.Tag, v.CacheDir = "x_mesh1x2", "P300/tensor_cache_x_mesh1x2" }),
		relabel(tb, false, func(m *cache.Manifest) { m.Companion = "../../evil/tensor_cache_bfp8" }, nil),
	)
	var out [][]byte
	for _, s := range sets {
		var b bytes.Buffer
		if err := cachetest.WriteTar(&b, s); err != nil {
			tb.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return out
}

// FuzzUnpack unpacks hostile archives into a cache root that holds a
// folder of the same name, a vision folder beside it and another folder. The tar stream is the
// input; it is compressed, then cut at cut/65536 of its length when cut is
// not 0 (a truncated zstd stream), or passed as it is when raw. Extract
// must never panic; when it fails, nothing under the root's parent has
// changed and the error is the archive's (never a failure to write, but
// for a declared size that does not fit on the disk); when it succeeds,
// only the archive's folders changed (of a vision model's archive: both),
// and each holds exactly the files its manifest lists with their
// recorded sizes, and no staging folder is left.
func FuzzUnpack(f *testing.F) {
	for i, s := range fuzzSeeds(f) {
		f.Add(s, uint16(0), false)
		if i == 0 {
			f.Add(s, uint16(40000), false)
			var b bytes.Buffer
			zw, _ := zstd.NewWriter(&b)
			zw.Write(s)
			zw.Close()
			f.Add(b.Bytes(), uint16(0), true)
		}
	}
	f.Fuzz(func(t *testing.T, stream []byte, cut uint16, raw bool) {
		arch := stream
		if !raw {
			var b bytes.Buffer
			zw, err := zstd.NewWriter(&b, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			zw.Write(stream)
			zw.Close()
			arch = b.Bytes()
			if cut != 0 {
				arch = arch[:len(arch)*int(cut)/65536]
			}
		}
		top := t.TempDir()
		root := filepath.Join(top, "root")
		mine := filepath.Join(root, filepath.FromSlash(cachetest.TinyFolderDir))
		mustWrite(t, filepath.Join(mine, cache.ManifestName), "{}")
		mustWrite(t, filepath.Join(mine, "a", "old.tensorbin"), "old")
		mustWrite(t, filepath.Join(root, filepath.FromSlash(cachetest.TinyVisionDir), "v", "old.tensorbin"), "old vision")
		mustWrite(t, filepath.Join(root, "P150", "tensor_cache_bfp8_mesh1x1", cache.ManifestName), "{}")
		mustWrite(t, filepath.Join(top, "outside.tensorbin"), "outside")
		before, err := cachetest.SnapshotTree(top)
		if err != nil {
			t.Fatal(err)
		}
		u, err := Extract(context.Background(), bytes.NewReader(arch), root, ExtractOptions{noSync: true})
		after, serr := cachetest.SnapshotTree(top)
		if serr != nil {
			t.Fatal(serr)
		}
		if err != nil {
			if errors.Is(err, atomicfile.ErrWrite) && !strings.Contains(err.Error(), "is free beside the folder") {
				t.Fatalf("a hostile archive is blamed on our side: %v", err)
			}
			if d := diffSnapshots(before, after); d != "" {
				t.Fatalf("failed (%v) but changed %s", err, d)
			}
			return
		}
		placed := []*Unpacked{u}
		if u.Companion != nil {
			placed = append(placed, u.Companion)
		}
		var inside []string
		for _, p := range placed {
			inside = append(inside, "root/"+p.Folder.Dir+"/")
		}
		if d := diffSnapshots(before, after, inside...); d != "" {
			t.Fatalf("changed %s outside the folders %v", d, inside)
		}
		for _, p := range placed {
			checkPlaced(t, p)
		}
	})
}

// checkPlaced fails t unless the folder p placed holds exactly the files
// of its manifest, at their sizes, and no staging folder is beside it.
func checkPlaced(t *testing.T, p *Unpacked) {
	t.Helper()
	dir := p.Folder.Dir + "/"
	want := map[string]int64{cache.ManifestName: -1}
	for _, r := range p.Manifest.Files {
		want[strings.TrimPrefix(r.Path, dir)] = r.Size
	}
	got := map[string]int64{}
	err := filepath.WalkDir(p.Folder.Path(), func(fp string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(p.Folder.Path(), fp)
		got[filepath.ToSlash(rel)] = st.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f, n := range want {
		if g, ok := got[f]; !ok || (n >= 0 && g != n) {
			t.Fatalf("%s: %d bytes present (%v), the manifest records %d", f, g, ok, n)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %d files, the manifest lists %d (and itself)", p.Folder.Dir, len(got), len(want))
	}
	ents, _ := os.ReadDir(filepath.Dir(p.Folder.Path()))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".unpack-") {
			t.Fatalf("left %s", e.Name())
		}
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// diffSnapshots names a path that differs between two snapshots, but for
// the folders inside ("dir/"; none: every path counts), what they hold and
// their parents; "" when none does.
func diffSnapshots(a, b map[string]string, inside ...string) string {
	in := func(p string) bool { // a folder, what it holds, and its parents
		for _, f := range inside {
			if f != "" && (strings.HasPrefix(f, p+"/") || strings.HasPrefix(p, f)) {
				return true
			}
		}
		return false
	}
	for p, v := range a {
		if !in(p) && b[p] != v {
			return p
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok && !in(p) {
			return p
		}
	}
	return ""
}

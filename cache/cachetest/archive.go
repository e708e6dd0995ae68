package cachetest

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/klauspost/compress/zstd"
	"github.com/zeebo/xxh3"
)

// ArchiveEntry is one entry of a hand-made cache archive (WriteArchive),
// honest or hostile.
type ArchiveEntry struct {
	Name string
	Data []byte
	// Type is the tar type flag (tar.TypeReg when 0); Linkname goes with
	// tar.TypeSymlink and tar.TypeLink.
	Type     byte
	Linkname string
	// Size, when not 0, is the size the entry's header declares instead of
	// len(Data): the stream then ends inside the entry (a truncated
	// archive), and entries after it are not written.
	Size int64
	// Sparse, when > 0, makes the entry a GNU sparse file (PAX format
	// 1.0) of this real size whose only data is Data at offset 0: a few
	// bytes of archive that a tar reader expands to Sparse bytes. The tar
	// writer writes no sparse file, so WriteTar writes its headers itself.
	Sparse int64
}

// WriteArchive writes entries as cache pack's format (a tar stream in one
// zstd frame, WriteTar) to w, in the order given. Tail, when not nil, is
// appended after the zstd frame as it is (for instance ZeroFrame: a frame
// that decompresses to gigabytes of zeros).
func WriteArchive(w io.Writer, entries []ArchiveEntry, tail []byte) error {
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	if err := WriteTar(zw, entries); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	_, err = w.Write(tail)
	return err
}

// WriteTar writes entries as a tar stream (PAX format) to w, in the order
// given; an entry whose Size exceeds its data ends the stream inside it.
func WriteTar(w io.Writer, entries []ArchiveEntry) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		if e.Sparse > 0 {
			if err := tw.Flush(); err != nil {
				return err
			}
			if err := writeSparse(w, e); err != nil {
				return err
			}
			continue
		}
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		size := int64(len(e.Data))
		if e.Size != 0 {
			size = e.Size
		}
		if typ != tar.TypeReg {
			size = 0
		}
		h := &tar.Header{Name: e.Name, Typeflag: typ, Linkname: e.Linkname, Size: size, Mode: 0o644, ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		data := e.Data
		if int64(len(data)) > size {
			data = data[:size]
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
		if int64(len(data)) < size {
			return nil // the stream ends inside this entry: no end of archive
		}
	}
	return tw.Close()
}

// writeSparse writes e as a PAX 1.0 GNU sparse file: an extended header
// with the GNU.sparse records, then a regular file header whose data is
// the sparse map (one region: offset 0, len(e.Data) bytes) and e.Data.
func writeSparse(w io.Writer, e ArchiveEntry) error {
	var pax bytes.Buffer
	for _, kv := range [][2]string{
		{"GNU.sparse.major", "1"}, {"GNU.sparse.minor", "0"},
		{"GNU.sparse.name", e.Name}, {"GNU.sparse.realsize", strconv.FormatInt(e.Sparse, 10)},
	} {
		pax.WriteString(paxRecord(kv[0], kv[1]))
	}
	sparseMap := padBlock([]byte(fmt.Sprintf("1\n0\n%d\n", len(e.Data))))
	data := append(sparseMap, e.Data...)
	for _, b := range [][]byte{
		ustarHeader("PaxHeaders/"+e.Name, 'x', int64(pax.Len())), padBlock(pax.Bytes()),
		ustarHeader(e.Name, tar.TypeReg, int64(len(data))), padBlock(data),
	} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// paxRecord is one PAX record, "LEN KEY=VALUE\n", LEN counting itself.
func paxRecord(k, v string) string {
	body := " " + k + "=" + v + "\n"
	n := len(body) + 1
	for len(strconv.Itoa(n))+len(body) != n {
		n++
	}
	return strconv.Itoa(n) + body
}

// ustarHeader is a 512-byte ustar header block (name under 100 bytes).
func ustarHeader(name string, typ byte, size int64) []byte {
	b := make([]byte, 512)
	copy(b[0:100], name)
	copy(b[100:], "0000644\x00")
	copy(b[108:], "0000000\x00")
	copy(b[116:], "0000000\x00")
	copy(b[124:], fmt.Sprintf("%011o\x00", size))
	copy(b[136:], fmt.Sprintf("%011o\x00", 1700000000))
	b[156] = typ
	copy(b[257:], "ustar\x0000")
	copy(b[148:156], "        ")
	sum := 0
	for _, c := range b {
		sum += int(c)
	}
	copy(b[148:], fmt.Sprintf("%06o\x00 ", sum))
	return b
}

// padBlock pads b with zeros to a multiple of 512 bytes.
func padBlock(b []byte) []byte {
	if r := len(b) % 512; r != 0 {
		b = append(b, make([]byte, 512-r)...)
	}
	return b
}

// ZeroFrame is a zstd frame of RLE blocks that decompresses to n zero
// bytes (n rounded up to 128 KiB) in about n/32768 bytes: with a tar
// header declaring a huge entry before it, a decompression bomb.
func ZeroFrame(n int64) []byte {
	const block = 128 << 10
	var b bytes.Buffer
	b.Write([]byte{0x28, 0xB5, 0x2F, 0xFD}) // magic
	b.WriteByte(0x00)                       // no content size, no checksum, not single-segment
	b.WriteByte(7 << 3)                     // window 2^(10+7) = 128 KiB
	blocks := (n + block - 1) / block
	for i := int64(0); i < blocks; i++ {
		last := uint32(0)
		if i == blocks-1 {
			last = 1
		}
		hdr := uint32(block)<<3 | 1<<1 | last // RLE block of 128 KiB
		b.Write([]byte{byte(hdr), byte(hdr >> 8), byte(hdr >> 16)})
		b.WriteByte(0)
	}
	return b.Bytes()
}

// FolderEntries reads the cache folder dir of the cache root root (its
// manifest and every file it lists) as archive entries, the manifest
// first, as cache pack writes them.
func FolderEntries(root, dir string) ([]ArchiveEntry, *cache.Manifest, error) {
	m, err := cache.ReadManifest(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil {
		return nil, nil, err
	}
	mb, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(dir), cache.ManifestName))
	if err != nil {
		return nil, nil, err
	}
	out := []ArchiveEntry{{Name: cache.ManifestName, Data: mb}}
	for _, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, ArchiveEntry{Name: f.Path, Data: b})
	}
	return out, m, nil
}

// Forge returns the entries of an archive that holds the files of the
// cache folder dir of root `other` under the manifest of the same folder
// of root `base`, with every file's size and hashes recomputed from the
// files it now holds: the manifest still says the files were built from
// base's source tensors. Both folders must list the same paths.
func Forge(base, other, dir string) ([]ArchiveEntry, error) {
	m, err := cache.ReadManifest(filepath.Join(base, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	out := []ArchiveEntry{{Name: cache.ManifestName}}
	for i, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(other, filepath.FromSlash(f.Path)))
		if err != nil {
			return nil, err
		}
		if len(b) < 8 {
			return nil, fmt.Errorf("%s: %d bytes", f.Path, len(b))
		}
		hs := binary.LittleEndian.Uint64(b[:8])
		if hs > uint64(len(b)-8) {
			return nil, fmt.Errorf("%s: header size %d", f.Path, hs)
		}
		rec := &m.Files[i]
		rec.Size, rec.HeaderSize = int64(len(b)), hs
		rec.HeaderXXH3, rec.DataXXH3 = cache.HexHash(xxh3.Hash(b[:8+hs])), cache.HexHash(xxh3.Hash(b[8+hs:]))
		out = append(out, ArchiveEntry{Name: f.Path, Data: b})
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	out[0].Data = append(mb, '\n')
	return out, nil
}

// SnapshotTree maps every path under dir (relative, slash-separated) to
// what it is: a directory, a symbolic link and its target, or a regular
// file's size, mtime and bytes, so that two snapshots are equal when
// nothing under dir changed.
func SnapshotTree(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(dir, p)
		r = filepath.ToSlash(r)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[r] = "link " + t
		case info.IsDir():
			out[r] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[r] = fmt.Sprintf("file %d %d %016x", info.Size(), info.ModTime().UnixNano(), xxh3.Hash(b))
		}
		return nil
	})
	return out, err
}

// TinyFolderDir is the cache folder of TinyFolder.
const TinyFolderDir = "P300/tensor_cache_bfp8_mesh1x2"

// TinyVisionDir is the vision folder of TinyVisionPair (named without a
// mesh, beside TinyFolderDir).
const TinyVisionDir = "P300/tensor_cache_bfp8"

// TinyFolder returns the entries of an honest archive of a hand-made cache
// folder (TinyFolderDir, mesh 1x2) of n small .tensorbin files
// (a/f0.tensorbin, a/f1.tensorbin, ...), the manifest first, and the
// manifest: small enough for fuzzing seeds.
func TinyFolder(n int) ([]ArchiveEntry, *cache.Manifest, error) {
	m := tinyManifest(TinyFolderDir, "", "")
	files, err := tinyFiles(m, n, 0)
	if err != nil {
		return nil, nil, err
	}
	return append([]ArchiveEntry{ManifestEntry(m)}, files...), m, nil
}

// TinyVisionPair returns the entries of an honest archive of a hand-made
// vision model, as cache pack writes it: the main folder's manifest
// (TinyFolderDir, n files, naming TinyVisionDir as its companion), the
// vision folder's manifest as TinyVisionDir/manifest.json (k files, part
// vision, naming the main folder back), then the main folder's files,
// then the vision folder's; and both manifests.
func TinyVisionPair(n, k int) ([]ArchiveEntry, *cache.Manifest, *cache.Manifest, error) {
	m := tinyManifest(TinyFolderDir, "", TinyVisionDir)
	v := tinyManifest(TinyVisionDir, "vision", TinyFolderDir)
	mf, err := tinyFiles(m, n, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	vf, err := tinyFiles(v, k, 50)
	if err != nil {
		return nil, nil, nil, err
	}
	ve := ManifestEntry(v)
	ve.Name = TinyVisionDir + "/" + cache.ManifestName
	out := append([]ArchiveEntry{ManifestEntry(m), ve}, mf...)
	return append(out, vf...), m, v, nil
}

func tinyManifest(dir, part, companion string) *cache.Manifest {
	return &cache.Manifest{Format: cache.ManifestFormat, Tool: "ckpt", Profile: "qwen35-tt", Mesh: "1x2", Device: "P300", Tag: "bfp8",
		CacheDir: dir, Part: part, Companion: companion, Source: "tiny", Files: []cache.FileRecord{}}
}

// tinyFiles adds n small .tensorbin files to m (under m.CacheDir/a/, their
// bytes from seed) and returns their entries.
func tinyFiles(m *cache.Manifest, n, seed int) ([]ArchiveEntry, error) {
	var out []ArchiveEntry
	for i := range n {
		h := tensorbin.NewMeshShardedHeader(tensorbin.NewTensorSpec([]int{32, 32}, tile.BFLOAT16, tile.TILE, tensorbin.InterleavedConfig()), -1, []uint64{2048, 2048})
		prefix, err := tensorbin.EncodeHeader(&h)
		if err != nil {
			return nil, err
		}
		data := append(prefix, bytes.Repeat([]byte{byte(seed + i + 1)}, 2048)...)
		data = append(data, bytes.Repeat([]byte{byte(seed + i + 7)}, 2048)...)
		p := fmt.Sprintf("%s/a/f%d.tensorbin", m.CacheDir, i)
		m.Files = append(m.Files, cache.FileRecord{Path: p, Target: fmt.Sprintf("f%d", i), Size: int64(len(data)), MTimeNS: 1700000000e9,
			HeaderSize: h.HeaderSize, HeaderXXH3: cache.HexHash(xxh3.Hash(data[:h.DataOffset])), DataXXH3: cache.HexHash(xxh3.Hash(data[h.DataOffset:]))})
		out = append(out, ArchiveEntry{Name: p, Data: data})
	}
	return out, nil
}

// ManifestEntry is the archive entry of manifest m.
func ManifestEntry(m *cache.Manifest) ArchiveEntry {
	mb, _ := json.MarshalIndent(m, "", "  ") // plain data: cannot fail
	return ArchiveEntry{Name: cache.ManifestName, Data: append(mb, '\n')}
}

// WriteTinyFolder writes TinyFolder(n) onto disk under the cache root
// root (the manifest in root/TinyFolderDir, each file at its path) and
// returns its manifest: a finished cache folder made without a build.
func WriteTinyFolder(root string, n int) (*cache.Manifest, error) {
	entries, m, err := TinyFolder(n)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p := filepath.Join(root, filepath.FromSlash(e.Name))
		if e.Name == cache.ManifestName {
			p = filepath.Join(root, filepath.FromSlash(TinyFolderDir), cache.ManifestName)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, e.Data, 0o644); err != nil {
			return nil, err
		}
	}
	return m, nil
}

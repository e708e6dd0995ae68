package archive

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// readCompanion reads the entry after the first manifest: the manifest of
// the model's second folder (returned, checked) when it is
// <m.Companion>/manifest.json, else the first file entry, kept for
// extractAll (nil manifest).
func (u *unpacker) readCompanion(tr *tar.Reader, m *cache.Manifest) (*cache.Manifest, error) {
	h, err := tr.Next()
	if err == io.EOF {
		u.eof = true
		return nil, nil
	}
	if err != nil {
		return nil, asBad("", err)
	}
	if m.Companion == "" || h.Name != companionManifestName(m.Companion) {
		u.pending = h
		return nil, nil
	}
	if h.Typeflag != tar.TypeReg {
		return nil, bad(h.Name, "not a regular file")
	}
	// The two manifests together within the bound of one: an archive of
	// two folders needs no more memory than one of a folder.
	if left := int64(maxManifestBytes - len(u.mb)); h.Size < 0 || h.Size > left {
		return nil, bad(h.Name, "%d bytes (the two manifests at most %d together, the first has %d)", h.Size, maxManifestBytes, len(u.mb))
	}
	cb, err := io.ReadAll(tr)
	if err != nil {
		return nil, asBad(h.Name, err)
	}
	cm, err := checkManifest(cb, h.Name)
	if err != nil {
		return nil, err
	}
	if m.Part != "" || cm.Part != mapping.PartVision {
		return nil, bad(h.Name, "the second manifest must be of the vision folder of the first (a main folder), not part %s of part %s",
			strconv.Quote(cm.Part), strconv.Quote(m.Part))
	}
	if why := pairProblem(m, cm); why != "" {
		return nil, bad(h.Name, "not the other folder of the model of %s: %s", m.CacheDir, why)
	}
	u.companionEntry = h.Name
	return cm, nil
}

// archiveReader marks errors of reading the archive (truncated or damaged
// zstd, a truncated tar stream) as the archive's.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = bad("", "decompressing: %v", err)
	}
	return n, err
}

// readManifest reads the manifest: the first entry, or (legacy, when the
// archive can be read again) the last one, found by reading through the
// archive without writing anything.
func readManifest(tr *tar.Reader, rescan bool) (mb []byte, legacy bool, err error) {
	last, n := "", 0 // the entry being skipped: a read error is within it
	var lastSize int64
	for first := true; ; first = false {
		h, err := tr.Next()
		if err == io.EOF {
			if n == 0 {
				return nil, false, bad("", "no %s (the archive is empty)", cache.ManifestName)
			}
			return nil, false, bad("", "no %s among its %d entries, the last %s of %s (the archive is incomplete, or not a cache archive)",
				cache.ManifestName, n, strconv.Quote(last), ckpt.FormatBytes(lastSize))
		}
		if err != nil {
			return nil, false, asBad(last, err)
		}
		if h.Name != cache.ManifestName {
			if !rescan {
				return nil, false, bad(cache.ManifestName, "not the first entry of the archive (an archive of an earlier ckpt read from a stream: unpack it from a file)")
			}
			last, lastSize = h.Name, h.Size
			n++
			if err := plainEntry(h); err != nil {
				return nil, false, err
			}
			if h.Typeflag == tar.TypeReg {
				// Read past without writing, but not past a header that
				// does not describe the entry's size (a bomb of zeros).
				if _, _, err := readHead(tr, h.Name, h.Size); err != nil {
					return nil, false, err
				}
			}
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, false, bad(h.Name, "not a regular file")
		}
		if h.Size < 0 || h.Size > maxManifestBytes {
			return nil, false, bad(h.Name, "%d bytes (at most %d)", h.Size, maxManifestBytes)
		}
		mb, err := io.ReadAll(tr)
		if err != nil {
			return nil, false, asBad(h.Name, err)
		}
		return mb, !first, nil
	}
}

// asBad makes an error of reading the archive a *BadArchiveError about
// entry.
func asBad(entry string, err error) error {
	var b *BadArchiveError
	if errors.As(err, &b) {
		if b.Entry == "" && entry != "" {
			return &BadArchiveError{Entry: entry, Reason: b.Reason}
		}
		return b
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return bad(entry, "the archive ends inside it (truncated)")
	}
	return bad(entry, "%v", err)
}

// checkManifest parses the archive's manifest and refuses one that is not
// self-consistent: its cache_dir must be the folder of its own device, tag
// and mesh, and its files clean, distinct .tensorbin paths in that folder
// with no file where another one needs a directory, of sizes that can hold
// their headers.
func checkManifest(mb []byte, entry string) (*cache.Manifest, error) {
	m, err := cache.ParseManifest(mb, "in the archive")
	if err != nil {
		return nil, bad(entry, "%v", err)
	}
	mesh, err := mapping.ParseMesh(m.Mesh)
	if err != nil {
		return nil, bad(entry, "%v", err)
	}
	want := mapping.CacheDir(m.Device, m.Tag, mesh)
	if m.Part == mapping.PartVision {
		want = mapping.UnmeshedCacheDir(m.Device, m.Tag) // a vision folder is named without the mesh
	}
	if m.CacheDir != want || !cache.IsFolderName(path.Base(m.CacheDir)) {
		return nil, bad(entry, "cache_dir %s is not the folder of its device %s, tag %s and mesh %s (%s)",
			strconv.Quote(m.CacheDir), strconv.Quote(m.Device), strconv.Quote(m.Tag), m.Mesh, strconv.Quote(want))
	}
	if err := checkFolderNames(m); err != "" {
		return nil, bad(entry, "%s", err)
	}
	files := map[string]bool{}
	dirs := map[string]bool{}
	var total int64
	for _, f := range m.Files {
		rel := strings.TrimPrefix(f.Path, m.CacheDir+"/")
		switch {
		case files[f.Path]:
			return nil, bad(entry, "lists %s twice", strconv.Quote(f.Path))
		case !strings.HasSuffix(f.Path, mapping.FileExt):
			return nil, bad(entry, "lists %s, which is not a %s file", strconv.Quote(f.Path), mapping.FileExt)
		case len(rel) > maxPathBytes:
			return nil, bad(entry, "lists a path of %d bytes (at most %d)", len(rel), maxPathBytes)
		case f.Size < 8 || f.HeaderSize > uint64(f.Size-8):
			return nil, bad(entry, "records %d bytes with a header of %d for %s", f.Size, f.HeaderSize, strconv.Quote(f.Path))
		case total+f.Size < total:
			return nil, bad(entry, "file sizes overflow")
		}
		for _, seg := range strings.Split(rel, "/") {
			if strings.HasPrefix(seg, ".") || len(seg) > maxNameBytes {
				return nil, bad(entry, "lists %s: a name that begins with a dot or is longer than %d bytes", strconv.Quote(f.Path), maxNameBytes)
			}
		}
		files[f.Path] = true
		total += f.Size
		for d := path.Dir(f.Path); d != m.CacheDir; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for p := range files {
		if dirs[p] {
			return nil, bad(entry, "lists %s both as a file and as a directory of other files", strconv.Quote(p))
		}
	}
	return m, nil
}

// allDigits reports whether s is a non-empty run of decimal digits.
func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// checkFolderNames says why the folders m names cannot be a model's in a
// cache root ("" when they can): its device is one path segment; a vision
// part's folder is named without a mesh (a tag ending in _mesh<R>x<C>
// would give it a text folder's name); its companion, which the unpacked
// manifest keeps and verify, identify, pack and build read, is a cache
// folder of the same device and of the other kind (a main folder's an
// unmeshed vision folder, a vision folder's a meshed one), never a path
// into another device or root; and its part is one ckpt knows.
func checkFolderNames(m *cache.Manifest) string {
	if strings.Contains(m.Device, "/") || m.Device == "" {
		return fmt.Sprintf("device %s is not one path segment", strconv.Quote(m.Device))
	}
	unmeshed := func(dir string) bool { return cache.FolderOf("", dir).Unmeshed() }
	switch m.Part {
	case "":
	case mapping.PartVision:
		if !unmeshed(m.CacheDir) {
			return fmt.Sprintf("cache_dir %s of part %s ends in a mesh: a vision folder is named without a mesh", strconv.Quote(m.CacheDir), mapping.PartVision)
		}
	default:
		return fmt.Sprintf("part %s is neither the main one nor %s", strconv.Quote(m.Part), mapping.PartVision)
	}
	if m.Companion == "" {
		return ""
	}
	c := m.Companion
	want := "an unmeshed vision folder <device>/tensor_cache_<tag>"
	if m.Part == mapping.PartVision {
		want = "a text folder <device>/tensor_cache_<tag>_mesh" + m.Mesh
	}
	switch {
	case cache.CheckRelPath(c) != nil || path.Dir(c) != path.Dir(m.CacheDir) || !cache.IsFolderName(path.Base(c)) || c == m.CacheDir:
	case m.Part == "" && unmeshed(c):
		return ""
	case m.Part == mapping.PartVision && !unmeshed(c) && cache.FolderOf("", c).Mesh() == m.Mesh:
		return ""
	}
	return fmt.Sprintf("companion %s is not %s beside %s", strconv.Quote(c), want, m.CacheDir)
}

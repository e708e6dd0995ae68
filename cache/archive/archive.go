package archive

import (
	"archive/tar"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/klauspost/compress/zstd"
)

// maxManifestBytes bounds the manifest read from an archive.
const maxManifestBytes = 256 << 20

// WriteOptions tune Write.
type WriteOptions struct {
	// Workers is the zstd encoder concurrency (default GOMAXPROCS).
	Workers int
	// Progress counts cache bytes archived (nil-safe).
	Progress *ckpt.Progress
	// Select picks the cache folder when dir is a root holding several.
	Select cache.Selector
}

// Packed is what Write archived: the manifest of the folder it packed
// (of a vision model: its main, text folder) and, when the archive holds
// the model's other folder too, that folder's manifest (Companion).
type Packed struct {
	Manifest *cache.Manifest
	// Folder is the cache folder of Manifest (its path: Folder.Path()).
	Folder cache.Folder
	// Companion is the manifest of the model's vision folder packed with
	// its main folder (CompanionFolder), nil when the archive holds one
	// folder.
	Companion       *cache.Manifest
	CompanionFolder cache.Folder
	// Missing is the path of the folder's companion (the model's other
	// folder, as its manifest names it) when the archive does not hold it:
	// it is absent or not a finished build of the same model (the reason is
	// in Warnings). "" when the folder names none or the archive holds it.
	Missing string
	// Warnings say why a companion the manifest names is not in the
	// archive.
	Warnings []string
}

// folders are the manifests of the archived folders, the main one first.
func (p *Packed) folders() []*cache.Manifest {
	if p.Companion != nil {
		return []*cache.Manifest{p.Manifest, p.Companion}
	}
	return []*cache.Manifest{p.Manifest}
}

// Write writes a built cache folder as a zstd-compressed tar stream to w:
// manifest.json first, then every file of the manifest, in manifest order
// (paths relative to the cache root), so that Extract knows every entry's
// name, size and hashes before it writes a byte of it. dir is the cache
// folder, its device folder or a cache root holding exactly one that
// opt.Select matches (see cache.ResolveFolder); a folder whose build did
// not finish is refused (*cache.UnfinishedError). Each file's data hash is
// checked against the manifest while it is read, so a damaged cache is
// never shipped.
//
// A vision model's two folders are one model, and one archive: when the
// folder's manifest names a companion (cache.Manifest.Companion: the
// model's vision folder, or, for a vision folder, its main folder), the
// archive holds both, the main folder's manifest.json first, then the
// vision folder's as <its cache_dir>/manifest.json, then the main
// folder's files, then the vision folder's. A companion that is absent,
// unfinished, or whose manifest does not name this folder back is left
// out: the folder is packed alone and Packed.Missing and Warnings say so.
func Write(ctx context.Context, dir string, w io.Writer, opt WriteOptions) (*Packed, error) {
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	folder, err := cache.ResolveFolder(dir, opt.Select)
	if err != nil {
		return nil, err
	}
	if err := cache.CheckFinished(folder.Path()); err != nil {
		return nil, err
	}
	m, mb, err := readFolderManifest(folder)
	if err != nil {
		return nil, err
	}
	p := &Packed{Manifest: m, Folder: folder}
	var cb []byte
	if m.Companion != "" {
		cf := cache.FolderOf(folder.Root, m.Companion)
		cm, b, why := companionOf(cf, m)
		if why != "" {
			p.Missing = cf.Path()
			p.Warnings = append(p.Warnings, fmt.Sprintf("the model's other folder %s is not in the archive: %s; the archive holds %s alone",
				cf.Path(), why, folder.Path()))
		} else {
			p.Companion, p.CompanionFolder, cb = cm, cf, b
			if m.Part == mapping.PartVision {
				// The main folder first, whichever of the two was named.
				p.Manifest, p.Folder, p.Companion, p.CompanionFolder = cm, cf, m, folder
				mb, cb = cb, mb
			}
		}
	}
	for _, fm := range p.folders() {
		for _, f := range fm.Files {
			opt.Progress.AddTotal(f.Size)
		}
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(opt.Workers), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	manifests := []struct {
		name string
		b    []byte
	}{{cache.ManifestName, mb}}
	if p.Companion != nil {
		manifests = append(manifests, struct {
			name string
			b    []byte
		}{companionManifestName(p.Companion.CacheDir), cb})
	}
	for _, e := range manifests {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.b)), ModTime: time.Now(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			zw.Close()
			return nil, err
		}
		if _, err := tw.Write(e.b); err != nil {
			zw.Close()
			return nil, err
		}
	}
	for _, fm := range p.folders() {
		for _, rec := range fm.Files {
			if err := ctx.Err(); err != nil {
				zw.Close()
				return nil, err
			}
			if err := packFile(tw, folder.Root, rec, opt.Progress); err != nil {
				zw.Close()
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing: %w", err)
	}
	return p, nil
}

// companionManifestName is the archive entry of the second folder's
// manifest: manifest.json inside that folder's path.
func companionManifestName(cacheDir string) string { return cacheDir + "/" + cache.ManifestName }

// readFolderManifest reads a folder's manifest, its bytes too, and refuses
// one written for another folder.
func readFolderManifest(folder cache.Folder) (*cache.Manifest, []byte, error) {
	m, err := cache.ReadManifest(folder.Path())
	if err != nil {
		return nil, nil, err
	}
	if m.CacheDir != folder.Dir {
		return nil, nil, fmt.Errorf("reading manifest in %s: it is for cache folder %s", folder.Path(), m.CacheDir)
	}
	mb, err := os.ReadFile(filepath.Join(folder.Path(), cache.ManifestName))
	if err != nil {
		return nil, nil, err
	}
	return m, mb, nil
}

// companionOf reads the companion folder cf that m names and says why it
// cannot go into the archive with m's folder ("" when it can): absent, an
// unfinished build, an unreadable manifest, or not the other part of the
// same model (its manifest must name m's folder back, one of the two must
// be the vision part and the other the main one, of the same device).
func companionOf(cf cache.Folder, m *cache.Manifest) (*cache.Manifest, []byte, string) {
	st, err := os.Stat(cf.Path())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, "it does not exist"
	case err != nil:
		return nil, nil, err.Error()
	case !st.IsDir():
		return nil, nil, "it is not a directory"
	}
	if err := cache.CheckFinished(cf.Path()); err != nil {
		return nil, nil, err.Error()
	}
	cm, cb, err := readFolderManifest(cf)
	if err != nil {
		return nil, nil, err.Error()
	}
	if why := pairProblem(m, cm); why != "" {
		return nil, nil, why
	}
	return cm, cb, ""
}

// pairProblem says why the manifests a and b are not the two folders of
// one model ("" when they are): each names the other as its companion,
// they are folders of one device, and exactly one is the vision part.
func pairProblem(a, b *cache.Manifest) string {
	switch {
	case a.CacheDir == b.CacheDir:
		return fmt.Sprintf("both manifests are of %s", a.CacheDir)
	case a.Companion != b.CacheDir || b.Companion != a.CacheDir:
		return fmt.Sprintf("its manifest names %s as its companion, not %s", strconv.Quote(b.Companion), a.CacheDir)
	case path.Dir(a.CacheDir) != path.Dir(b.CacheDir) || a.Device != b.Device:
		return fmt.Sprintf("it is a folder of another device (%s, not %s)", b.Device, a.Device)
	case (a.Part == mapping.PartVision) == (b.Part == mapping.PartVision):
		return fmt.Sprintf("of the two folders %s and %s, not exactly one is a vision part", a.CacheDir, b.CacheDir)
	case a.Part != "" && a.Part != mapping.PartVision || b.Part != "" && b.Part != mapping.PartVision:
		return fmt.Sprintf("a part %s that is neither the main one nor %s", strconv.Quote(a.Part+b.Part), mapping.PartVision)
	}
	return ""
}

func packFile(tw *tar.Writer, root string, rec cache.FileRecord, p *ckpt.Progress) error {
	path := filepath.Join(root, filepath.FromSlash(rec.Path))
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("packing: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != rec.Size {
		return fmt.Errorf("packing %s: %d bytes, manifest records %d", path, st.Size(), rec.Size)
	}
	hdr := &tar.Header{Name: rec.Path, Mode: 0o644, Size: rec.Size, ModTime: st.ModTime(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	rh := newRegionHasher()
	if _, err := io.Copy(io.MultiWriter(tw, rh, progressWriter{p}), f); err != nil {
		return fmt.Errorf("packing %s: %w", path, err)
	}
	if h := rh.sum(); h != rec.DataXXH3 {
		return fmt.Errorf("packing %s: data hash %s, manifest records %s: the cache is damaged (run cache verify)", path, h, rec.DataXXH3)
	}
	if h := rh.headerSum(); h != rec.HeaderXXH3 {
		return fmt.Errorf("packing %s: header hash %s, manifest records %s: the cache is damaged (run cache verify)", path, h, rec.HeaderXXH3)
	}
	return nil
}

type progressWriter struct{ p *ckpt.Progress }

func (w progressWriter) Write(b []byte) (int, error) {
	w.p.Add(int64(len(b)))
	return len(b), nil
}

// regionHasher hashes the data region of a .tensorbin stream: everything
// after 8 + the u64 header size at its start.
type regionHasher struct {
	h    *xxh3s.Hasher
	hh   *xxh3s.Hasher // header region
	n    int64
	hdr  [8]byte
	skip int64
}

func newRegionHasher() *regionHasher { return &regionHasher{h: xxh3s.New(), hh: xxh3s.New(), skip: -1} }

func (r *regionHasher) Write(p []byte) (int, error) {
	total := len(p)
	for len(p) > 0 {
		if r.n < 8 {
			k := copy(r.hdr[r.n:], p)
			r.hh.Write(p[:k])
			r.n += int64(k)
			p = p[k:]
			if r.n == 8 {
				hs := binary.LittleEndian.Uint64(r.hdr[:])
				r.skip = 8 + int64(min(hs, 1<<62))
			}
			continue
		}
		if r.n < r.skip {
			k := int(min(int64(len(p)), r.skip-r.n))
			r.hh.Write(p[:k])
			r.n += int64(k)
			p = p[k:]
			continue
		}
		r.h.Write(p)
		r.n += int64(len(p))
		p = nil
	}
	return total, nil
}

func (r *regionHasher) sum() string { return cache.HexHash(r.h.Sum64()) }

func (r *regionHasher) headerSum() string { return cache.HexHash(r.hh.Sum64()) }

// outputWriter marks the errors of writing an extracted file as our own
// side's (*atomicfile.WriteError), not the archive's.
type outputWriter struct{ w io.Writer }

func (o outputWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		err = &atomicfile.WriteError{Err: err}
	}
	return n, err
}

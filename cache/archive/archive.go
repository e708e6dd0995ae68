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
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/klauspost/compress/zstd"
)

// maxManifestBytes bounds the manifest read from an archive.
const maxManifestBytes = 256 << 20

// PackOptions tune Pack.
type PackOptions struct {
	// Workers is the zstd encoder concurrency (default GOMAXPROCS).
	Workers int
	// Progress counts cache bytes archived (nil-safe).
	Progress *ckpt.Progress
	// Select picks the cache folder when dir is a root holding several.
	Select cache.Selector
}

// Pack writes one built cache folder as a zstd-compressed tar stream to w:
// every file of the manifest, in manifest order (paths relative to the
// cache root), then manifest.json last. dir is the cache folder, or a
// cache root holding exactly one that opt.Select matches (see
// cache.ResolveFolder); a folder whose build did not finish is refused
// (*cache.UnfinishedError). Each file's data
// hash is checked against the manifest while it is read, so a damaged cache
// is never shipped. It returns the manifest.
func Pack(ctx context.Context, dir string, w io.Writer, opt PackOptions) (*cache.Manifest, error) {
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	folder, err := cache.ResolveFolder(dir, opt.Select)
	if err != nil {
		return nil, err
	}
	root := folder.Root
	if err := cache.CheckFinished(folder.Path()); err != nil {
		return nil, err
	}
	m, err := cache.ReadManifest(folder.Path())
	if err != nil {
		return nil, err
	}
	if m.CacheDir != folder.Dir {
		return nil, fmt.Errorf("reading manifest in %s: it is for cache folder %s", folder.Path(), m.CacheDir)
	}
	mb, err := os.ReadFile(filepath.Join(folder.Path(), cache.ManifestName))
	if err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		opt.Progress.AddTotal(f.Size)
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(opt.Workers), zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, rec := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := packFile(tw, root, rec, opt.Progress); err != nil {
			zw.Close()
			return nil, err
		}
	}
	hdr := &tar.Header{Name: cache.ManifestName, Mode: 0o644, Size: int64(len(mb)), ModTime: time.Now(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(mb); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing: %w", err)
	}
	return m, nil
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

// UnpackOptions tune Unpack.
type UnpackOptions struct {
	Progress *ckpt.Progress // counts bytes extracted (nil-safe)
}

// Unpack extracts an archive written by Pack into the cache root dest (into
// the archive's cache folder, which it locks; other folders are not
// touched).
// Files are extracted into a temporary directory under dest and hashed on
// the way; the manifest (last in the archive) must list exactly the
// extracted files with matching sizes, header sizes and data hashes. Only
// then are the files renamed into place — after removing any manifest in
// dest, so that a half-replaced cache never looks complete — and the
// manifest is written last. On any error nothing in dest looks complete
// and the temporary directory is removed.
func Unpack(ctx context.Context, r io.Reader, dest string, opt UnpackOptions) (*cache.Manifest, error) {
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, &ckpt.WriteError{Op: "creating", Path: dest, Err: err}
	}
	tmp, err := os.MkdirTemp(dest, ".unpack-")
	if err != nil {
		return nil, &ckpt.WriteError{Err: err}
	}
	defer os.RemoveAll(tmp)
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	x := &extraction{tmp: tmp, files: map[string]extracted{}, progress: opt.Progress}
	if err := x.read(ctx, tar.NewReader(zr)); err != nil {
		return nil, err
	}
	m, err := x.check()
	if err != nil {
		return nil, err
	}
	if err := x.place(dest, m); err != nil {
		return nil, err
	}
	return m, nil
}

// extracted is what Unpack saw of one archived file.
type extracted struct {
	size  int64
	hash  string
	hhash string
	hs    uint64
}

// extraction is an archive being unpacked into the temporary directory
// tmp: the files extracted, in archive order, and the manifest's bytes.
type extraction struct {
	tmp      string
	files    map[string]extracted
	order    []string
	mb       []byte
	progress *ckpt.Progress
}

// read extracts every regular file of the archive into tmp, hashing it on
// the way, and keeps the manifest, which must come last.
func (x *extraction) read(ctx context.Context, tr *tar.Reader) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading archive: %w", err)
		}
		if x.mb != nil {
			return fmt.Errorf("reading archive: entry %s after %s (the manifest must be last)", strconv.Quote(h.Name), cache.ManifestName)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("reading archive: entry %s is not a regular file", strconv.Quote(h.Name))
		}
		if err := cache.CheckRelPath(h.Name); err != nil {
			return fmt.Errorf("reading archive: %w", err)
		}
		if h.Name == cache.ManifestName {
			if h.Size > maxManifestBytes {
				return fmt.Errorf("reading archive: manifest of %d bytes is too large", h.Size)
			}
			if x.mb, err = io.ReadAll(tr); err != nil {
				return fmt.Errorf("reading archive: %s: %w", cache.ManifestName, err)
			}
			continue
		}
		if _, dup := x.files[h.Name]; dup {
			return fmt.Errorf("reading archive: %s appears twice", strconv.Quote(h.Name))
		}
		if err := x.extract(h.Name, tr); err != nil {
			return err
		}
	}
	if x.mb == nil {
		return fmt.Errorf("reading archive: no %s (the archive is incomplete)", cache.ManifestName)
	}
	return nil
}

// extract writes one archived file into tmp (fsynced) and records its
// size and hashes.
func (x *extraction) extract(name string, r io.Reader) error {
	p := filepath.Join(x.tmp, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return &ckpt.WriteError{Err: err}
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &ckpt.WriteError{Err: err}
	}
	rh := newRegionHasher()
	n, err := io.Copy(io.MultiWriter(outputWriter{f}, rh, progressWriter{x.progress}), r)
	if err == nil {
		if err = f.Sync(); err != nil {
			err = &ckpt.WriteError{Op: "syncing", Err: err}
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &ckpt.WriteError{Op: "closing", Err: cerr}
	}
	if err != nil {
		return fmt.Errorf("extracting %s: %w", name, err)
	}
	x.files[name] = extracted{size: n, hash: rh.sum(), hhash: rh.headerSum(), hs: binary.LittleEndian.Uint64(rh.hdr[:])}
	x.order = append(x.order, name)
	return nil
}

// check parses the manifest and holds the extracted files against it:
// exactly the listed files, with the recorded sizes, header sizes and
// hashes and a readable header; each gets its recorded mtime.
func (x *extraction) check() (*cache.Manifest, error) {
	m, err := cache.ParseManifest(x.mb, "in the archive")
	if err != nil {
		return nil, fmt.Errorf("reading archive: %w", err)
	}
	listed := map[string]bool{}
	for _, rec := range m.Files {
		listed[rec.Path] = true
		if err := x.checkFile(rec); err != nil {
			return nil, err
		}
	}
	for _, n := range x.order {
		if !listed[n] {
			return nil, fmt.Errorf("archive entry %s is not in the manifest", n)
		}
	}
	return m, nil
}

// checkFile holds one extracted file against its manifest record.
func (x *extraction) checkFile(rec cache.FileRecord) error {
	g, ok := x.files[rec.Path]
	switch {
	case !ok:
		return fmt.Errorf("archive lacks %s, which the manifest lists", rec.Path)
	case g.size != rec.Size:
		return fmt.Errorf("archive entry %s: %d bytes, manifest records %d", rec.Path, g.size, rec.Size)
	case g.hs != rec.HeaderSize:
		return fmt.Errorf("archive entry %s: header size %d, manifest records %d", rec.Path, g.hs, rec.HeaderSize)
	case g.hash != rec.DataXXH3:
		return fmt.Errorf("archive entry %s: data hash %s, manifest records %s", rec.Path, g.hash, rec.DataXXH3)
	case g.hhash != rec.HeaderXXH3:
		return fmt.Errorf("archive entry %s: header hash %s, manifest records %s", rec.Path, g.hhash, rec.HeaderXXH3)
	}
	fp := filepath.Join(x.tmp, filepath.FromSlash(rec.Path))
	if _, err := tensorbin.ReadTensorbinFile(fp); err != nil {
		return fmt.Errorf("archive entry %s: %w", rec.Path, err)
	}
	if rec.MTimeNS != 0 {
		// Keep the recorded mtime so that a rebuild here skips the file.
		mt := time.Unix(0, rec.MTimeNS)
		if err := os.Chtimes(fp, mt, mt); err != nil {
			return &ckpt.WriteError{Err: err}
		}
	}
	return nil
}

// place moves the checked files into the cache folder of m under dest,
// holding its lock: the old manifest and journal go first, so that a
// half-replaced folder never looks complete, and the manifest is written
// last (atomically).
func (x *extraction) place(dest string, m *cache.Manifest) error {
	dir := cache.FolderOf(dest, m.CacheDir).Path()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := cache.LockFolder(dir)
	if err != nil {
		return err
	}
	defer lock.Release()
	for _, n := range []string{cache.ManifestName, cache.JournalName} {
		if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return &ckpt.WriteError{Err: err}
		}
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return err
	}
	for _, n := range x.order {
		to := filepath.Join(dest, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return &ckpt.WriteError{Err: err}
		}
		if err := os.Rename(filepath.Join(x.tmp, filepath.FromSlash(n)), to); err != nil {
			return &ckpt.WriteError{Op: "moving " + n + " into place", Err: err}
		}
		if err := atomicfile.SyncDir(filepath.Dir(to)); err != nil {
			return err
		}
	}
	return atomicfile.WriteFile(filepath.Join(dir, cache.ManifestName), x.mb)
}

// outputWriter marks the errors of writing an extracted file as our own
// side's (*ckpt.WriteError), not the archive's.
type outputWriter struct{ w io.Writer }

func (o outputWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if err != nil {
		err = &ckpt.WriteError{Err: err}
	}
	return n, err
}

package archive

import (
	"archive/tar"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
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
// manifest.json first, then every file of the manifest, in manifest order
// (paths relative to the cache root), so that Unpack knows every entry's
// name, size and hashes before it writes a byte of it. dir is the cache folder, or a
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
	hdr := &tar.Header{Name: cache.ManifestName, Mode: 0o644, Size: int64(len(mb)), ModTime: time.Now(), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(mb); err != nil {
		return nil, err
	}
	for _, rec := range m.Files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := packFile(tw, root, rec, opt.Progress); err != nil {
			zw.Close()
			return nil, err
		}
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

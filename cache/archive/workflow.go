package archive

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// PackRequest is what `ckpt cache pack` asks for: the cache folder Dir
// (or the one of the cache root Dir that Select picks) archived into the
// file Out.
type PackRequest struct {
	Dir, Out string
	PackOptions
}

// Validate refuses a request that is itself wrong before any work (a
// *ckpt.UsageError with the CLI's message).
func (r PackRequest) Validate() error {
	if r.Out == "" {
		return &ckpt.UsageError{Reason: "cache pack needs -o/--out FILE.tar.zst"}
	}
	return nil
}

// PackResult is what PackFile wrote: the manifest of the archived folder,
// the bytes of its files and the size of the archive.
type PackResult struct {
	Manifest *cache.Manifest
	Out      string
	// Bytes is the size of the archived files, ArchiveBytes the archive's.
	Bytes, ArchiveBytes int64
}

// PackFile is the workflow of `ckpt cache pack`: it validates the request
// and writes the archive (Pack) into place atomically (atomicfile): on any
// error no file is left at Out.
func PackFile(ctx context.Context, req PackRequest) (*PackResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	af, err := atomicfile.Create(req.Out)
	if err != nil {
		return nil, err
	}
	defer af.Abort()
	m, err := Pack(ctx, req.Dir, af, req.PackOptions)
	if err != nil {
		return nil, err
	}
	if err := af.Commit(); err != nil {
		return nil, err
	}
	res := &PackResult{Manifest: m, Out: req.Out, Bytes: filesBytes(m)}
	if st, err := os.Stat(req.Out); err == nil {
		res.ArchiveBytes = st.Size()
	}
	return res, nil
}

// UnpackRequest is what `ckpt cache unpack` asks for: the archive File
// extracted into the cache root Dir.
type UnpackRequest struct {
	File, Dir string
	// Progress counts the archive bytes read (nil-safe).
	Progress *ckpt.Progress
}

// Validate refuses a request that is itself wrong before any work (a
// *ckpt.UsageError with the CLI's message).
func (r UnpackRequest) Validate() error {
	if r.Dir == "" {
		return &ckpt.UsageError{Reason: "cache unpack needs -o/--out DIR"}
	}
	return nil
}

// UnpackResult is what UnpackFile placed: the manifest and the bytes of
// its files.
type UnpackResult struct {
	Manifest *cache.Manifest
	Dir      string
	Bytes    int64
}

// UnpackFile is the workflow of `ckpt cache unpack`: it validates the
// request, opens the archive and extracts it (Unpack), counting the
// archive bytes read in req.Progress (its total is the file's size).
func UnpackFile(ctx context.Context, req UnpackRequest) (*UnpackResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f, err := os.Open(req.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		req.Progress.AddTotal(st.Size())
	}
	m, err := Unpack(ctx, countingReader{f, req.Progress}, req.Dir, UnpackOptions{})
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", req.File, err)
	}
	return &UnpackResult{Manifest: m, Dir: req.Dir, Bytes: filesBytes(m)}, nil
}

// filesBytes is the size of the manifest's files.
func filesBytes(m *cache.Manifest) int64 {
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	return total
}

// countingReader counts the archive bytes read.
type countingReader struct {
	r io.Reader
	p *ckpt.Progress
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.Add(int64(n))
	return n, err
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
)

// PackOptions is what `ckpt cache pack` asks for: the cache folder Dir
// (or the one of the cache root Dir that Select picks) archived into the
// file Out.
type PackOptions struct {
	Dir, Out string
	WriteOptions
}

// PackResult is what Pack wrote: the folders archived (Packed: of a
// vision model, both), the bytes of their files and the size of the
// archive.
type PackResult struct {
	Packed
	Out string
	// Bytes is the size of the archived files of the (main) folder,
	// CompanionBytes of the vision folder packed with it (0 for none),
	// ArchiveBytes the archive's.
	Bytes, CompanionBytes, ArchiveBytes int64
}

// Pack is the workflow of `ckpt cache pack`: it writes the archive (Write)
// into place atomically (atomicfile): on any error no file is left at Out.
// An empty Out is a *ckpt.OptionError.
func Pack(ctx context.Context, req PackOptions) (*PackResult, error) {
	if req.Out == "" {
		return nil, &ckpt.OptionError{Field: "Out", Reason: "is empty"}
	}
	// The output policy (atomicfile.Open): never over a file of the
	// folders being packed (its .tensorbin files, manifest, journal, lock),
	// through any link, nor as a new file inside them (it would stay in
	// the cache as a file its manifest does not list); a device or FIFO
	// (/dev/stdout) is written through.
	files, folders := folderFiles(req.Dir, req.Select)
	pol := atomicfile.Policy{Flag: "-o", Inputs: files, InputsAre: "the cache being packed", InputDirs: folders}
	af, err := atomicfile.Open(req.Out, pol)
	if err != nil {
		return nil, err
	}
	defer af.Abort()
	cw := &countingWriter{w: af}
	p, err := Write(ctx, req.Dir, cw, req.WriteOptions)
	if err != nil {
		return nil, err
	}
	if err := af.Commit(); err != nil {
		return nil, err
	}
	res := &PackResult{Packed: *p, Out: req.Out, Bytes: filesBytes(p.Manifest), ArchiveBytes: cw.n}
	if p.Companion != nil {
		res.CompanionBytes = filesBytes(p.Companion)
	}
	return res, nil
}

// folderFiles lists the files of the cache folder that dir (a folder, or
// a root holding one that sel picks) names, and of its companion: what Write
// reads, and more; and those folders. Nothing when it names none (Write says
// why).
func folderFiles(dir string, sel cache.Selector) ([]string, []string) {
	folder, err := cache.ResolveFolder(dir, sel)
	if err != nil {
		return nil, nil
	}
	dirs := []string{folder.Path()}
	// The model's other folder (a vision folder, its main folder) is one
	// model with it: never written over either.
	if m, err := cache.ReadManifest(folder.Path()); err == nil && m.Companion != "" {
		dirs = append(dirs, cache.FolderOf(folder.Root, m.Companion).Path())
	}
	var files []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files, dirs
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// UnpackOptions is what `ckpt cache unpack` asks for: the archive File
// extracted into Dir, a cache root (the archive's folder is written under
// it) or a cache folder (the archive must hold that folder).
type UnpackOptions struct {
	File, Dir string
	// Progress counts the archive bytes read (nil-safe).
	Progress *ckpt.Progress
	// Words are the caller's words for the options the refusal of a file
	// that is not an archive may name (ckpt.DescribeBytes).
	Words ckpt.Words
}

// UnpackResult is what Unpack placed: the manifest, the cache folder
// written (Dir: its path), the bytes of its files, and what it replaced
// (Unpacked); of an archive of a vision model's two folders, the vision
// folder too (Unpacked.Companion, CompanionDir, CompanionBytes).
type UnpackResult struct {
	Unpacked
	Dir   string
	Bytes int64
	// CompanionDir is the path of the vision folder written with the main
	// folder ("" for an archive of one folder), CompanionBytes the bytes
	// of its files.
	CompanionDir   string
	CompanionBytes int64
}

// Unpack is the workflow of `ckpt cache unpack`: it opens the archive and
// extracts it (Extract, which records the archive's name in the manifest),
// counting the archive bytes read in req.Progress (its total is the file's
// size). An empty Dir is a *ckpt.OptionError.
func Unpack(ctx context.Context, req UnpackOptions) (*UnpackResult, error) {
	if req.Dir == "" {
		return nil, &ckpt.OptionError{Field: "Dir", Reason: "is empty"}
	}
	f, err := os.Open(req.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := recognise(f, req.File, req.Words); err != nil {
		return nil, err // before anything is created under req.Dir
	}
	if st, err := f.Stat(); err == nil {
		req.Progress.AddTotal(st.Size())
	}
	u, err := Extract(ctx, &countingReader{r: f, p: req.Progress}, req.Dir, ExtractOptions{Archive: req.File})
	if err != nil {
		return nil, fmt.Errorf("unpacking %s: %w", req.File, err)
	}
	res := &UnpackResult{Unpacked: *u, Dir: u.Folder.Path(), Bytes: filesBytes(u.Manifest)}
	if c := u.Companion; c != nil {
		res.CompanionDir, res.CompanionBytes = c.Folder.Path(), filesBytes(c.Manifest)
	}
	return res, nil
}

// zstdMagic starts every zstd frame (RFC 8878, 3.1.1).
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// NotArchiveError says the file given to unpack is not a cache archive (a
// zstd-compressed tar, as cache pack writes it) and names what it looks
// like, in the words a SRC that is not safetensors gets
// (ckpt.DescribeBytes).
type NotArchiveError struct {
	File  string
	Looks string // "it looks like a config.json", ... ("" when unknown)
}

// Error names the file that is not a cache archive and, when known, what
// it looks like instead.
func (e *NotArchiveError) Error() string {
	msg := fmt.Sprintf("unpacking %s: not a cache archive (a zstd-compressed tar, as ckpt cache pack writes it)", e.File)
	if e.Looks != "" {
		msg += ": " + e.Looks
	}
	return msg
}

// recognise reads the first bytes of f (at offset 0, leaving f's offset
// alone) and refuses a file that does not start with a zstd frame.
func recognise(f *os.File, name string, w ckpt.Words) error {
	buf := make([]byte, 64<<10)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("unpacking %s: %w", name, err)
	}
	buf = buf[:n]
	if len(buf) >= len(zstdMagic) && string(buf[:len(zstdMagic)]) == string(zstdMagic) {
		return nil
	}
	looks := ckpt.DescribeBytes(buf, w)
	if n == 0 {
		looks = "it is empty"
	}
	return &NotArchiveError{File: name, Looks: looks}
}

// filesBytes is the size of the manifest's files.
func filesBytes(m *cache.Manifest) int64 {
	var total int64
	for _, f := range m.Files {
		total += f.Size
	}
	return total
}

// countingReader counts the archive bytes read; it can seek when its
// reader can (Extract reads an archive of an earlier version twice), and
// then counts the second pass again into the total.
type countingReader struct {
	r io.Reader
	p *ckpt.Progress
	n int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.Add(int64(n))
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Seek(off int64, whence int) (int64, error) {
	s, ok := c.r.(io.Seeker)
	if !ok {
		return 0, errors.New("the archive cannot seek")
	}
	pos, err := s.Seek(off, whence)
	if err == nil {
		c.p.AddTotal(c.n - pos)
		c.n = pos
	}
	return pos, err
}

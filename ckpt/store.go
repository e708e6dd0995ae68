package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// Blob is one file of a checkpoint: random access plus a known size. Blobs
// are safe for concurrent ReadAt calls.
type Blob interface {
	io.ReaderAt
	Size() int64
	Close() error
}

// Store gives access to the files of one checkpoint directory, wherever it
// lives (a local folder, a Hugging Face cache snapshot, a repository over
// HTTP). Names are slash-separated and relative to the checkpoint root.
type Store interface {
	// Open opens a file for random access. A missing file is an error
	// matching fs.ErrNotExist.
	Open(ctx context.Context, name string) (Blob, error)
	// Location describes a file for messages (a path or URL).
	Location(name string) string
	// List returns the names of the files in the root (not recursive);
	// stores that cannot list return nil, nil.
	List(ctx context.Context) ([]string, error)
}

// CheckName rejects shard names that could escape the checkpoint directory:
// absolute paths, "..", backslashes, empty segments and control characters.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("empty file name")
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name) || (len(name) > 1 && name[1] == ':'):
		return fmt.Errorf("file name %s is absolute", Quote(name))
	case strings.ContainsAny(name, "\\\x00"):
		return fmt.Errorf("file name %s contains a backslash or NUL", Quote(name))
	case strings.Contains(name, "://"):
		return fmt.Errorf("file name %s is a URL", Quote(name))
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("file name %s contains control characters", Quote(name))
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == ".." {
			return fmt.Errorf("file name %s escapes the checkpoint directory", Quote(name))
		}
	}
	if path.Clean(name) != name {
		return fmt.Errorf("file name %s is not a clean relative path", Quote(name))
	}
	return nil
}

// DirStore is a Store over a local directory. Files are opened through an
// os.Root, so symlinks that lead out of the directory are refused.
type DirStore struct {
	dir  string
	root *os.Root
}

// NewDirStore opens dir as a Store. Close releases it.
func NewDirStore(dir string) (*DirStore, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoint directory %s: %w", dir, err)
	}
	return &DirStore{dir: dir, root: root}, nil
}

// Dir is the directory the store reads.
func (s *DirStore) Dir() string { return s.dir }

// Close releases the directory handle.
func (s *DirStore) Close() error { return s.root.Close() }

// Location is the file's path.
func (s *DirStore) Location(name string) string {
	return filepath.Join(s.dir, filepath.FromSlash(name))
}

// Open opens name inside the directory.
func (s *DirStore) Open(ctx context.Context, name string) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := CheckName(name); err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.Location(name), err)
	}
	f, err := s.root.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", s.Location(name), err)
	}
	return NewFileBlob(f, s.Location(name))
}

// List lists regular files (and links to them) in the directory.
func (s *DirStore) List(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.dir, err)
	}
	out := []string{} // non-nil: an empty directory is listed, not "cannot list"
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		out = append(out, e.Name())
	}
	return out, nil
}

// fileBlob is a local regular file. Its ReadAt first tries to copy from
// the page cache without blocking (readCached, Linux), so that reading a
// cached checkpoint does not hand the goroutine's processor to another
// thread per read; what is not cached is read the usual way.
type fileBlob struct {
	*os.File
	size int64
	rc   syscall.RawConn
	// nowait is cleared when the kernel does not support reads that
	// fail instead of waiting for the disk.
	nowait atomic.Bool
}

// NewFileBlob makes a Blob of the open regular file f (loc names it in
// errors); the Blob closes f.
func NewFileBlob(f *os.File, loc string) (Blob, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat %s: %w", loc, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &FormatError{File: loc, Offset: -1, Reason: fmt.Sprintf("not a regular file (%s)", st.Mode().Type())}
	}
	b := &fileBlob{File: f, size: st.Size()}
	if rc, err := f.SyscallConn(); err == nil {
		b.rc = rc
		b.nowait.Store(true)
	}
	return b, nil
}

func (b *fileBlob) Size() int64 { return b.size }

// ReadAt reads len(p) bytes at off: the part the page cache holds through
// readCached, the rest (if any) through the file.
func (b *fileBlob) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if b.nowait.Load() {
		b.rc.Control(func(fd uintptr) {
			var ok bool
			n, ok = readCached(fd, p, off)
			if !ok {
				b.nowait.Store(false)
			}
		})
		if n == len(p) {
			return n, nil
		}
	}
	m, err := b.File.ReadAt(p[n:], off+int64(n))
	return n + m, err
}

// OpenFileBlob opens a local file as a Blob.
func OpenFileBlob(p string) (Blob, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return NewFileBlob(f, p)
}

// readSmallFile reads a whole file of at most limit bytes (index, config).
func readSmallFile(ctx context.Context, s Store, name string, limit int64) ([]byte, error) {
	b, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Size() > limit {
		return nil, &FormatError{File: s.Location(name), Offset: -1, Reason: fmt.Sprintf("file is %d bytes, more than the %d this tool reads for it", b.Size(), limit)}
	}
	buf := make([]byte, b.Size())
	if _, err := b.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF)) {
		return nil, fmt.Errorf("reading %s: %w", s.Location(name), err)
	}
	return buf, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// DigestStore is implemented by stores that know each file's expected
// content digest, such as a Hugging Face cache snapshot whose LFS blobs are
// named by their SHA-256. verify --read-data checks files against it.
type DigestStore interface {
	// ExpectedSHA256 returns the lowercase hex SHA-256 the file must have.
	ExpectedSHA256(name string) (string, bool)
}

// UnwrapStore returns the store under any wrappers (stores with an
// Unwrap() Store method), to reach the optional interfaces of the
// innermost one (PartialStore, DigestStore).
func UnwrapStore(s Store) Store {
	for {
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// PartialStore is implemented by stores that can tell files whose download
// is incomplete (a blob still *.incomplete, a snapshot link to a missing
// blob). Structural commands name them; verify fails on them.
type PartialStore interface {
	Partial(ctx context.Context) ([]string, error)
}

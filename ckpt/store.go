package ckpt

import (
	listpkg "container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
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

// LocalStore is a Store whose files are local: a directory (DirStore) or
// a Hugging Face cache snapshot. Readers size their reads for it
// (StreamChunk), as they size requests for a remote store.
type LocalStore interface {
	Store
	// Dir is the local directory the store's files are in.
	Dir() string
}

// DirStore is a Store over a local directory. Files are opened through an
// os.Root, so symlinks that lead out of the directory are refused.
type DirStore struct {
	dir  string
	root *os.Root
	pool *FilePool
}

// NewDirStore opens dir as a Store. Close releases it.
func NewDirStore(dir string) (*DirStore, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoint directory %s: %w", dir, err)
	}
	return &DirStore{dir: dir, root: root, pool: NewFilePool(0)}, nil
}

// Dir is the directory the store reads (LocalStore).
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
	loc, rel := s.Location(name), filepath.FromSlash(name)
	b, err := NewPooledFileBlob(s.pool, func() (*os.File, error) { return s.root.Open(rel) }, loc)
	var fe *FormatError
	if err != nil && !errors.As(err, &fe) {
		return nil, fmt.Errorf("opening %s: %w", loc, err)
	}
	return b, err
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

// DefaultOpenFiles is how many files of one store a FilePool keeps open
// unless told otherwise: enough for every worker of a command to read its
// own shard, far below any descriptor limit.
const DefaultOpenFiles = 32

// FilePool bounds the files of one store that are open at once, so that a
// checkpoint of any number of shards is read within the file-descriptor
// limit. A blob's file is opened when the store opens it (its header is
// read next), kept open while a read uses it, and closed when another blob
// of the pool needs the slot, least recently used first; a read of a
// closed one opens it again, and refuses it if the path now names another
// file than the one first opened. The zero value is not usable: see
// NewFilePool.
type FilePool struct {
	mu    sync.Mutex
	cond  *sync.Cond
	limit int
	open  int           // slots taken: open files and files being opened
	idle  *listpkg.List // open files no read uses, least recently used first
}

// NewFilePool returns a pool of at most limit open files (DefaultOpenFiles
// when limit <= 0).
func NewFilePool(limit int) *FilePool {
	if limit <= 0 {
		limit = DefaultOpenFiles
	}
	p := &FilePool{limit: limit, idle: listpkg.New()}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// take reserves a slot, closing the least recently used idle file when
// the pool is full and waiting when every open file is in use. p.mu is
// held.
func (p *FilePool) take() {
	for p.open >= p.limit {
		if e := p.idle.Front(); e != nil {
			p.idle.Remove(e)
			v := e.Value.(*fileBlob)
			v.f.Close()
			v.f, v.rc, v.elem = nil, nil, nil
			p.open--
			continue
		}
		p.cond.Wait()
	}
	p.open++
}

// fileBlob is a local regular file of a FilePool. Its ReadAt first tries
// to copy from the page cache without blocking (readCached, Linux), so
// that reading a cached checkpoint does not hand the goroutine's processor
// to another thread per read; what is not cached is read the usual way.
type fileBlob struct {
	pool   *FilePool
	reopen func() (*os.File, error) // nil: the file is never closed before Close
	loc    string
	size   int64
	first  os.FileInfo // of the file first opened
	// nowait is cleared when the kernel does not support reads that
	// fail instead of waiting for the disk.
	nowait atomic.Bool
	// noDirect is set when the file system refuses direct reads
	// (ReadStream, stream.go).
	noDirect atomic.Bool
	// noStat is set when the kernel refuses cachestat (before Linux 6.5,
	// or a filter): allCached asks mincore only.
	noStat atomic.Bool

	// Guarded by pool.mu.
	f       *os.File // nil while closed
	rc      syscall.RawConn
	refs    int              // reads using f
	elem    *listpkg.Element // in pool.idle while open and unused
	opening bool
	closed  bool
}

// ownFileBlob makes a Blob of the open regular file f (loc names it in
// errors); the Blob closes f. It is kept open until Close.
func ownFileBlob(f *os.File, loc string) (Blob, error) {
	p := NewFilePool(1)
	p.open = 1
	return newFileBlob(p, f, nil, loc)
}

// NewPooledFileBlob opens a Blob whose file open opens, in pool: the file
// is closed when the pool needs its slot and opened again with open when
// it is read (loc names it in errors).
func NewPooledFileBlob(pool *FilePool, open func() (*os.File, error), loc string) (Blob, error) {
	pool.mu.Lock()
	pool.take()
	pool.mu.Unlock()
	f, err := open()
	if err != nil {
		pool.mu.Lock()
		pool.open--
		pool.cond.Broadcast()
		pool.mu.Unlock()
		return nil, err
	}
	return newFileBlob(pool, f, open, loc)
}

// newFileBlob makes the blob of f, which holds a slot of pool.
func newFileBlob(pool *FilePool, f *os.File, reopen func() (*os.File, error), loc string) (Blob, error) {
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &FormatError{File: loc, Offset: -1, Reason: fmt.Sprintf("not a regular file (%s)", st.Mode().Type())}
	}
	if err != nil {
		f.Close()
		pool.mu.Lock()
		pool.open--
		pool.cond.Broadcast()
		pool.mu.Unlock()
		return nil, err
	}
	b := &fileBlob{pool: pool, reopen: reopen, loc: loc, size: st.Size(), first: st}
	b.nowait.Store(true)
	pool.mu.Lock()
	b.setFile(f)
	b.elem = pool.idle.PushBack(b)
	pool.cond.Broadcast()
	pool.mu.Unlock()
	return b, nil
}

// setFile makes f the blob's open file. pool.mu is held.
func (b *fileBlob) setFile(f *os.File) {
	b.f, b.rc = f, nil
	if rc, err := f.SyscallConn(); err == nil {
		b.rc = rc
	}
}

func (b *fileBlob) Size() int64 { return b.size }

// acquire returns the blob's open file for one read, opening it again if
// the pool closed it; release gives it back.
func (b *fileBlob) acquire() (*os.File, syscall.RawConn, error) {
	p := b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		switch {
		case b.closed:
			return nil, nil, fmt.Errorf("reading %s: %w", b.loc, os.ErrClosed)
		case b.f != nil:
			if b.refs == 0 && b.elem != nil {
				p.idle.Remove(b.elem)
				b.elem = nil
			}
			b.refs++
			return b.f, b.rc, nil
		case b.opening:
			p.cond.Wait()
			continue
		}
		p.take()
		b.opening = true
		p.mu.Unlock()
		f, err := b.reopen()
		if err == nil {
			var st os.FileInfo
			if st, err = f.Stat(); err == nil && (!os.SameFile(st, b.first) || st.Size() != b.size) {
				err = fmt.Errorf("%s was replaced while it was being read (another file, or %d bytes where it had %d)", b.loc, st.Size(), b.size)
			}
			if err != nil {
				f.Close()
			}
		}
		p.mu.Lock()
		b.opening = false
		p.cond.Broadcast()
		if err != nil {
			p.open--
			return nil, nil, fmt.Errorf("opening %s again (closed to stay within the open-file limit): %w", b.loc, err)
		}
		if b.closed {
			f.Close()
			p.open--
			continue
		}
		b.setFile(f)
	}
}

func (b *fileBlob) release() {
	p := b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	b.refs--
	if b.refs > 0 {
		return
	}
	if b.closed {
		b.f.Close()
		b.f, b.rc = nil, nil
		p.open--
	} else {
		b.elem = p.idle.PushBack(b)
	}
	p.cond.Broadcast()
}

// Close closes the blob's file (after the reads that use it).
func (b *fileBlob) Close() error {
	p := b.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	if b.f == nil || b.refs > 0 {
		return nil
	}
	if b.elem != nil {
		p.idle.Remove(b.elem)
		b.elem = nil
	}
	err := b.f.Close()
	b.f, b.rc = nil, nil
	p.open--
	p.cond.Broadcast()
	return err
}

// ReadAt reads len(p) bytes at off: the part the page cache holds through
// readCached, the rest (if any) through the file.
func (b *fileBlob) ReadAt(p []byte, off int64) (int, error) {
	f, rc, err := b.acquire()
	if err != nil {
		return 0, err
	}
	defer b.release()
	n := 0
	if rc != nil && b.nowait.Load() {
		rc.Control(func(fd uintptr) {
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
	m, err := f.ReadAt(p[n:], off+int64(n))
	return n + m, err
}

// OpenFileBlob opens a local file as a Blob.
func OpenFileBlob(p string) (Blob, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return ownFileBlob(f, p)
}

// readSmallFile reads a whole file of at most limit bytes (index, config).
func readSmallFile(ctx context.Context, s Store, name string, limit int64) ([]byte, error) {
	b, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	if b.Size() > limit {
		return nil, &FormatError{File: s.Location(name), Offset: -1,
			Reason: fmt.Sprintf("file is %d bytes, more than the %d this tool reads for it", b.Size(), limit)}
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

var _ LocalStore = (*DirStore)(nil)

package verify

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Open opens src like ckpt.Open with Options.Lenient, except that a shard
// whose size disagrees with its header (a truncated download, trailing
// bytes) still opens: the size problem becomes the file.size finding of
// Run instead of an open error, and the other checks still run. Header
// format errors remain errors (they name the shard). Close the returned
// checkpoint when done.
func Open(ctx context.Context, src string, opt ckpt.Options, openers ...ckpt.SourceOpener) (*ckpt.Checkpoint, error) {
	opt.Lenient = true
	wrapped := make([]ckpt.SourceOpener, 0, len(openers)+1)
	for _, op := range openers {
		wrapped = append(wrapped, func(ctx context.Context, s string) (ckpt.Store, string, bool, error) {
			st, entry, ok, err := op(ctx, s)
			if !ok || err != nil {
				return st, entry, ok, err
			}
			return &sizeStore{Store: st}, entry, true, nil
		})
	}
	wrapped = append(wrapped, localOpener)
	return ckpt.Open(ctx, src, opt, wrapped...)
}

// OpenStore is Open for a Store (entry as for ckpt.OpenStore).
func OpenStore(ctx context.Context, store ckpt.Store, entry string, opt ckpt.Options) (*ckpt.Checkpoint, error) {
	opt.Lenient = true
	return ckpt.OpenStore(ctx, &sizeStore{Store: store}, entry, opt)
}

// localOpener opens local paths through a DirStore wrapped by sizeStore;
// paths that cannot be stat'ed are left to ckpt.Open (which names the error).
func localOpener(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
	st, err := os.Stat(src)
	if err != nil {
		return nil, "", false, nil
	}
	dir, entry := src, ""
	if !st.IsDir() {
		dir, entry = filepath.Dir(src), filepath.Base(src)
	}
	ds, err := ckpt.NewDirStore(dir)
	if err != nil {
		return nil, "", false, err
	}
	return &sizeStore{Store: ds}, entry, true, nil
}

// sizeMismatch records a shard whose real size differs from the size its
// header implies.
type sizeMismatch struct {
	Name           string
	Real, Expected int64
	HeaderBytes    int64
}

// sizeStore presents each .safetensors blob with the size its header
// implies, so that the core reader accepts a truncated or over-long shard;
// it records the real sizes for the file.size check.
type sizeStore struct {
	ckpt.Store
	mu       sync.Mutex
	mismatch map[string]sizeMismatch
}

// Unwrap returns the wrapped store.
func (s *sizeStore) Unwrap() ckpt.Store { return s.Store }

// Close closes the wrapped store if it can be closed.
func (s *sizeStore) Close() error {
	if c, ok := s.Store.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (s *sizeStore) mismatches() []sizeMismatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]sizeMismatch, 0, len(s.mismatch))
	for _, m := range s.mismatch {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i].Name, out[j].Name) })
	return out
}

func (s *sizeStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil || !strings.HasSuffix(name, ".safetensors") {
		return b, err
	}
	real := b.Size()
	var lenBuf [8]byte
	if real < 8 {
		return b, nil
	}
	if _, err := b.ReadAt(lenBuf[:], 0); err != nil {
		return b, nil
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > ckpt.MaxHeaderSize || int64(n) > real-8 {
		return b, nil // the core reader reports it
	}
	buf := make([]byte, n)
	if _, err := b.ReadAt(buf, 8); err != nil && !(errors.Is(err, io.EOF) && int64(n) == real-8) {
		return b, nil
	}
	h, _ := ckpt.ParseHeader(buf, name)
	if h == nil {
		return b, nil
	}
	var end uint64
	for _, t := range h.Tensors {
		end = max(end, t.End)
	}
	if end > uint64(1<<62) {
		return b, nil
	}
	expected := 8 + int64(n) + int64(end)
	if expected == real {
		return b, nil
	}
	s.mu.Lock()
	if s.mismatch == nil {
		s.mismatch = map[string]sizeMismatch{}
	}
	s.mismatch[name] = sizeMismatch{Name: name, Real: real, Expected: expected, HeaderBytes: int64(n)}
	s.mu.Unlock()
	return &sizedBlob{Blob: b, size: expected, real: real}, nil
}

// sizedBlob reports the size the header implies; reads past the real end
// fail with io.ErrUnexpectedEOF.
type sizedBlob struct {
	ckpt.Blob
	size, real int64
}

func (b *sizedBlob) Size() int64 { return b.size }

func (b *sizedBlob) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.Blob.ReadAt(p, off)
	if n < len(p) && off+int64(len(p)) > b.real && (err == nil || errors.Is(err, io.EOF)) {
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

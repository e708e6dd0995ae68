package ckpttest

import (
	"context"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// HookStore wraps a store so that tests can observe (or interrupt) reads:
// OnRead, if set, is called before every ReadAt of a blob it opened, with
// the file's name, the offset and the length. It may be called
// concurrently.
type HookStore struct {
	ckpt.Store
	OnRead func(name string, off int64, n int)
}

// Open opens name through the wrapped store.
func (s *HookStore) Open(ctx context.Context, name string) (ckpt.Blob, error) {
	b, err := s.Store.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return &hookBlob{Blob: b, s: s, name: name}, nil
}

type hookBlob struct {
	ckpt.Blob
	s    *HookStore
	name string
}

func (b *hookBlob) ReadAt(p []byte, off int64) (int, error) {
	if f := b.s.OnRead; f != nil {
		f(b.name, off, len(p))
	}
	return b.Blob.ReadAt(p, off)
}

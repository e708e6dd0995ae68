package extract

import (
	"io"
	"sync"
)

// pipeWriter is a buffered writer whose buffers are written by a goroutine
// of their own, so that conversion (this goroutine) and the write into the
// page cache (the other) use both cores. It holds at most n buffers of size
// bytes. The first error of the underlying writer is returned by the Write
// or Close after it, unchanged (a *ckpt.WriteError stays one).
type pipeWriter struct {
	cur  []byte
	free chan []byte
	full chan []byte
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func newPipeWriter(w io.Writer, size, n int) *pipeWriter {
	p := &pipeWriter{free: make(chan []byte, n), full: make(chan []byte, n), done: make(chan struct{})}
	for range n {
		p.free <- make([]byte, 0, size)
	}
	full := p.full // Close clears p.full
	go func() {
		defer close(p.done)
		for b := range full {
			if p.failed() == nil {
				if _, err := w.Write(b); err != nil {
					p.mu.Lock()
					p.err = err
					p.mu.Unlock()
				}
			}
			p.free <- b[:0]
		}
	}()
	return p
}

func (p *pipeWriter) failed() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Write copies b into the buffers, handing each full one to the writer.
func (p *pipeWriter) Write(b []byte) (int, error) {
	if err := p.failed(); err != nil {
		return 0, err
	}
	n := len(b)
	for len(b) > 0 {
		if p.cur == nil {
			p.cur = <-p.free
		}
		k := copy(p.cur[len(p.cur):cap(p.cur)], b)
		p.cur = p.cur[:len(p.cur)+k]
		b = b[k:]
		if len(p.cur) == cap(p.cur) {
			p.full <- p.cur
			p.cur = nil
		}
	}
	return n, nil
}

// Close writes what is buffered, waits for the writer and returns its
// first error. p is not usable afterwards; Close may be called again.
func (p *pipeWriter) Close() error {
	if p.full != nil {
		if len(p.cur) > 0 {
			p.full <- p.cur
		}
		p.cur = nil
		close(p.full)
		p.full = nil
		<-p.done
	}
	return p.failed()
}

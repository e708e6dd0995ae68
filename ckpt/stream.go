package ckpt

import (
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// StreamAlign is the alignment of the buffers ReadStream takes (that of
// direct reads from any disk).
const StreamAlign = 4096

// NewStreamBuffer returns a buffer for ReadStream reads of up to n bytes:
// aligned to StreamAlign, with room to round a read out to whole
// alignment units at both ends.
func NewStreamBuffer(n int) []byte {
	size := n + 2*StreamAlign
	b := make([]byte, size+StreamAlign)
	o := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (StreamAlign - 1))
	return b[o : o+size : o+size]
}

// streamReader is implemented by blobs that can read bytes that are read
// once, by a streaming reader, without keeping them in the page cache.
type streamReader interface {
	readStream(buf []byte, off int64, n int) ([]byte, error)
}

// ReadStream reads the raw tensor bytes [off, off+n) (relative to the
// tensor's start) for a reader that streams the tensor once, and returns
// the slice of buf that holds them. buf comes from NewStreamBuffer(m) with
// m >= n. On a local file on Linux, what the page cache holds is copied
// from it (as ReadAt does) and the rest is read directly from the disk
// into buf (O_DIRECT): no copy through the page cache, which would cost
// the kernel's time for every byte and push other files out of it. Other
// sources, and file systems that refuse direct reads, are read with
// ReadAt.
func (t *Tensor) ReadStream(buf []byte, off int64, n int) ([]byte, error) {
	if off < 0 || n < 0 || off > int64(t.NBytes())-int64(n) {
		return nil, fmt.Errorf("reading tensor %s of %s: range [%d, %d) outside its %d bytes", Quote(t.Name), t.File.Location, off, off+int64(n), t.NBytes())
	}
	abs := t.Offset() + off
	if sr, ok := t.File.blob.(streamReader); ok && len(buf) >= n+2*StreamAlign {
		p, err := sr.readStream(buf, abs, n)
		if err != nil {
			return nil, fmt.Errorf("reading tensor %s of %s at byte %d: %w", Quote(t.Name), t.File.Location, abs, err)
		}
		return p, nil
	}
	if len(buf) < n {
		buf = make([]byte, n)
	}
	if _, err := t.ReadAt(buf[:n], off); err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// readStream reads [abs, abs+n) of the file into buf (aligned, with
// 2*StreamAlign bytes to spare) and returns the slice holding it: copied
// from the page cache when it holds all of it, else read directly,
// rounded out to whole alignment units, through a handle opened for the
// read (so that the pool's limit of open files holds but for the reads in
// flight).
func (b *fileBlob) readStream(buf []byte, abs int64, n int) ([]byte, error) {
	f, rc, err := b.acquire()
	if err != nil {
		return nil, err
	}
	defer b.release()
	lead := int(abs & (StreamAlign - 1))
	dst := buf[lead : lead+n]
	direct := !b.noDirect.Load()
	k := 0
	if rc != nil && b.nowait.Load() {
		rc.Control(func(fd uintptr) {
			if direct {
				// Cached or not is asked first where the kernel can
				// tell (allCached): a read that fails instead of
				// waiting would start the read-ahead of what it
				// misses, which the direct read then reads a second
				// time.
				all, ok, statErr := allCached(fd, abs, n, !b.noStat.Load())
				if statErr {
					b.noStat.Store(true)
				}
				if ok && !all {
					return
				}
			}
			var ok bool
			k, ok = readCached(fd, dst, abs)
			if !ok {
				b.nowait.Store(false)
			}
		})
		if k == n {
			return dst, nil
		}
	}
	if direct {
		d, err := openDirectRead(f)
		if err == nil {
			s := (abs + int64(k)) &^ (StreamAlign - 1)
			e := (abs + int64(n) + StreamAlign - 1) &^ (StreamAlign - 1)
			pos := int(s - (abs - int64(lead))) // where byte s goes in buf
			got, err := d.ReadAt(buf[pos:pos+int(e-s)], s)
			d.Close()
			switch {
			case err == nil || (errors.Is(err, io.EOF) && s+int64(got) >= abs+int64(n)):
				return dst, nil
			case !isDirectUnsupported(err):
				return nil, err
			}
		}
		if err == nil || isDirectUnsupported(err) {
			// The file system refuses direct reads: not asked again.
			// Any other failure to open the handle (no file
			// descriptor left, say) is this read's only.
			b.noDirect.Store(true)
		}
	}
	m, err := f.ReadAt(dst[k:], abs+int64(k))
	if err != nil && !(errors.Is(err, io.EOF) && k+m == n) {
		return nil, err
	}
	return dst, nil
}

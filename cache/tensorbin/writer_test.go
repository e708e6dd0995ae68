package tensorbin

import (
	"errors"
	"fmt"
	"io"
)

// The streaming writer below is the tests' reference producer of .tensorbin
// files (the build writes its files itself, from EncodeHeader, in
// cache/build): the reader's tests and the fuzz corpus use it to make files
// with every header shape, gaps and shared buffers.

// Writer streams a .tensorbin file: NewWriter writes the header, then the
// caller writes the bytes of each distinct shard buffer in order of
// increasing offset (shards sharing one buffer are written once) through
// Write, and finally calls Close. The writer inserts the zero gaps between
// buffers, so a producer can emit a 47 MB shard piece by piece without
// holding the file in memory.
type Writer struct {
	w       io.Writer
	regions []region
	cur     int    // index of the region being written
	pos     uint64 // bytes of the data region written so far
	err     error
}

// NewWriter validates h, writes its header to w and returns a Writer for the
// data region.
func NewWriter(w io.Writer, h *Header) (*Writer, error) {
	prefix, err := EncodeHeader(h)
	if err != nil {
		return nil, err
	}
	rs, err := h.regions()
	if err != nil {
		return nil, fmt.Errorf("encoding tensorbin header: %w", err)
	}
	if _, err := w.Write(prefix); err != nil {
		return nil, fmt.Errorf("writing tensorbin header: %w", err)
	}
	return &Writer{w: w, regions: rs}, nil
}

// Write writes shard bytes. Bytes beyond the last buffer are an error.
func (t *Writer) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	n := 0
	for len(p) > 0 {
		// Skip finished regions.
		for t.cur < len(t.regions) && t.pos >= t.regions[t.cur].off+t.regions[t.cur].size {
			t.cur++
		}
		if t.cur >= len(t.regions) {
			t.err = fmt.Errorf("writing tensorbin data: %d bytes past the last shard", len(p))
			return n, t.err
		}
		r := t.regions[t.cur]
		if err := t.pad(r.off); err != nil {
			return n, err
		}
		k := min(uint64(len(p)), r.off+r.size-t.pos)
		m, err := t.w.Write(p[:k])
		n += m
		t.pos += uint64(m)
		if err != nil {
			t.err = fmt.Errorf("writing tensorbin data at offset %d: %w", t.pos, err)
			return n, t.err
		}
		p = p[k:]
	}
	return n, nil
}

// pad writes zeros up to data-region offset off.
func (t *Writer) pad(off uint64) error {
	var zeros [DataAlignment]byte
	for t.pos < off {
		k := min(off-t.pos, uint64(len(zeros)))
		if _, err := t.w.Write(zeros[:k]); err != nil {
			t.err = fmt.Errorf("writing tensorbin padding at offset %d: %w", t.pos, err)
			return t.err
		}
		t.pos += k
	}
	return nil
}

// Close checks that every shard buffer was written completely. It does not
// close the underlying writer.
func (t *Writer) Close() error {
	if t.err != nil {
		return t.err
	}
	if n := len(t.regions); n > 0 {
		last := t.regions[n-1]
		if last.size == 0 {
			if err := t.pad(last.off); err != nil {
				return err
			}
		}
		if end := last.off + last.size; t.pos < end {
			return fmt.Errorf("writing tensorbin data: %d of %d data bytes written", t.pos, end)
		}
	}
	t.err = errors.New("tensorbin writer is closed")
	return nil
}

// WriteTensorbin writes a whole .tensorbin file: the header of h, then
// shards[i] at h.Shards[i].Offset. len(shards) must equal len(h.Shards) and
// each buffer's length its shard's Size; shards sharing a buffer are written
// once.
func WriteTensorbin(w io.Writer, h *Header, shards [][]byte) error {
	if len(shards) != len(h.Shards) {
		return fmt.Errorf("writing tensorbin: %d buffers for %d shards", len(shards), len(h.Shards))
	}
	for i, s := range h.Shards {
		if uint64(len(shards[i])) != s.Size {
			return fmt.Errorf("writing tensorbin: shard %d has %d bytes, header says %d", i, len(shards[i]), s.Size)
		}
	}
	tw, err := NewWriter(w, h)
	if err != nil {
		return err
	}
	for _, r := range tw.regions {
		for i, s := range h.Shards {
			if s.Offset == r.off && s.Size == r.size {
				if _, err := tw.Write(shards[i]); err != nil {
					return err
				}
				break
			}
		}
	}
	return tw.Close()
}

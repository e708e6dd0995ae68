package extract

import (
	"context"
	"fmt"
	"io"
)

// writeShardAtHooked is writeShardAt with the test hooks h.
func (p *Plan) writeShardAtHooked(ctx context.Context, i int, w io.WriterAt, h hooks) (int64, error) {
	return p.writeShard(ctx, i, w, p.workers(), h)
}

// WriteShard streams shard i of the plan to w: the 8-byte length, the
// header, then every tensor's data in the reference writer's order, one
// piece at a time on this goroutine. No buffer holds more than the plan's
// chunk size of tensor data.
func (p *Plan) WriteShard(ctx context.Context, i int, w io.Writer) error {
	_, err := p.writeShard(ctx, i, &seqWriter{w: w}, 1, hooks{})
	return err
}

// seqWriter is the io.WriterAt of WriteShard: one worker writes the
// pieces in order, so each WriteAt continues where the last one ended.
type seqWriter struct {
	w   io.Writer
	pos int64
}

func (s *seqWriter) WriteAt(b []byte, off int64) (int, error) {
	if off != s.pos {
		return 0, fmt.Errorf("internal error: sequential write at byte %d, expected %d", off, s.pos)
	}
	n, err := s.w.Write(b)
	s.pos += int64(n)
	return n, err
}

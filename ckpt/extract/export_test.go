package extract

import (
	"context"
	"io"
)

// writeShardAtHooked is WriteShardAt with the test hooks h.
func (p *Plan) writeShardAtHooked(ctx context.Context, i int, w io.WriterAt, h hooks) (int64, error) {
	return p.writeShard(ctx, i, w, p.workers(), h)
}

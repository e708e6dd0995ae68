package extract

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// pieceMax bounds the output bytes, and the source bytes, of one piece:
// small enough that a worker's output buffer is still in the CPU cache
// when it is written, large enough that the writes are few.
const pieceMax = 1 << 20

// maxWorkers bounds the workers of one shard (PlanOptions.Workers = 0 means
// GOMAXPROCS, at most this many).
const maxWorkers = 4

// piece is a run of one output tensor's data, converted into a worker's
// buffer and written with one call at a known offset: units [u0, u0+n) of
// item (bytes for a copy, rows for packed E2M1 weights, elements
// otherwise), bytes output bytes at offset off of the file.
type piece struct {
	item       int
	u0, n      int64
	off, bytes int64
}

// shardJob is one shard cut into pieces, in file order. Every item has at
// least one piece (an empty tensor an empty one), so that its first piece
// checks its scales and its last one, whichever worker finishes it,
// settles its overflow count and its progress.
type shardJob struct {
	items  []*Item
	pieces []piece
	last   []int          // index of each item's last piece
	left   []atomic.Int64 // pieces of each item not done yet
	over   []atomic.Int64 // values of each item that overflow the output
	size   int64          // file size
}

// streamer is one worker: it converts pieces into buffers of its own, of
// at most the piece size each, allocated on first use and reused.
type streamer struct {
	raw   []byte    // source bytes
	vals  []float32 // decoded values
	out   []byte    // the piece's output
	prog  *ckpt.Progress
	guard *ckpt.FiniteGuard // NaN/Inf in the source data
	lut   *scaleLUT         // tables of lutFor
	lutOf *Item
}

// bufBytes is the size of the worker's buffers.
func (s *streamer) bufBytes() int64 {
	return int64(cap(s.raw)) + 4*int64(cap(s.vals)) + int64(cap(s.out))
}

func grow[T any](b []T, n int64) []T {
	if int64(cap(b)) < n {
		return make([]T, n)
	}
	return b[:n]
}

// pieceBytes is the bound on a piece's source and output bytes: the
// chunk size, at most pieceMax, whole 8-byte words.
func (p *Plan) pieceBytes() int64 { return max(min(p.chunk, pieceMax)&^7, 8) }

// workers is how many workers write a shard.
func (p *Plan) workers() int {
	if p.nworkers > 0 {
		return p.nworkers
	}
	return min(runtime.GOMAXPROCS(0), maxWorkers)
}

// job lays out shard i (the reference writer's order, ckpt.LayoutHeader)
// and cuts its tensors into pieces.
func (p *Plan) job(i int) (*shardJob, []byte, error) {
	if i < 0 || i >= len(p.Shards) {
		return nil, nil, fmt.Errorf("shard %d out of range (%d shards)", i, len(p.Shards))
	}
	sh := &p.Shards[i]
	specs := make([]ckpt.WriteSpec, len(sh.Items))
	byName := make(map[string]*Item, len(sh.Items))
	for k, it := range sh.Items {
		specs[k] = it.WriteSpec
		byName[it.Name] = it
	}
	hdr, order, err := ckpt.LayoutHeader(specs, p.Metadata)
	if err != nil {
		return nil, nil, err
	}
	base := 8 + int64(len(hdr))
	j := &shardJob{items: make([]*Item, len(order)), last: make([]int, len(order)),
		left: make([]atomic.Int64, len(order)), over: make([]atomic.Int64, len(order)), size: base}
	lim := p.pieceBytes()
	for k, ti := range order {
		it := byName[ti.Name]
		j.items[k] = it
		off := base + int64(ti.Begin)
		// units, the bytes one unit takes in the output, units per piece
		var units, ob, per int64
		switch {
		case it.Action == Copy:
			units, ob, per = int64(it.Source.NBytes()), 1, lim
		case it.Values != nil && it.Values.Packed():
			v := it.Values
			units, ob, per = v.Rows, v.Cols*int64(it.DType.Bits()/8), max(v.ChunkRows(lim), 1)
			if v.Cols == 0 {
				units = 0
			}
		default:
			sb, db := int64(it.Source.DType.Bits()/8), int64(it.DType.Bits()/8)
			units, ob, per = int64(it.Source.Numel()), db, max(lim/max(sb, db, 1), 1)
			if sb == 0 || db == 0 {
				units = 0 // the piece reports that it cannot convert
			}
		}
		for u := int64(0); ; u += per {
			n := min(per, units-u)
			j.pieces = append(j.pieces, piece{item: k, u0: u, n: n, off: off, bytes: n * ob})
			off += n * ob
			if u+n >= units {
				break
			}
		}
		j.last[k] = len(j.pieces) - 1
		j.left[k].Store(int64(j.last[k] + 1 - firstPiece(j, k)))
		if off != base+int64(ti.End) {
			return nil, nil, fmt.Errorf("tensor %s: pieces cover %d of %d bytes", ckpt.Quote(ti.Name), off-base-int64(ti.Begin), ti.End-ti.Begin)
		}
		j.size = off
	}
	return j, hdr, nil
}

// firstPiece is the index of item k's first piece (the pieces of items
// before it are all laid out).
func firstPiece(j *shardJob, k int) int {
	if k == 0 {
		return 0
	}
	return j.last[k-1] + 1
}

// writeShardAt writes shard i of the plan to w, which receives every byte
// range once, at its offset: the header, then the pieces of the tensors,
// converted and written by up to PlanOptions.Workers workers at once (each
// with buffers of at most the chunk size, or 1 MiB). It returns the file
// size. The bytes are those one worker writes in order. On an error it
// returns the one a single worker would have (the error of the first
// failing piece in file order); w then holds an incomplete file.
func (p *Plan) writeShardAt(ctx context.Context, i int, w io.WriterAt) (int64, error) {
	return p.writeShard(ctx, i, w, p.workers(), hooks{})
}

// hooks are what the tests observe of writeShard (export_test.go); the
// product passes none.
type hooks struct {
	// bufStat, when set, receives the buffer bytes of every worker as it
	// ends.
	bufStat func(int64)
}

// writeShard writes shard i to w with the given number of workers.
// Pieces are claimed in file order; after a failure no new piece is
// claimed, the claimed ones finish, and the failure of the earliest piece
// is returned, so that the error does not depend on the scheduling.
func (p *Plan) writeShard(ctx context.Context, i int, w io.WriterAt, workers int, h hooks) (int64, error) {
	j, hdr, err := p.job(i)
	if err != nil {
		return 0, err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	if _, err := w.WriteAt(lenBuf[:], 0); err != nil {
		return 0, err
	}
	if _, err := w.WriteAt(hdr, 8); err != nil {
		return 0, err
	}
	var (
		next  atomic.Int64
		stop  atomic.Bool
		mu    sync.Mutex
		first = len(j.pieces)
		ferr  error
	)
	fail := func(at int, err error) {
		mu.Lock()
		if at < first {
			first, ferr = at, err
		}
		mu.Unlock()
		stop.Store(true)
	}
	work := func() {
		s := &streamer{prog: p.progress, guard: p.guard}
		defer func() {
			if h.bufStat != nil {
				h.bufStat(s.bufBytes())
			}
		}()
		for !stop.Load() {
			k := int(next.Add(1) - 1)
			if k >= len(j.pieces) {
				return
			}
			if err := ctx.Err(); err != nil {
				fail(k, err)
				return
			}
			pc := j.pieces[k]
			it := j.items[pc.item]
			buf, err := s.piece(it, pc, &j.over[pc.item])
			if err == nil && int64(len(buf)) != pc.bytes {
				err = fmt.Errorf("internal error: tensor %s: a piece of %d bytes, expected %d", ckpt.Quote(it.Name), len(buf), pc.bytes)
			}
			if err == nil && len(buf) > 0 {
				if _, err = w.WriteAt(buf, pc.off); err != nil {
					err = fmt.Errorf("writing tensor %s: %w", ckpt.Quote(it.Name), err)
				}
			}
			if err != nil {
				fail(k, err)
				return
			}
			s.prog.Add(int64(len(buf)))
			if j.left[pc.item].Add(-1) == 0 {
				if err := s.finish(it, j.over[pc.item].Load()); err != nil {
					fail(j.last[pc.item], err)
					return
				}
			}
		}
	}
	workers = max(min(workers, len(j.pieces)), 1)
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if ferr != nil {
		return 0, ferr
	}
	return j.size, nil
}

// piece converts one piece into the worker's output buffer and returns
// it; over counts the values of the item that overflow the output.
func (s *streamer) piece(it *Item, pc piece, over *atomic.Int64) ([]byte, error) {
	switch {
	case it.Action == Copy:
		return s.copyRaw(it.Source, pc)
	case it.Values != nil && it.Values.Packed():
		return s.convertRows(it, pc, over)
	}
	return s.convert(it, pc, over)
}

// finish settles an item once all its pieces are written: values that
// overflowed the output dtype (refused unless allowed), and the progress.
func (s *streamer) finish(it *Item, over int64) error {
	if it.Action != Copy {
		why := fmt.Sprintf("%s holds at most %.5g", it.DType, numfmt.MaxFinite(it.DType))
		values := int64(it.Source.Numel())
		if v := it.Values; v != nil && v.Packed() {
			// the products of its codes and finite scales
			why = fmt.Sprintf("codes times the scales of %s; %s", ckpt.Quote(v.Scale.Name), why)
			values = v.NumValues()
		}
		if err := s.guard.OverflowOf(it.Source, values, it.DType, over, why); err != nil {
			return err
		}
	}
	s.prog.ItemDone()
	return nil
}

// copyRaw reads the piece's bytes of the tensor, unchanged.
func (s *streamer) copyRaw(t *ckpt.Tensor, pc piece) ([]byte, error) {
	s.out = grow(s.out, pc.n)
	buf := s.out
	if _, err := t.ReadAt(buf, pc.u0); err != nil {
		return nil, err
	}
	if err := s.guard.Check(t, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// subElems bounds the values converted in one pass, so that the float32
// values stay in the CPU cache.
const subElems = 32 << 10

// convert reads the piece's elements and converts them: decode to
// float32, multiply dequantised weights by their block scales, encode in
// the output dtype (nearest even); 8-bit codes under block scales go
// through tables (scaleLUT) instead, to the same bytes. The first piece
// of a dequantised weight checks its scales first.
func (s *streamer) convert(it *Item, pc piece, over *atomic.Int64) ([]byte, error) {
	t := it.Source
	sb, db := int64(t.DType.Bits()/8), int64(it.DType.Bits()/8)
	if sb == 0 || db == 0 {
		return nil, fmt.Errorf("tensor %s: cannot convert %s to %s", ckpt.Quote(t.Name), t.DType, it.DType)
	}
	scaled := it.Values != nil && it.Values.Scale != nil
	if scaled && pc.u0 == 0 {
		if err := s.guard.CheckTensor(it.Values.Scale); err != nil {
			return nil, err
		}
		if err := s.checkScales(it); err != nil {
			return nil, err
		}
	}
	e, m := pc.u0, pc.n
	s.raw = grow(s.raw, m*sb)
	s.out = grow(s.out, m*db)
	raw, out := s.raw, s.out
	if m == 0 {
		return out, nil
	}
	if _, err := t.ReadAt(raw, e*sb); err != nil {
		return nil, err
	}
	if scaled && sb == 1 && (db == 2 || db == 4) {
		// Dequantising 8-bit codes: a kernel, or a table per block scale.
		if s.lutOf != it {
			lut, err := newScaleLUT(t.DType, it.DType, it.Values)
			if err != nil {
				return nil, fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
			}
			s.lut, s.lutOf = lut, it
		}
		scanned, nan, err := s.lut.convert(it.Values, e, raw, out)
		if err != nil {
			return nil, fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
		}
		if !scanned || nan { // the guard counts, or refuses, NaN codes
			if err := s.guard.Check(t, raw); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if err := s.guard.Check(t, raw); err != nil {
		return nil, err
	}
	// Finite values may convert to Inf only when the output's range is
	// smaller (F32 to F16 or BF16, BF16 to F16): only then is the output
	// scanned, eight bytes at a time (the conversion costs far more).
	scan := it.Values == nil && numfmt.MayOverflow(t.DType, it.DType)
	sub := min(m, int64(subElems))
	s.vals = grow(s.vals, sub)
	for k := int64(0); k < m; k += sub {
		q := min(sub, m-k)
		vals, src, enc := s.vals[:q], raw[k*sb:(k+q)*sb], out[k*db:(k+q)*db]
		var err error
		if it.Values != nil && it.Values.Blocks() != nil {
			// dequantised by numfmt.BlockScales (decode, then scale)
			err = it.Values.Blocks().Dequantize(t.DType, src, e+k, vals)
		} else {
			err = numfmt.DecodeFloat32(t.DType, src, vals)
		}
		if err != nil {
			return nil, fmt.Errorf("tensor %s of %s at byte %d: %w", ckpt.Quote(t.Name), t.File.Location, t.Offset()+(e+k)*sb, err)
		}
		if err := numfmt.EncodeFloat32(it.DType, vals, enc); err != nil {
			return nil, fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
		}
		if scan {
			if nan, inf := ckpt.CountNonFinite(it.DType, enc); nan+inf > 0 {
				// Non-finite sources stay non-finite (the guard saw them).
				sn, si := ckpt.CountNonFinite(t.DType, src)
				over.Add(nan + inf - sn - si)
			}
		}
	}
	return out, nil
}

// checkScales: when a block scale of a dequantised weight times the
// largest code overflows the output dtype (a test on the small scale
// tensor), the weight is read once more to count the values that do.
func (s *streamer) checkScales(it *Item) error {
	v := it.Values
	n, first := v.OverflowingScales(it.DType)
	if n == 0 {
		return nil
	}
	over, err := v.CountOverflow(it.DType)
	if err != nil {
		return err
	}
	return s.guard.Overflow(it.Source, it.DType, over, ckpt.ScaleOverflowWhy(v.Scale.Name, n, first, it.DType))
}

// convertRows dequantises the piece's rows of a weight of packed E2M1
// codes (MXFP4, NVFP4) through ckpt.Values.ReadRows (numfmt's
// dequantisers: the float32 product), then encodes each value in the
// output dtype (rounded once, nearest even). Values of finite scales that
// are not finite in the output (the float32 product overflowed, or its
// rounding to the output) are counted for the guard. The first piece
// checks the scales (FiniteGuard.CheckScales: NaN scale codes, NVFP4's
// global scale).
func (s *streamer) convertRows(it *Item, pc piece, over *atomic.Int64) ([]byte, error) {
	v, t := it.Values, it.Source
	if pc.u0 == 0 {
		if err := s.guard.CheckScales(v); err != nil {
			return nil, err
		}
	}
	db := int64(it.DType.Bits() / 8)
	r, n := pc.u0, pc.n
	s.out = grow(s.out, n*v.Cols*db)
	if n == 0 {
		return s.out, nil
	}
	s.vals = grow(s.vals, n*v.Cols)
	raw, err := v.ReadRows(r, n, s.raw, s.vals)
	if err != nil {
		return nil, fmt.Errorf("tensor %s of %s at byte %d: %w", ckpt.Quote(t.Name), t.File.Location, t.Offset()+r*v.RowBytes(), err)
	}
	s.raw = raw
	if err := numfmt.EncodeFloat32(it.DType, s.vals, s.out); err != nil {
		return nil, fmt.Errorf("tensor %s: %w", ckpt.Quote(t.Name), err)
	}
	if bad := numfmt.CountNotFinite(it.DType, s.vals); bad > 0 {
		// E2M1 codes are finite: only values of non-finite scales are
		// non-finite sources (counted by CheckScales), the rest overflow.
		over.Add(bad - v.NonFiniteScaled(r, n))
	}
	return s.out, nil
}

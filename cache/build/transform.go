package build

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"golang.org/x/sync/errgroup"
)

// valueOps is a compiled list of mapping value ops, applied to the valid
// values of a face row before encoding (padding stays zero, as in
// ttnn.from_torch, which pads after the model code's arithmetic).
type valueOps []valueOp

// valueOp is one value op (mapping.Elem); a NaN its bf16 rounding meets
// becomes the pattern nan.
type valueOp struct {
	mapping.Elem
	nan uint16
}

// compileOps compiles ops; every NaN a rounding produces or meets becomes
// the bfloat16 pattern nan (WriteOptions.NaN).
func compileOps(ops []mapping.ValueOp, nan uint16) (valueOps, error) {
	out := make(valueOps, 0, len(ops))
	for _, op := range ops {
		e, err := op.Elementwise()
		if err != nil {
			return nil, fmt.Errorf("unsupported value op %s %s", op.Op, op.DType)
		}
		out = append(out, valueOp{Elem: e, nan: nan})
	}
	return out, nil
}

// apply applies the ops to v as mapping's own value application does, with
// the ops' NaN pattern.
func (ops valueOps) apply(v []float32) {
	for _, op := range ops {
		op.Apply(v, numfmt.NaNPolicy(op.nan))
	}
}

// roundOnly reports whether the ops are exactly one bf16 rounding (the
// common case: FP8 or bf16 weights as shard_w hands them over).
func (ops valueOps) roundOnly() bool {
	return len(ops) == 1 && ops[0].Kind == mapping.ElemRound
}

// afterRead returns the ops still to apply to values read from a source:
// without a leading rounding when the values are bf16 already (as mapping
// drops it itself: torch's .to(bfloat16) leaves a bf16 tensor as it is, NaN
// bits included).
func (ops valueOps) afterRead(bf16Exact bool) valueOps {
	if bf16Exact && len(ops) > 0 && ops[0].Kind == mapping.ElemRound {
		return ops[1:]
	}
	return ops
}

// packTransposedTiles packs the transpose of a block of m rows (block rows
// = logical columns) and h columns (= logical rows) into TILE bytes of dt,
// without a transposed copy of the block: block row k, column j is
// src[k*stride+col+j]. ops are applied to every valid value. The output
// holds ceil(h/32) tile rows of ceil(m/32) tiles each, tile row after tile
// row (dst needs ceil(h/32)*ceil(m/32)*dt.TileBytes() bytes).
//
// Each tile's 32x32 source block is first copied row by row into a small
// local buffer (sequential reads, ops applied there), and the face rows are
// gathered from that buffer: gathering straight from src would read with a
// stride of a whole source row, which thrashes the L1 cache sets and TLB.
func packTransposedTiles(dt tile.DType, dst []byte, src []float32, stride, col, m, h int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (m + tile.TileDim - 1) / tile.TileDim
	ntr := (h + tile.TileDim - 1) / tile.TileDim
	roundOnly := ops.roundOnly()
	var blk [tile.TileDim * tile.TileDim]float32 // blk[k*32+j]: block row c*32+k, column t*32+j
	var tmp [tile.FaceDim]float32
	for c := 0; c < ntc; c++ {
		rows := min(tile.TileDim, m-c*tile.TileDim)
		for t := 0; t < ntr; t++ {
			cols := min(tile.TileDim, h-t*tile.TileDim)
			for k := 0; k < rows; k++ {
				in := src[(c*tile.TileDim+k)*stride+col+t*tile.TileDim:][:cols]
				out := blk[k*tile.TileDim : k*tile.TileDim+cols]
				if roundOnly {
					nan := ops[0].nan
					for j, x := range in {
						out[j] = numfmt.RoundBF16(x, numfmt.NaNPolicy(nan))
					}
				} else {
					copy(out, in)
					if len(ops) > 0 {
						ops.apply(out)
					}
				}
				clear(blk[k*tile.TileDim+cols : (k+1)*tile.TileDim])
			}
			clear(blk[rows*tile.TileDim:])
			tb1 := dst[(t*ntc+c)*tb : (t*ntc+c+1)*tb]
			for r := 0; r < tile.FaceRows; r++ {
				fr, fc := tile.FaceRowOrigin(r)
				// Logical row fr, logical columns fc..fc+15 = blk rows fc.., column fr.
				b := blk[fc*tile.TileDim+fr:]
				for k := range tmp {
					tmp[k] = b[k*tile.TileDim]
				}
				tile.EncodeFaceRow(dt, tb1, r, &tmp)
			}
		}
	}
}

// packRowTiles packs rows (≤ 32 per strip, any count) of w values
// (src[k*stride+col+j]) into TILE bytes of dt, applying ops to the valid
// values; strips follow each other in dst.
func packRowTiles(dt tile.DType, dst []byte, src []float32, stride, col, rows, w int, ops valueOps) {
	tb := dt.TileBytes()
	ntc := (w + tile.TileDim - 1) / tile.TileDim
	var tmp [tile.FaceDim]float32
	for s := 0; s*tile.TileDim < rows; s++ {
		for c := 0; c < ntc; c++ {
			tb1 := dst[(s*ntc+c)*tb : (s*ntc+c+1)*tb]
			for r := 0; r < tile.FaceRows; r++ {
				fr, fc := tile.FaceRowOrigin(r)
				i := s*tile.TileDim + fr
				j0 := c*tile.TileDim + fc
				n := 0
				if i < rows {
					n = min(tile.FaceDim, max(0, w-j0))
				}
				if n > 0 {
					copy(tmp[:n], src[i*stride+col+j0:i*stride+col+j0+n])
				}
				clear(tmp[n:])
				if len(ops) > 0 && n > 0 {
					ops.apply(tmp[:n])
				}
				tile.EncodeFaceRow(dt, tb1, r, &tmp)
			}
		}
	}
}

// packTransposedTiles16 is packTransposedTiles for bfloat16 bits with no
// value ops left to apply: src[k*stride+col+j] is block row k, column j.
// stage is scratch memory, grown as needed.
//
// The 32 block rows of each tile column are transposed into stage, four
// rows at a time, each of them read from start to end (four sequential
// streams, which the hardware prefetches; walking tile by tile instead
// reads 32 rows at once). Stage holds the tile column's tiles transposed,
// so that face rows are contiguous and encoded in place. Full 4x4
// sub-blocks move as four 64-bit words (transpose4x4); a ragged edge (the
// last tile row when h is not a multiple of 32, the last tile column when
// m is not) is copied value by value into a zeroed tile.
func packTransposedTiles16(dt tile.DType, dst []byte, src []uint16, stride, col, m, h int, stage *[]uint64) {
	const words = tile.TileElems / 4
	tb := dt.TileBytes()
	ntc := (m + tile.TileDim - 1) / tile.TileDim
	ntr := (h + tile.TileDim - 1) / tile.TileDim
	if cap(*stage) < ntr*words {
		*stage = make([]uint64, ntr*words)
	}
	st := (*stage)[:ntr*words]
	raw := u16Bytes(src)
	full := h / tile.TileDim * tile.TileDim // columns in complete tiles
	for c := 0; c < ntc; c++ {
		rows := min(tile.TileDim, m-c*tile.TileDim)
		base := c*tile.TileDim*stride + col
		ragged := 0 // first tile copied value by value
		if rows == tile.TileDim {
			transposeRows(st, raw[2*base:], 2*stride, full)
			ragged = full / tile.TileDim
		}
		for t := ragged; t < ntr; t++ {
			blk := (*[tile.TileElems]uint16)(unsafe.Pointer(&st[t*words]))
			clear(blk[:])
			cols := min(tile.TileDim, h-t*tile.TileDim)
			for k := 0; k < rows; k++ {
				o := base + k*stride + t*tile.TileDim
				for j, x := range src[o : o+cols] {
					blk[(j*tile.TileDim+k)&(tile.TileElems-1)] = x
				}
			}
		}
		for t := 0; t < ntr; t++ {
			blk := (*[tile.TileElems]uint16)(unsafe.Pointer(&st[t*words]))
			tile.EncodeTileBF16(dt, dst[(t*ntc+c)*tb:(t*ntc+c+1)*tb], blk[:], tile.TileDim)
		}
	}
}

// transposeRowsGo transposes 32 rows of n bfloat16 values (n a multiple of
// 32; row k starts at byte k*stride of raw) into st, tile after tile: word
// t*256 + (j*32+k)/4 holds row k..k+3 of column t*32+j. transposeRows is
// it, or its SSE2 version.
func transposeRowsGo(st []uint64, raw []byte, stride, n int) {
	if n == 0 {
		return
	}
	_ = raw[31*stride+2*n-1]
	st = st[:n/tile.TileDim*(tile.TileElems/4)]
	for k := 0; k < tile.TileDim; k += 4 {
		r0 := raw[k*stride : k*stride+2*n]
		r1 := raw[(k+1)*stride : (k+1)*stride+2*n]
		r2 := raw[(k+2)*stride : (k+2)*stride+2*n]
		r3 := raw[(k+3)*stride : (k+3)*stride+2*n]
		for j := 0; j < n; j += 4 {
			a := binary.LittleEndian.Uint64(r0[2*j:])
			b := binary.LittleEndian.Uint64(r1[2*j:])
			c := binary.LittleEndian.Uint64(r2[2*j:])
			d := binary.LittleEndian.Uint64(r3[2*j:])
			w0, w1, w2, w3 := transpose4x4(a, b, c, d)
			// Tile j/32, column jj = j%32 (4 columns), rows k..k+3.
			o := j/tile.TileDim*(tile.TileElems/4) + (j%tile.TileDim*tile.TileDim+k)/4
			s := st[o : o+3*tile.TileDim/4+1]
			s[0] = w0
			s[tile.TileDim/4] = w1
			s[2*tile.TileDim/4] = w2
			s[3*tile.TileDim/4] = w3
		}
	}
}

// u16Bytes returns the little-endian bytes of p (the same memory).
func u16Bytes(p []uint16) []byte {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(p))), 2*len(p))
}

// transpose4x4 transposes a 4x4 matrix of 16-bit lanes held as four rows of
// four lanes (lane 0 in the low bits): column i of the input is row i of
// the output.
func transpose4x4(a, b, c, d uint64) (r0, r1, r2, r3 uint64) {
	const lo16, hi16 = 0x0000ffff0000ffff, 0xffff0000ffff0000
	const lo32, hi32 = 0x00000000ffffffff, 0xffffffff00000000
	t0 := a&lo16 | (b&lo16)<<16 // a0 b0 a2 b2
	t1 := (a>>16)&lo16 | b&hi16 // a1 b1 a3 b3
	t2 := c&lo16 | (d&lo16)<<16 // c0 d0 c2 d2
	t3 := (c>>16)&lo16 | d&hi16 // c1 d1 c3 d3
	r0 = t0&lo32 | t2<<32       // a0 b0 c0 d0
	r1 = t1&lo32 | t3<<32
	r2 = t0>>32 | t2&hi32
	r3 = t1>>32 | t3&hi32
	return r0, r1, r2, r3
}

// packRowTiles16 is packRowTiles for bfloat16 bits with no value ops left
// to apply.
func packRowTiles16(dt tile.DType, dst []byte, src []uint16, stride, col, rows, w int) {
	tb := dt.TileBytes()
	ntc := (w + tile.TileDim - 1) / tile.TileDim
	var tmp [tile.FaceDim]uint16
	for s := 0; s*tile.TileDim < rows; s++ {
		for c := 0; c < ntc; c++ {
			tb1 := dst[(s*ntc+c)*tb : (s*ntc+c+1)*tb]
			if (s+1)*tile.TileDim <= rows && (c+1)*tile.TileDim <= w {
				tile.EncodeTileBF16(dt, tb1, src[s*tile.TileDim*stride+col+c*tile.TileDim:], stride)
				continue
			}
			for r := 0; r < tile.FaceRows; r++ {
				fr, fc := tile.FaceRowOrigin(r)
				i := s*tile.TileDim + fr
				j0 := c*tile.TileDim + fc
				var p *[tile.FaceDim]uint16
				if i < rows && j0+tile.FaceDim <= w {
					p = (*[tile.FaceDim]uint16)(src[i*stride+col+j0:])
				} else {
					n := 0
					if i < rows {
						n = min(tile.FaceDim, max(0, w-j0))
					}
					if n > 0 {
						copy(tmp[:n], src[i*stride+col+j0:])
					}
					clear(tmp[n:])
					p = &tmp
				}
				tile.EncodeFaceRowBF16(dt, tb1, r, p)
			}
		}
	}
}

// stream reads every needed source once and feeds the sinks.
func (b *builder) stream(ctx context.Context) error {
	srcs, err := b.sources()
	if err != nil {
		return err
	}
	// Zero-sized targets are complete at once, and so are those whose
	// zero pieces fill them (shards of padding alone are written now).
	for _, s := range b.todo {
		done, err := s.flushZeroShards()
		if err != nil {
			return err
		}
		if done || s.remaining.Load() == 0 {
			if err := b.finalize(s); err != nil {
				return err
			}
		}
	}
	for _, st := range srcs {
		b.res.SourceTensors++
		b.res.SourceElements += int64(st.t.Numel())
		b.res.SourceBytes += int64(st.t.NBytes())
		b.opt.Progress.AddTotal(int64(st.t.NBytes()))
	}
	// Finished targets are fsynced and renamed by committers, so
	// that conversion never waits for the disk.
	commits := make(chan *sink, 4096)
	var cg errgroup.Group
	var cerrOnce sync.Once
	var cerr error
	for range 2 {
		cg.Go(func() error {
			for s := range commits {
				if err := b.finalize(s); err != nil {
					cerrOnce.Do(func() { cerr = err })
				}
			}
			return nil
		})
	}
	// A durable build starts each file's write-back as it goes (sink.kick).
	var kg sync.WaitGroup
	kick := make(chan *os.File, 4)
	if !b.opt.NoSync {
		for _, s := range b.todo {
			if !s.staged {
				s.kick = kick
			}
		}
	}
	kg.Go(func() {
		for f := range kick {
			startWriteback(f)
		}
	})
	defer func() {
		close(kick)
		kg.Wait()
	}()
	g, ctx := errgroup.WithContext(ctx)
	b.commits = commits
	// feed -> read-ahead (prefetch.go) -> workers: the jobs queue holds
	// the bands read ahead, in order.
	fed := make(chan job)
	jobs := make(chan job, 256)
	pf := newPrefetcher()
	g.Go(func() error {
		defer close(fed)
		return b.feed(ctx, srcs, fed)
	})
	g.Go(func() error {
		defer close(jobs)
		for j := range fed {
			if st := j.src; st.bitsPath() != "" {
				if j.pre = pf.start(ctx, st, j.r0, j.n); j.pre == nil {
					return ctx.Err()
				}
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				if j.pre != nil {
					pf.release(j.pre)
				}
				return ctx.Err()
			}
		}
		return nil
	})
	go func() { // a read-ahead waiting for budget sees a failed build
		<-ctx.Done()
		pf.wake()
	}()
	for range b.opt.Workers {
		g.Go(func() error {
			w := &worker{}
			for j := range jobs {
				err := b.runJob(ctx, w, j)
				if j.pre != nil {
					w.pre = nil
					pf.release(j.pre)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	err = g.Wait()
	for j := range jobs { // the bands read ahead for workers that stopped
		if j.pre != nil {
			pf.release(j.pre)
		}
	}
	pf.close()
	close(commits)
	cg.Wait()
	if err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	for _, s := range b.todo {
		if n := s.remaining.Load(); n != 0 {
			return fmt.Errorf("target %s: internal error: %d values were never written", s.e.Target, n)
		}
	}
	return nil
}

// feed sends the jobs of every source band by band: the sources of a
// group (groupSources) advance together, in proportion to their rows.
func (b *builder) feed(ctx context.Context, srcs []*srcState, jobs chan<- job) error {
	for _, grp := range groupSources(srcs) {
		// Sources that fill the same targets advance together, band
		// by band in proportion to their rows, so that a target's
		// tiles from several sources (a tile-interleaved [gate|up])
		// complete its write windows close in time.
		type cursor struct {
			st       *srcState
			band, r0 int64
			prev     chan struct{}
		}
		var cs []*cursor
		for _, st := range grp {
			band := b.bandRows(st)
			st.bands = int((st.v.Rows + band - 1) / band)
			if st.bands == 0 {
				st.sum = cache.HexHash(st.hasher.Sum64())
				continue
			}
			prev := make(chan struct{})
			close(prev)
			cs = append(cs, &cursor{st: st, band: band, prev: prev})
		}
		for {
			var c *cursor
			for _, x := range cs {
				if x.r0 < x.st.v.Rows && (c == nil || x.r0*c.st.v.Rows < c.r0*x.st.v.Rows) {
					c = x
				}
			}
			if c == nil {
				break
			}
			mine := make(chan struct{})
			select {
			case jobs <- job{src: c.st, r0: c.r0, n: min(c.band, c.st.v.Rows-c.r0), prev: c.prev, mine: mine}:
			case <-ctx.Done():
				return ctx.Err()
			}
			c.prev, c.r0 = mine, c.r0+c.band
		}
	}
	return nil
}

type worker struct {
	// raw: the current band's raw bytes (own, or a band read ahead: pre).
	raw []byte
	own []byte
	pre *prefetched
	f32 []float32
	b16 []uint16
	tab []uint16 // per scale block: the bf16 bits of the 256 e4m3 codes × scale
	sc  scratch
}

func (b *builder) runJob(ctx context.Context, w *worker, j job) error {
	st := j.src
	w.pre = j.pre
	bd, err := b.readBand(st, j.r0, j.n, w)
	if err != nil {
		return err
	}
	if !bd.checked { // NaN/Inf (nonfinite.go)
		if err := b.guard.Check(st.t, w.raw); err != nil {
			return err
		}
	}
	if st.scan {
		if err := b.scanOverflow(st, w, j.n); err != nil {
			return err
		}
	}
	raw := w.raw
	select {
	case <-j.prev:
	case <-ctx.Done():
		return ctx.Err()
	}
	st.mu.Lock()
	st.hasher.Write(raw)
	st.hashed++
	if st.hashed == st.bands {
		st.sum = cache.HexHash(st.hasher.Sum64())
		b.hmu.Lock()
		b.hashes[st.t.Name] = st.sum
		b.hmu.Unlock()
	}
	st.mu.Unlock()
	close(j.mine)
	b.opt.Progress.Add(int64(len(raw)))
	r1 := j.r0 + j.n
	cols := int(st.v.Cols)
	widened := false
	for _, u := range st.uses {
		a, e := max(j.r0, u.row), min(r1, u.row+u.rows)
		if a >= e {
			continue
		}
		if err := u.s.open(); err != nil {
			return err
		}
		off := (a - j.r0) * st.v.Cols
		var complete bool
		ops := u.s.opsFor(bd.rounded || bd.bf16)
		switch {
		case u.s.kind == kindWhole && u.width != int64(u.s.cols):
			if bd.bf16 && !widened {
				w.f32 = growF(w.f32, len(bd.b16))
				widen(w.f32, bd.b16)
				widened = true
			}
			complete, err = u.s.putWhole(u.shard, int(u.block+a-u.row), int(e-a), w.f32[off:], cols, int(u.col), int(u.at), int(u.width), ops)
		case u.direct:
			complete, err = u.s.putFP8(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), bd.codes[off:], cols, int(u.col), st.v, a)
		case bd.bf16 && len(ops) == 0:
			complete, err = u.s.put16(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), bd.b16[off:], cols, int(u.col))
		default:
			if bd.bf16 && !widened {
				w.f32 = growF(w.f32, len(bd.b16))
				widen(w.f32, bd.b16)
				widened = true
			}
			complete, err = u.s.put(&w.sc, u.shard, int(u.block+a-u.row), int(e-a), w.f32[off:], cols, int(u.col), ops)
		}
		if err != nil {
			u.s.failed.Store(true)
			return fmt.Errorf("target %s: %w", u.s.e.Target, err)
		}
		if complete {
			select {
			case b.commits <- u.s:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return ctx.Err()
}

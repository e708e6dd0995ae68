package diff

import (
	"math"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Bounded reads. A chunk (geometry) is the unit of scheduling and of the
// order in which statistics are summed: its partial is the fold of its
// segments in order, and partials are merged in chunk order. A chunk can
// be larger than the read target: its block scales make it at least one
// row of scale blocks (block FP8: 128 rows; compressed-tensors per-tensor
// FP8: the whole tensor). Such a chunk is read and compared in pieces of
// at most about target bytes per side, one after the other with the same
// scratch token, each piece ending where a segment of the chunk ends, so
// that the fold, and so every statistic, is the same bits as comparing the
// chunk at once. A requant chunk, which needs whole scale blocks, is read
// in tiles of whole blocks (a band's columns split into groups of blocks)
// and a block larger than a piece (per-tensor FP8, or a per-channel row
// larger than a piece) in runs of it, the statistics' lanes carried from
// run to run (requantBig; read twice when its stored scale is not the
// recipe's).

// pieceUnits is the number of units of a piece of p: about target bytes
// (localPiece for a pair of local files) on the wider side (at least one
// unit).
func (e *engine) pieceUnits(p *plan, g geom) int64 {
	if e.unbounded {
		return math.MaxInt64 / 16
	}
	t := e.target
	if p.local && e.localPiece > 0 {
		t = e.localPiece
	}
	return max(t/max(g.esizeB, g.esizeF, 1), 1)
}

// note records the size of a buffer a chunk reads into (read) or
// decodes into.
func (e *engine) note(n int64) { atomicMax(&e.maxRead, n) }

func (e *engine) noteDecode(n int64) { atomicMax(&e.maxDecode, n) }

func atomicMax(a *atomic.Int64, n int64) {
	for {
		m := a.Load()
		if n <= m || a.CompareAndSwap(m, n) {
			return
		}
	}
}

// pieceEnd is the end of the piece of chunk [a, e1) of p that starts at a
// (a boundary of the chunk's segments): at most n units (or one segment,
// segMax elements, when n is smaller), ending on a boundary of its
// segments. Segments (engine.segments) are segMax elements from the
// chunk's start and, when a side is scaled, from each row's start, the
// last of each run shorter. A sampled chunk (one range) is one piece.
func (p *plan) pieceEnd(a, e1, n int64) int64 {
	if e1-a <= n || p.geom.ranges != nil {
		return e1
	}
	step := max(n/segMax, 1) * segMax
	if p.kind == kindRaw || !(p.bs.scaled() || p.fs.scaled()) {
		return min(e1, a+step)
	}
	cols := p.bs.cols
	rowEnd := (a/cols + 1) * cols
	if rowEnd-a > n {
		return min(e1, rowEnd, a+step)
	}
	return min(e1, rowEnd+(n-(rowEnd-a))/cols*cols)
}

// readRect reads rows [r0, r1) and columns [c0, c1) of a [rows, cols]
// tensor of esize-byte elements into buf, row-major (one read when the
// columns are whole rows).
func (e *engine) readRect(t src, cols, esize, r0, r1, c0, c1 int64, buf []byte) ([]byte, error) {
	if c0 == 0 && c1 == cols {
		return e.read(t, r0*cols, r1*cols, esize, buf)
	}
	w := (c1 - c0) * esize
	buf = grow(buf, (r1-r0)*w)
	e.note(int64(len(buf)))
	for r := r0; r < r1; r++ {
		e.reads.Add(1)
		if _, err := t.ReadAt(buf[(r-r0)*w:(r-r0+1)*w], (r*cols+c0)*esize); err != nil {
			return buf, err
		}
	}
	e.bytesRead.Add(int64(len(buf)))
	return buf, nil
}

// requantChunk compares a chunk of block-FP8 values (whole bands of bm
// rows) with a wider float, block by block in row-major block order (see
// requantTile), reading as many whole bands as fit in a piece, else tiles
// of whole blocks of one band, else (a block larger than a piece) each
// block in runs (requantBig).
func (e *engine) requantChunk(p *plan, e0, e1 int64, sc *scratch, r *partial) error {
	q := p.q
	cols := q.cols
	n := e.pieceUnits(p, p.geom) // p.local is never set for a requant plan
	r0, r1 := e0/cols, e1/cols
	for ra := r0; ra < r1; {
		h := min(q.bm, r1-ra)
		switch {
		case h*cols <= n || h*cols*max(p.geom.esizeB, p.geom.esizeF) <= e.bandBytes: // whole bands
			rb := min(ra+max(n/(q.bm*cols), 1)*q.bm, r1)
			if err := e.requantTile(p, ra, rb, 0, q.sCols, sc, r); err != nil {
				return err
			}
			ra = rb
			continue
		case h*q.bn <= n: // groups of whole blocks of the band
			k := n / (h * q.bn)
			for bj := int64(0); bj < q.sCols; bj += k {
				if err := e.requantTile(p, ra, ra+h, bj, min(bj+k, q.sCols), sc, r); err != nil {
					return err
				}
			}
		default:
			for bj := int64(0); bj < q.sCols; bj++ {
				if err := e.requantBig(p, ra, ra+h, bj, n, sc, r); err != nil {
					return err
				}
			}
		}
		ra += h
	}
	return nil
}

// requantSides returns the raw bytes of the FP8 side and the wide side.
func (p *plan) requantSides(bRaw, fRaw []byte) (qRaw, wRaw []byte) {
	if p.q == p.fs {
		return fRaw, bRaw
	}
	return bRaw, fRaw
}

// requantTile reads rows [t0, t1) (whole bands) and the columns of scale
// block columns [bj0, bj1) of both sides and compares them block by
// block (row-major blocks, so that two bm×bn float buffers suffice): the
// statistics over dequantised values, then the recipe applied to the
// wider side against the FP8 codes and stored scales (requantBlock).
func (e *engine) requantTile(p *plan, t0, t1, bj0, bj1 int64, sc *scratch, r *partial) error {
	q, w := p.q, p.w
	cols := q.cols
	c0, c1 := bj0*q.bn, min(bj1*q.bn, cols)
	tw := c1 - c0
	var err error
	bsrc, fsrc := p.rb, p.rf
	if sc.bRaw, err = e.readRect(bsrc, cols, p.bs.esize, t0, t1, c0, c1, sc.bRaw); err != nil {
		return err
	}
	if sc.fRaw, err = e.readRect(fsrc, cols, p.fs.esize, t0, t1, c0, c1, sc.fRaw); err != nil {
		return err
	}
	qRaw, wRaw := p.requantSides(sc.bRaw, sc.fRaw)
	for ra := t0; ra < t1; ra += q.bm {
		rb := min(ra+q.bm, t1)
		for bj := bj0; bj < bj1; bj++ {
			b0, b1 := bj*q.bn, min((bj+1)*q.bn, cols)
			nc := b1 - b0
			n := (rb - ra) * nc
			sc.bF, sc.fF = grow(sc.bF, n), grow(sc.fF, n)
			e.noteDecode(4 * n)
			qF, wF := sc.bF, sc.fF
			codes := grow(sc.codes, n)
			sc.codes = codes
			for rr := ra; rr < rb; rr++ {
				o := (rr-t0)*tw + b0 - c0 // element offset within the tile
				d := (rr - ra) * nc
				g := rr*cols + b0 // flat element
				if err := q.decode(qRaw[o*q.esize:(o+nc)*q.esize], g, qF[d:d+nc]); err != nil {
					return err
				}
				if err := w.decode(wRaw[o*w.esize:(o+nc)*w.esize], g, wF[d:d+nc]); err != nil {
					return err
				}
				copy(codes[d:d+nc], qRaw[o:o+nc])
			}
			bF, fF := qF, wF
			if q == p.fs {
				bF, fF = wF, qF
			}
			r.changed += countValueDiff(bF, fF)
			r.accumulate(bF, fF)
			cnt, zs, bad, dead := requantBlock(q, wF, codes, ra/q.bm, bj, r.qDead)
			r.qDead = dead
			r.qElems += cnt
			r.zeroSign += zs
			if bad || cnt > 0 {
				r.qBlocks++
			}
		}
	}
	return nil
}

// requantBig compares scale block (band [t0, t1), column block bj), larger
// than a piece of n elements, in runs of its row-major elements of at
// most n (a multiple of 8, so that each element keeps its lane of the
// statistics), decoded segMax elements at a time: the statistics, with
// the lanes of one accumulate call carried over the block, the wide side's
// absolute maximum (numfmt.AbsMax, NaN ignored) for the recipe's scale,
// and the codes against the stored scale; when the recipe's scale is
// another, a second pass counts the codes against it (the block is a
// mismatch either way). The result is that of requantBlock on the whole
// block.
func (e *engine) requantBig(p *plan, t0, t1, bj, n int64, sc *scratch, r *partial) error {
	q, w := p.q, p.w
	cols := q.cols
	b0, b1 := bj*q.bn, min((bj+1)*q.bn, cols)
	nc := b1 - b0
	total := (t1 - t0) * nc
	run := max(n&^7, 8)
	wsrc, wes := p.rf, p.fs.esize
	qsrc := p.rb
	if q == p.fs {
		wsrc, wes, qsrc = p.rb, p.bs.esize, p.rf
	}
	// readRun reads elements [d0, d1) of the block (row-major) of side t.
	readRun := func(t src, esize, d0, d1 int64, buf []byte) ([]byte, error) {
		if nc == cols {
			return e.read(t, t0*cols+d0, t0*cols+d1, esize, buf)
		}
		buf = grow(buf, (d1-d0)*esize)
		e.note(int64(len(buf)))
		for d := d0; d < d1; {
			rr, c := d/nc, d%nc
			m := min(nc-c, d1-d)
			g := (t0+rr)*cols + b0 + c
			if _, err := t.ReadAt(buf[(d-d0)*esize:(d-d0+m)*esize], g*esize); err != nil {
				return buf, err
			}
			d += m
		}
		e.bytesRead.Add(int64(len(buf)))
		return buf, nil
	}
	// decodeRun decodes elements [d0, d0+len(dst)) of the block of side s
	// from raw, row segment by row segment.
	decodeRun := func(s *side, raw []byte, d0 int64, dst []float32) error {
		for i := int64(0); i < int64(len(dst)); {
			d := d0 + i
			rr, c := d/nc, d%nc
			m := min(nc-c, int64(len(dst))-i)
			if err := s.decode(raw[i*s.esize:(i+m)*s.esize], (t0+rr)*cols+b0+c, dst[i:i+m]); err != nil {
				return err
			}
			i += m
		}
		return nil
	}
	seg := min(int64(segMax), run)
	sc.bF, sc.fF = grow(sc.bF, seg), grow(sc.fF, seg)
	e.noteDecode(4 * seg)
	stored := q.scale[(t0/q.bm)*q.sCols+bj]
	// pass visits the block run by run, segment by segment: fn gets the
	// decoded values of the FP8 side and of the wide side, and the codes.
	pass := func(fn func(qF, wF []float32, codes []byte)) error {
		for d0 := int64(0); d0 < total; d0 += run {
			d1 := min(d0+run, total)
			var err error
			if sc.bRaw, err = readRun(qsrc, q.esize, d0, d1, sc.bRaw); err != nil {
				return err
			}
			if sc.fRaw, err = readRun(wsrc, wes, d0, d1, sc.fRaw); err != nil {
				return err
			}
			for s0 := d0; s0 < d1; s0 += seg {
				o, m := s0-d0, min(s0+seg, d1)-s0
				qF, wF := sc.bF[:m], sc.fF[:m]
				codes := sc.bRaw[o*q.esize : (o+m)*q.esize]
				if err := decodeRun(q, codes, s0, qF); err != nil {
					return err
				}
				if err := decodeRun(w, sc.fRaw[o*wes:(o+m)*wes], s0, wF); err != nil {
					return err
				}
				fn(qF, wF, codes)
			}
		}
		return nil
	}
	// The statistics, the absolute maximum of the wide side and the codes
	// against the stored scale, which is the recipe's scale of a
	// re-quantised block; else (it is not) a second pass counts the codes
	// against the recipe's.
	l := lanes{mx: r.maxAbs}
	var amax float32
	var cnt, zs int64
	err := pass(func(qF, wF []float32, codes []byte) {
		bF, fF := qF, wF
		if q == p.fs {
			bF, fF = wF, qF
		}
		r.changed += countValueDiff(bF, fF)
		accumulateF32(&l, bF, fF)
		if ss := sum8(&l.ss); ss != ss || l.mx > math.MaxFloat64 {
			// a value so far is not finite: count this run's (the runs
			// before had none)
			r.nf.count(bF, fF)
		}
		amax = max(amax, numfmt.AbsMax(wF))
		c, z := q.storedOp(stored).Mismatches(wF, codes)
		cnt += c
		zs += z
	})
	if err != nil {
		return err
	}
	// count runs a pass that counts the codes of operation b
	count := func(b numfmt.FP8Block) (cnt, zs int64, err error) {
		err = pass(func(_, wF []float32, codes []byte) {
			c, z := b.Mismatches(wF, codes)
			cnt += c
			zs += z
		})
		return cnt, zs, err
	}
	op := q.storedOp(stored)
	rb := q.recipes[0].Block(amax, q.scaleDType)
	scaleDiffers := !sameValue(rb.Scale, stored)
	known := []opCount{{op, cnt}}
	if !rb.Same(op) {
		if cnt, zs, err = count(rb); err != nil {
			return err
		}
		known = append(known, opCount{rb, cnt})
	}
	var passErr error
	r.qDead = q.otherRecipes(amax, stored, r.qDead, known, func(b numfmt.FP8Block) int64 {
		c, _, err := count(b)
		if err != nil && passErr == nil {
			passErr = err
		}
		return c
	})
	if passErr != nil {
		return passErr
	}
	r.add(&l)
	r.qElems += cnt
	r.zeroSign += zs
	if scaleDiffers || cnt > 0 {
		r.qBlocks++
	}
	return nil
}

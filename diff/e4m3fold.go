package diff

// Folding rows. The exact sums of a scale block (e4m3exact.go) do not
// depend on the order of their additions as long as a block's sums cover
// at most e4m3RunMax elements. So the sums of one block are not scaled
// and added into the partial row by row: the rows of a band (the rows of
// one row of scale blocks, or fewer when a block holds more than
// e4m3RunMax elements) are added exactly into one e4m3Lanes per block
// column, and each block is scaled, rounded and added into the partial
// once, when the band ends, in the order of its columns. That is one
// rounding per scale block instead of one per row of it, and the per-block
// work (the scaling, e4m3SumSq's 128-bit arithmetic) is done once per
// band instead of once per row: on the 128×128 blocks of FP8 checkpoints,
// 128 times less often.
//
// A band ends where the next row is in another band, and where the chunk
// ends (engine.chunk, normChunk call flush): the bands, and so every bit
// of the statistics, depend only on the tensor's geometry and the chunks
// (fixed by the plan), not on the pieces a chunk is read in or on the
// number of workers. Blocks that go the decoded way (e4m3Decoded: a NaN
// code, scales e4m3Exact refuses) are added into the partial at once, as
// before.

// e4m3Fold holds the exact sums of the blocks of the current band of one
// chunk (a scratch's: one chunk in flight).
type e4m3Fold struct {
	r      *partial    // the chunk's partial; nil: nothing held
	p      *plan       // the tensor pair
	r0, r1 int64       // the band's rows
	blks   []e4m3Block // the descriptors of the band's row of blocks
	sums   []e4m3Lanes // the band's sums, by block column
	held   []bool      // sums[j] holds a run
	n      int         // the number of columns held
	keep   []e4m3Sums  // flush: the held sums in column order
	kblk   []e4m3Block // flush: their descriptors
}

// e4m3BandRows is the number of rows of a band of p (0: the blocks are
// too wide to fold, each run is added on its own).
func e4m3BandRows(bs *side) int64 {
	if bs.bn > e4m3RunMax {
		return 0
	}
	return max(min(bs.bm, e4m3RunMax/bs.bn), 1)
}

// e4m3Band is the rows [r0, r1) of the band of row: rows of one band
// share a row of scale blocks.
func e4m3Band(bs *side, row, rows int64) (r0, r1 int64) {
	b0 := row / bs.bm * bs.bm // the row of blocks
	r0 = b0 + (row-b0)/rows*rows
	return r0, min(r0+rows, b0+bs.bm)
}

// start makes the fold hold the band of row for r, flushing what it held
// before if that was another band.
func (fd *e4m3Fold) start(p *plan, row, rows int64, r *partial) {
	if fd.r == r && fd.p == p && row >= fd.r0 && row < fd.r1 {
		return
	}
	fd.flush()
	fd.r, fd.p = r, p
	fd.r0, fd.r1 = e4m3Band(p.bs, row, rows)
	fd.blks = p.e4m3Blocks[(row/p.bs.bm)*p.bs.sCols:][:p.bs.sCols]
	if int64(cap(fd.sums)) < p.bs.sCols {
		fd.sums, fd.held = make([]e4m3Lanes, p.bs.sCols), make([]bool, p.bs.sCols)
	}
	fd.sums, fd.held = fd.sums[:p.bs.sCols], fd.held[:p.bs.sCols]
}

// add adds the sums o of runs in consecutive blocks from column j.
func (fd *e4m3Fold) add(j int, o []e4m3Sums) {
	e4m3AddInto(fd.sums[j:], o)
	fd.mark(j, len(o))
}

// lanes are the lanes of the n blocks from column j, for a kernel to add
// into (then mark them).
func (fd *e4m3Fold) lanes(j, n int) []e4m3Lanes { return fd.sums[j : j+n] }

// mark records that the n blocks from column j hold sums.
func (fd *e4m3Fold) mark(j, n int) {
	if fd.n == len(fd.held) {
		return // all held (the band's rows after its first)
	}
	for c := j; c < j+n; c++ {
		if !fd.held[c] {
			fd.held[c] = true
			fd.n++
		}
	}
}

// flush adds the sums held into their partial, block after block in
// column order, and empties the fold.
func (fd *e4m3Fold) flush() {
	if fd.r == nil {
		return
	}
	if fd.n > 0 {
		fd.keep, fd.kblk = fd.keep[:0], fd.kblk[:0]
		for c, h := range fd.held {
			if h {
				fd.keep = append(fd.keep, fd.sums[c].sum())
				fd.kblk = append(fd.kblk, fd.blks[c])
			}
		}
		fd.r.addE4M3(fd.keep, fd.kblk)
	}
	fd.drop()
}

// drop empties the fold without adding what it held (a chunk that
// failed, or one about to start).
func (fd *e4m3Fold) drop() {
	if fd.n > 0 {
		for c, h := range fd.held {
			if h {
				fd.sums[c] = e4m3Lanes{}
			}
		}
		clear(fd.held)
		fd.n = 0
	}
	fd.r, fd.p, fd.blks = nil, nil, nil
}

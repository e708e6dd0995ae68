package diff

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"golang.org/x/sync/errgroup"
)

// segMax is the number of elements decoded at a time for statistics: two
// float32 buffers of this size stay in the L2 cache.
const segMax = 16384

// localPieceBytes is the read target per side of a pair of local files
// with the default ChunkBytes (engine.localPiece): 2 × 256 KiB fit the
// L2 cache of one core of most x86 CPUs. On a Zen 1 core (512 KiB of L2)
// the every-changed Large pair took 4-5 % less CPU than with pieces of
// 1 MiB, the copy out of the page cache 20 % less.
const localPieceBytes = 256 << 10

// maxTokens caps the chunks in flight.
const maxTokens = 16

// engine streams tensor pairs in chunks. A fixed pool of scratch buffers
// (tokens) bounds both the memory and the number of chunks in flight;
// tensors run concurrently and large tensors are split into chunks that
// run concurrently too.
type engine struct {
	mode      Mode
	target    int64
	tokens    chan *scratch
	parallel  int
	progress  *ckpt.Progress
	bytesRead atomic.Int64
	// maxRead and maxDecode are the largest buffers a chunk read raw
	// bytes or decoded values into (bytes; hooks.probe); unbounded
	// (tests) reads each chunk at once, as a reference.
	maxRead, maxDecode atomic.Int64
	unbounded          bool
	// reads counts the read calls on the sources (hooks.probe).
	reads atomic.Int64
	// localPiece: with the default ChunkBytes, the read target of a pair
	// of local files (plan.local; 0: target): the pieces of both sides,
	// and so the copy out of the page cache and the comparison that reads
	// them back, stay in the L2 cache.
	localPiece int64
	// bandBytes: with the default ChunkBytes, a block-FP8 band compared
	// with a wider float is read whole up to this many bytes per side
	// (requantChunk) rather than in tiles of whole blocks, whose rows are
	// one read each: 128 range requests instead of one over HTTP.
	bandBytes int64
}

// scratch is the working memory of one chunk in flight.
type scratch struct {
	bRaw, fRaw []byte
	bF, fF     []float32
	codes      []byte
	e4m3       []e4m3Sums // the sums of the blocks of one e4m3Blocks call
	fold       e4m3Fold   // the exact sums of the current band (e4m3fold.go)
}

func grow[T any](s []T, n int64) []T {
	if int64(cap(s)) < n {
		return make([]T, n)
	}
	return s[:n]
}

func newEngine(opt CompareOptions, mode Mode) *engine {
	w := defaultWorkers(opt.Workers)
	ra := opt.ReadAhead
	if ra == 0 {
		ra = 2
	}
	// The tokens bound memory: each holds a piece of one chunk of each
	// side (at most about ChunkBytes, chunks.go) and small decode
	// buffers; cap them so that peak memory stays well under 256 MiB on
	// machines with many cores.
	n := min(w+max(ra, 0), maxTokens)
	e := &engine{mode: mode, target: opt.ChunkBytes, tokens: make(chan *scratch, n), parallel: n, progress: opt.Progress}
	if e.target <= 0 {
		e.target, e.bandBytes, e.localPiece = 1<<20, 8<<20, localPieceBytes
	}
	for range n {
		e.tokens <- &scratch{}
	}
	return e
}

// geom splits a tensor into chunks of whole elements: chunk k covers flat
// elements [k*chunk, min((k+1)*chunk, numel)).
type geom struct {
	numel, chunk int64
	// esizeB, esizeF are the bytes per unit on each side; for raw
	// comparison of sub-byte dtypes the unit is a byte.
	esizeB, esizeF int64
	countable      bool // units are elements (changed_elems can be counted)
	// ranges, when set (sampled diffs), are the chunks instead: unit
	// ranges [ranges[k][0], ranges[k][1]).
	ranges [][2]int64
}

func (g geom) count() int {
	if g.ranges != nil {
		return len(g.ranges)
	}
	if g.numel == 0 {
		return 0
	}
	return int((g.numel + g.chunk - 1) / g.chunk)
}

func (g geom) bounds(k int) (int64, int64) {
	if g.ranges != nil {
		return g.ranges[k][0], g.ranges[k][1]
	}
	e0 := int64(k) * g.chunk
	return e0, min(e0+g.chunk, g.numel)
}

func lcm(a, b int64) int64 {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// geometry chooses chunks of about target raw bytes per side; when a side
// has block scales, chunks are whole rows of scale blocks.
func (e *engine) geometry(p *plan) geom {
	if p.kind == kindRaw {
		bits := int64(p.b.DType.Bits())
		if bits > 0 && bits%8 == 0 {
			es := bits / 8
			return geom{numel: int64(p.b.Numel()), chunk: max(e.target/es, 1), esizeB: es, esizeF: es, countable: true}
		}
		return geom{numel: int64(p.b.NBytes()), chunk: e.target, esizeB: 1, esizeF: 1}
	}
	g := geom{numel: int64(p.b.Numel()), esizeB: p.bs.esize, esizeF: p.fs.esize, countable: true}
	maxE := max(g.esizeB, g.esizeF)
	var align int64
	for _, s := range []*side{p.bs, p.fs} {
		if s.scaled() {
			if align == 0 {
				align = s.bm
			} else {
				align = lcm(align, s.bm)
			}
		}
	}
	cols := p.bs.cols
	if align > 0 && cols > 0 {
		rows := max(e.target/(cols*maxE), 1)
		rows = max(rows/align, 1) * align
		g.chunk = rows * cols
	} else {
		g.chunk = max(e.target/maxE, 1)
	}
	if p.kind == kindRequantFP4 { // whole FP4 blocks
		g.chunk = (g.chunk + p.fp4.group - 1) / p.fp4.group * p.fp4.group
	}
	return g
}

// run compares every planned pair.
func (e *engine) run(ctx context.Context, plans []*plan) error {
	g, gctx := errgroup.WithContext(ctx)
	sem := make(chan struct{}, e.parallel)
	for _, p := range plans {
		select {
		case sem <- struct{}{}:
		case <-gctx.Done():
			if err := g.Wait(); err != nil {
				return err
			}
			return ctx.Err()
		}
		g.Go(func() error {
			defer func() { <-sem }()
			return e.tensor(gctx, p)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// forChunks runs fn on chunks ks, each with a scratch token, at most as
// many at once as there are tokens (shared with every other tensor).
func (e *engine) forChunks(ctx context.Context, ks []int, fn func(k int, sc *scratch) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, k := range ks {
		var sc *scratch
		select {
		case sc = <-e.tokens:
		case <-gctx.Done():
			if err := g.Wait(); err != nil {
				return err
			}
			return ctx.Err()
		}
		g.Go(func() error {
			defer func() { e.tokens <- sc }()
			if err := gctx.Err(); err != nil {
				return err
			}
			return fn(k, sc)
		})
	}
	return g.Wait()
}

// chunkResult is what one chunk found.
type chunkResult struct {
	equal   bool // raw bytes equal and same scales: no decoding was needed
	rawDiff bool
	skipped bool // bytes mode: not read because an earlier chunk differed
	p       partial
}

func seq(n int) []int {
	ks := make([]int, n)
	for i := range ks {
		ks[i] = i
	}
	return ks
}

// tensor compares one pair and fills its row.
func (e *engine) tensor(ctx context.Context, p *plan) error {
	defer p.release()
	if err := p.prepare(); err != nil {
		return err
	}
	p.geom = e.geometry(p)
	p.local = p.kind != kindRequant && isLocal(p.rb) && isLocal(p.rf)
	var rangeOf []int
	p.geom.ranges, rangeOf = p.sample.chunks(p.geom) // nil unless sampled
	if rangeOf != nil && p.kind == kindRequant {
		p.qBlockBad = make([]atomic.Bool, int64(len(p.q.scale)))
	}
	n := p.geom.count()
	res := make([]chunkResult, n)
	var stop atomic.Bool
	err := e.forChunks(ctx, seq(n), func(k int, sc *scratch) error {
		return e.chunk(p, k, sc, &res[k], &stop)
	})
	if err != nil {
		return err
	}
	defer e.progress.ItemDone()
	if rangeOf != nil {
		// The changed elements of each sampled range: the clusters of the
		// changed fraction's interval.
		p.rangeChanged = make([]int64, len(p.sample.ranges))
		for k, i := range rangeOf {
			p.rangeChanged[i] += res[k].p.changed
		}
	}
	row := p.row
	differs := false
	for i := range res {
		differs = differs || res[i].rawDiff
	}
	switch p.kind {
	case kindRaw:
		row.Relation = Identical
		if differs {
			row.Relation = Changed
		}
		if e.mode == ModeValues && p.geom.countable {
			var total partial
			for i := range res {
				total.merge(&res[i].p)
			}
			ch := total.changed
			row.ChangedElems = &ch
		}
		return nil
	case kindSame:
		var equal []int
		for i := range res {
			if res[i].equal {
				equal = append(equal, i)
			}
		}
		if len(equal) == n {
			row.Relation = Identical
			identicalStats(row)
			return nil
		}
		// Identical chunks still count towards the norms.
		if len(equal) > 0 {
			err := e.forChunks(ctx, equal, func(k int, sc *scratch) error {
				return e.normChunk(p, k, sc, &res[k].p)
			})
			if err != nil {
				return err
			}
		}
		total := mergeAll(res)
		row.ZeroSignCodes = total.zeroSign
		if total.changed == 0 && (!differs || p.fp8) { // FP8: codes equal by value
			row.Relation = Identical
			identicalStats(row)
			return nil
		}
		row.Relation = Changed
		total.finish(row)
	case kindCross:
		total := mergeAll(res)
		row.Relation = DTypeChanged
		total.finish(row)
	case kindRequantFP4:
		total := mergeAll(res)
		row.Relation = DTypeChanged
		total.finish(row)
		if rangeOf == nil {
			p.fp4.finish(row, &total.fp4)
		}
	case kindRequant:
		total := mergeAll(res)
		total.finish(row)
		row.ZeroSignCodes = total.zeroSign
		qe, qb := total.qElems, total.qBlocks
		if p.qBlockBad != nil {
			extra, err := p.coveredScales()
			if err != nil {
				return err
			}
			qb += extra
		}
		requantRecipe(row, p.q, &qe, &qb, total.qDead, p.qBlockBad != nil || rangeOf != nil)
		row.RequantMismatchElems, row.RequantMismatchBlocks = &qe, &qb
		row.Relation = DTypeChanged
		if qe == 0 && qb == 0 {
			row.Relation = RequantIdentical
		}
	}
	return nil
}

// isLocal reports whether t is a tensor of a local file (ckpt.Tensor.Local).
func isLocal(t src) bool {
	lt, ok := t.(*ckpt.Tensor)
	return ok && lt.Local()
}

func mergeAll(res []chunkResult) partial {
	var total partial
	for i := range res {
		total.merge(&res[i].p)
	}
	return total
}

// read reads the raw bytes of units [e0, e1) of a tensor into buf.
func (e *engine) read(t src, e0, e1, esize int64, buf []byte) ([]byte, error) {
	buf = grow(buf, (e1-e0)*esize)
	e.note(int64(len(buf)))
	e.reads.Add(1)
	if _, err := t.ReadAt(buf, e0*esize); err != nil {
		return buf, err
	}
	e.bytesRead.Add(int64(len(buf)))
	return buf, nil
}

// chunk compares chunk k of a pair, in pieces of about the read target
// (chunks.go): each piece is read into the token's buffers and compared
// into r in order, so that r is the same as for the chunk read at once.
// A chunk of two sides with the same bytes and scales is not decoded
// (r.equal): its statistics come later from normChunk if the tensor is
// not identical; when a piece differs after equal ones, those are
// decoded from the base first.
func (e *engine) chunk(p *plan, k int, sc *scratch, r *chunkResult, stop *atomic.Bool) error {
	e0, e1 := p.geom.bounds(k)
	gm := p.geom
	defer e.progress.Add((e1 - e0) * (gm.esizeB + gm.esizeF))
	if e.mode == ModeBytes && stop.Load() {
		r.skipped = true
		return nil
	}
	if p.kind == kindRequant && gm.ranges == nil {
		return e.requantChunk(p, e0, e1, sc, &r.p)
	}
	sc.fold.drop() // what a chunk that failed left
	n := e.pieceUnits(p, gm)
	decoding := false // some piece was decoded (kindSame)
	for a := e0; a < e1; {
		b := p.pieceEnd(a, e1, n)
		var err error
		if sc.bRaw, err = e.read(p.rb, a, b, gm.esizeB, sc.bRaw); err != nil {
			return err
		}
		if sc.fRaw, err = e.read(p.rf, a, b, gm.esizeF, sc.fRaw); err != nil {
			return err
		}
		bRaw, fRaw := sc.bRaw, sc.fRaw
		switch p.kind {
		case kindRaw, kindSame:
			eq := bytes.Equal(bRaw, fRaw)
			r.rawDiff = r.rawDiff || !eq
			if eq && (p.kind == kindRaw || p.scalesSame && !decoding) {
				break
			}
			if e.mode == ModeBytes {
				stop.Store(true)
				return nil
			}
			if p.kind == kindRaw {
				if gm.countable {
					r.p.changed += countRawDiff(bRaw, fRaw, int(gm.esizeB))
				}
				break
			}
			if !decoding && a > e0 {
				// the pieces before were equal: their statistics first
				// (read into sc.codes, unused by this kind)
				if err := e.normRange(p, e0, a, sc, &sc.codes, &r.p); err != nil {
					return err
				}
			}
			decoding = true
			if err := e.segments(p, bRaw, fRaw, a, b, sc, &r.p, true); err != nil {
				return err
			}
		case kindCross:
			if err := e.segments(p, bRaw, fRaw, a, b, sc, &r.p, false); err != nil {
				return err
			}
		case kindRequantFP4:
			if err := e.segments(p, bRaw, fRaw, a, b, sc, &r.p, false); err != nil {
				return err
			}
			if gm.ranges == nil { // a sample: values only
				if err := e.requantFP4(p, bRaw, fRaw, a, b, sc, &r.p); err != nil {
					return err
				}
			}
		case kindRequant:
			if err := e.requantSegments(p, bRaw, fRaw, a, b, sc, &r.p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("tensor %s: internal error: unknown comparison kind %d", ckpt.Quote(p.b.Name), p.kind)
		}
		a = b
	}
	sc.fold.flush() // the chunk's last band
	r.equal = p.kind == kindRaw && !r.rawDiff || p.kind == kindSame && !decoding
	return nil
}

// segments decodes a chunk segment by segment and accumulates statistics.
// same says both sides have one dtype, so that changed elements are
// counted on the raw bytes.
func (e *engine) segments(p *plan, bRaw, fRaw []byte, e0, e1 int64, sc *scratch, r *partial, same bool) error {
	bs, fs := p.bs, p.fs
	scaled := bs.scaled() || fs.scaled()
	for g := e0; g < e1; {
		n := min(e1-g, segMax)
		if scaled {
			n = min(n, bs.cols-g%bs.cols)
		}
		o := g - e0
		bseg := bRaw[o*bs.esize : (o+n)*bs.esize]
		fseg := fRaw[o*fs.esize : (o+n)*fs.esize]
		if same && p.e4m3 {
			if err := e4m3Segment(p, bseg, fseg, g, sc, r); err != nil {
				return err
			}
			g += n
			continue
		}
		if same && p.bf16 {
			r.changed += countRawDiff(bseg, fseg, 2)
			if err := bf16Segment(p, bseg, fseg, g, sc, r); err != nil {
				return err
			}
			g += n
			continue
		}
		if err := decodeCount(p, bseg, fseg, g, sc, r, same); err != nil {
			return err
		}
		r.accumulate(sc.bF, sc.fF)
		g += n
	}
	return nil
}

// decodeCount decodes the segments bseg, fseg starting at flat element g
// into sc.bF, sc.fF and counts the changed elements into r.
func decodeCount(p *plan, bseg, fseg []byte, g int64, sc *scratch, r *partial, same bool) error {
	bs, fs := p.bs, p.fs
	n := int64(len(bseg)) / bs.esize
	{
		sc.bF, sc.fF = grow(sc.bF, n), grow(sc.fF, n)
		if err := bs.decode(bseg, g, sc.bF); err != nil {
			return err
		}
		if err := fs.decode(fseg, g, sc.fF); err != nil {
			return err
		}
		if same && p.fp8 {
			ch, zs := countFP8Diff(bs.dt, bseg, fseg, sc.bF, sc.fF, p.scalesSame)
			r.changed += ch
			r.zeroSign += zs
		} else if same {
			if p.scalesSame {
				r.changed += countRawDiff(bseg, fseg, int(bs.esize))
			} else {
				r.changed += countChanged(sc.bF, sc.fF, bseg, fseg, bs.esize)
			}
		} else {
			r.changed += countValueDiff(sc.bF, sc.fF)
		}
	}
	return nil
}

// e4m3Segment adds the statistics of a segment of two block-scaled
// F8_E4M3 sides (p.e4m3; codes bseg, fseg from flat element g, within one
// row) into r, scale block by scale block: exactly (e4m3exact.go) where
// e4m3Exact accepts the block's scales and no code is a NaN, else through
// the decoded values like any other pair, added into r at once. The
// blocks the segment covers whole go through e4m3BlocksInto, many to a call, a
// block it covers in part through e4m3Run; either way their exact sums go
// into sc.fold, which adds them into r when their band of rows ends
// (e4m3fold.go: the caller flushes it at the end of the chunk).
func e4m3Segment(p *plan, bseg, fseg []byte, g int64, sc *scratch, r *partial) error {
	bs := p.bs
	row, c0 := g/bs.cols, g%bs.cols
	blks := p.e4m3Blocks[(row/bs.bm)*bs.sCols:]
	c1 := c0 + int64(len(bseg))
	bn := bs.bn
	fd := &sc.fold
	rows := e4m3BandRows(bs)
	if rows > 0 {
		fd.start(p, row, rows, r)
	}
	// add takes the exact sums o of the blocks from column j.
	add := func(j int64, o []e4m3Sums) {
		if rows > 0 {
			fd.add(int(j), o)
		} else {
			r.addE4M3(o, blks[j:j+int64(len(o))])
		}
	}
	for c := c0; c < c1; {
		blk := c / bn
		b, f := bseg[c-c0:], fseg[c-c0:]
		if whole := (c1 - c) / bn; c == blk*bn && whole > 0 && bn <= e4m3RunMax {
			// bn <= e4m3RunMax, so rows > 0: the band's fold holds them
			k := blks[blk : blk+whole]
			sc.e4m3 = grow(sc.e4m3, whole)
			out := fd.lanes(int(blk), int(whole))
			var done int
			if sameBytes(bseg, fseg) { // normChunk: the base on both sides
				done = e4m3NormInto(b, int(bn), k, out, sc.e4m3)
			} else {
				done = e4m3BlocksInto(b, f, int(bn), k, out, sc.e4m3)
			}
			fd.mark(int(blk), done)
			c += int64(done) * bn
			if int64(done) == whole {
				continue
			}
			// Block blk+done is e4m3Generic or holds a NaN code.
			if err := e4m3Decoded(p, bseg[c-c0:c-c0+bn], fseg[c-c0:c-c0+bn], g+c-c0, sc, r); err != nil {
				return err
			}
			c += bn
			continue
		}
		end := min((blk+1)*bn, c1, c+e4m3RunMax)
		b, f = b[:end-c], f[:end-c]
		k := &blks[blk]
		sc.e4m3 = grow(sc.e4m3, 1)
		o := sc.e4m3[:1]
		o[0] = e4m3Sums{}
		if k.class != e4m3Generic && e4m3Run(b, f, k, &o[0]) {
			add(blk, o)
		} else if err := e4m3Decoded(p, b, f, g+c-c0, sc, r); err != nil {
			return err
		}
		c = end
	}
	return nil
}

// sameBytes reports whether a and b are the same memory (not only equal
// bytes).
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// e4m3Decoded adds the statistics of codes bseg, fseg from flat element g
// (within one scale block) into r through the decoded values.
func e4m3Decoded(p *plan, bseg, fseg []byte, g int64, sc *scratch, r *partial) error {
	if err := decodeCount(p, bseg, fseg, g, sc, r, true); err != nil {
		return err
	}
	r.accumulate(sc.bF[:len(bseg)], sc.fF[:len(bseg)])
	return nil
}

// bf16Segment adds the statistics of the segments bseg, fseg of two
// unscaled BF16 sides (p.bf16), starting at flat element g, into r straight
// from their raw bytes: the same bits as decoding and accumulate. The
// values are decoded only to count them when a side has NaN or Inf values.
func bf16Segment(p *plan, bseg, fseg []byte, g int64, sc *scratch, r *partial) error {
	if !r.accumulateBF16(bseg, fseg) {
		return nil
	}
	n := int64(len(bseg)) / 2
	sc.bF, sc.fF = grow(sc.bF, n), grow(sc.fF, n)
	if err := p.bs.decode(bseg, g, sc.bF); err != nil {
		return err
	}
	if err := p.fs.decode(fseg, g, sc.fF); err != nil {
		return err
	}
	r.nf.count(sc.bF, sc.fF)
	return nil
}

// normChunk computes the statistics of a chunk whose two sides are
// byte-identical from the base alone: segments with the base on both
// sides, so the sums come out exactly as for any other chunk.
func (e *engine) normChunk(p *plan, k int, sc *scratch, r *partial) error {
	e0, e1 := p.geom.bounds(k)
	sc.fold.drop()
	if err := e.normRange(p, e0, e1, sc, &sc.bRaw, r); err != nil {
		return err
	}
	sc.fold.flush()
	return nil
}

// normRange is normChunk for elements [e0, e1) of a chunk starting at e0,
// piece by piece, read into *buf.
func (e *engine) normRange(p *plan, e0, e1 int64, sc *scratch, buf *[]byte, r *partial) error {
	n := e.pieceUnits(p, p.geom)
	for a := e0; a < e1; {
		b := p.pieceEnd(a, e1, n)
		var err error
		if *buf, err = e.read(p.rb, a, b, p.geom.esizeB, *buf); err != nil {
			return err
		}
		if err := e.segments(p, *buf, *buf, a, b, sc, r, true); err != nil {
			return err
		}
		a = b
	}
	return nil
}

// coveredScales checks the stored scale of every block a sampled requant
// plan read whole against the recipes (the block's absolute maximum over
// 448 in the scale dtype, or another recipe's scale of it: the sample
// names no recipe), as an unsampled diff does: a sample never says less
// than it saw. It returns the blocks whose scale differs and whose
// codes did not already count them.
func (p *plan) coveredScales() (int64, error) {
	q, w := p.q, p.w
	wsrc := p.rb
	if w == p.fs {
		wsrc = p.rf
	}
	cols := q.cols
	rows := p.geom.numel / cols
	seen := map[int64]int64{} // block → sampled elements of it
	for _, rg := range p.sample.ranges {
		for g := rg[0]; g < rg[1]; {
			r, c := g/cols, g%cols
			end := min((c/q.bn+1)*q.bn, cols, c+(rg[1]-g))
			seen[(r/q.bm)*q.sCols+c/q.bn] += end - c
			g += end - c
		}
	}
	var extra int64
	var raw []byte
	var vals []float32
	for b, n := range seen {
		bi, bj := b/q.sCols, b%q.sCols
		h, wd := min(q.bm, rows-bi*q.bm), min(q.bn, cols-bj*q.bn)
		if n != h*wd || p.qBlockBad[b].Load() {
			continue
		}
		var amax float32
		raw, vals = grow(raw, wd*w.esize), grow(vals, wd)
		for r := bi * q.bm; r < bi*q.bm+h; r++ {
			g := r*cols + bj*q.bn
			if _, err := wsrc.ReadAt(raw, g*w.esize); err != nil {
				return 0, err
			}
			if err := w.decode(raw, g, vals); err != nil {
				return 0, err
			}
			amax = max(amax, numfmt.AbsMax(vals))
		}
		if !q.someRecipeScale(amax, q.scale[b]) && p.qBlockBad[b].CompareAndSwap(false, true) {
			extra++
		}
	}
	return extra, nil
}

// requantSegments is requant for the ranges of a sampled diff, which are
// runs of whole groups of bn columns inside rows, not whole blocks: each
// group segment is compared by value, and the wider side re-quantised with
// the FP8 side's stored scale of its block against the codes (division by
// it; multiplication by its reciprocal under transformers-ue8m0, the
// same codes for a power of two). Whether the
// stored scale is the recipe's (the block's absolute maximum over 448)
// needs the whole block and is not checked: a sample checks codes only.
func (e *engine) requantSegments(p *plan, bRaw, fRaw []byte, e0, e1 int64, sc *scratch, r *partial) error {
	q, w := p.q, p.w
	qRaw, wRaw := bRaw, fRaw
	if q == p.fs {
		qRaw, wRaw = fRaw, bRaw
	}
	cols := q.cols
	for g := e0; g < e1; {
		row, c := g/cols, g%cols
		bj := c / q.bn
		end := min((bj+1)*q.bn, cols, c+(e1-g))
		n := end - c
		o := g - e0
		sc.bF, sc.fF = grow(sc.bF, n), grow(sc.fF, n)
		qF, wF := sc.bF, sc.fF
		if err := q.decode(qRaw[o*q.esize:(o+n)*q.esize], g, qF); err != nil {
			return err
		}
		if err := w.decode(wRaw[o*w.esize:(o+n)*w.esize], g, wF); err != nil {
			return err
		}
		bF, fF := qF, wF
		if q == p.fs {
			bF, fF = wF, qF
		}
		r.changed += countValueDiff(bF, fF)
		r.accumulate(bF, fF)
		codes := qRaw[o : o+n]
		s := q.scale[(row/q.bm)*q.sCols+bj]
		cnt, zs := q.storedOp(s).Mismatches(wF, codes)
		r.qElems += cnt
		r.zeroSign += zs
		if cnt > 0 && p.qBlockBad[(row/q.bm)*q.sCols+bj].CompareAndSwap(false, true) {
			r.qBlocks++ // the first segment of its block to fail
		}
		g += n
	}
	return nil
}

package build

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
	"github.com/zeebo/xxh3"
)

// sinkKind is how a target is assembled from streamed block rows.
type sinkKind int

const (
	// kindTransposed: a TILE target that is the transposed block
	// ([MatrixCols, MatrixRows] per device). 32 block rows are one tile
	// column; a run of complete tile columns is packed and written with
	// one pwrite per tile row.
	kindTransposed sinkKind = iota
	// kindStrip: a TILE target that is the block itself ([MatrixRows,
	// MatrixCols]); 32 block rows are one contiguous tile strip.
	kindStrip
	// kindRowMajor: a ROW_MAJOR target that is the block in any shape;
	// block rows map to contiguous bytes.
	kindRowMajor
	// kindWhole: anything else (reshaped small vectors, and entries with
	// zero pieces or pieces side by side: padded heads and widths); the
	// block is assembled in memory, bounded by maxWholeValues.
	kindWhole
)

// maxWholeValues bounds the per-entry memory of kindWhole targets (64 MiB
// of float32 over all shards).
const maxWholeValues = 16 << 20

// unitRows is the block-row granularity of tiled sinks: one tile.
const unitRows = tile.TileDim

// padded reports whether some shard of e has a zero piece or a piece
// narrower than the block (mapping.Piece bands): such an entry is
// assembled whole.
func padded(e *mapping.Entry) bool {
	for _, ps := range e.Shards {
		for _, p := range ps {
			if p.Zero || p.Cols != e.MatrixCols {
				return true
			}
		}
	}
	return false
}

func chooseKind(e *mapping.Entry, layout tile.Layout) (sinkKind, error) {
	ds := e.DeviceShape
	if padded(e) {
		if e.MatrixRows*e.MatrixCols*int64(len(e.Shards)) > maxWholeValues {
			return 0, fmt.Errorf("target %s: a %dx%d block with zero padding or pieces side by side (device shape %v) is assembled in memory, "+
				"and it is too large for that", e.Target, e.MatrixRows, e.MatrixCols, ds)
		}
		return kindWhole, nil
	}
	leadingOnes := func(n int) bool {
		for _, d := range ds[:len(ds)-n] {
			if d != 1 {
				return false
			}
		}
		return true
	}
	switch {
	case layout == tile.ROW_MAJOR && !e.Transpose:
		return kindRowMajor, nil
	case layout == tile.TILE && e.Transpose && e.BatchRows == 0 && len(ds) >= 2 && leadingOnes(2) &&
		ds[len(ds)-2] == e.MatrixCols && ds[len(ds)-1] == e.MatrixRows:
		return kindTransposed, nil
	case layout == tile.TILE && e.Transpose && e.BatchRows > 0 && len(ds) >= 2 && batchesOf(e) == e.MatrixRows/e.BatchRows &&
		ds[len(ds)-2] == e.MatrixCols && ds[len(ds)-1] == e.BatchRows:
		// A batched target: each run of BatchRows block rows is a
		// transposed matrix of its own (sink.batches).
		return kindTransposed, nil
	case layout == tile.TILE && !e.Transpose && e.BatchRows == 0 && len(ds) >= 2 && leadingOnes(2) &&
		ds[len(ds)-2] == e.MatrixRows && ds[len(ds)-1] == e.MatrixCols:
		return kindStrip, nil
	}
	if e.MatrixRows*e.MatrixCols*int64(len(e.Shards)) > maxWholeValues {
		return 0, fmt.Errorf("target %s: device shape %v of a %dx%d block (transpose %v) cannot be streamed and is too large to assemble in memory",
			e.Target, ds, e.MatrixRows, e.MatrixCols, e.Transpose)
	}
	return kindWhole, nil
}

// batchesOf is the number of matrices a TILE target's device shape holds
// (the product of all but its last two dimensions).
func batchesOf(e *mapping.Entry) int64 {
	n := int64(1)
	for _, d := range e.DeviceShape[:max(len(e.DeviceShape)-2, 0)] {
		n *= d
	}
	return n
}

type stageKey struct{ shard, unit int }

type stage struct {
	buf    []float32
	filled int
}

// sink receives the block rows of one target and writes its temp file.
type sink struct {
	e      *mapping.Entry
	kind   sinkKind
	dt     tile.DType
	layout tile.Layout
	hdr    *tensorbin.Header
	path   string // final path
	rec    cache.FileRecord
	once   sync.Once
	oerr   error
	af     *atomicfile.File
	base   []int64 // absolute file offset of each shard buffer
	rows   int     // MatrixRows (BatchRows for a batched transposed target)
	cols   int     // MatrixCols
	// batches is the number of transposed matrices in each shard of a
	// batched kindTransposed target (Entry.BatchRows), else 1: the sink
	// then works on batches·shards virtual shards of rows block rows each
	// (shard sh, batch k is sink shard sh·batches+k), laid out one after
	// the other in the file as TILE lays out a batch.
	batches int
	vops    valueOps
	nan     uint16 // bits of the NaNs the conversion produces (WriteOptions.NaN)

	mu     sync.Mutex
	stages map[stageKey]*stage
	whole  [][]float32
	filled []int

	noSync bool // WriteOptions.NoSync
	// staged: a durable build writes the file through a staged image
	// (stage.go) once open made one (img; nil: the page cache).
	staged bool
	stager *stager
	img    *image
	// kick takes files whose write-back should start (durable builds);
	// dirty counts the bytes written since the last request.
	kick  chan<- *os.File
	dirty atomic.Int64
	// wins: the open write windows of putFP8 by (shard, window), under mu;
	// budget: the builder's memory left for windows.
	wins   map[stageKey]*window
	budget *atomic.Int64
	pool   *bufPool
	// windowed: block rows reach the sink through putFP8 (a use is
	// direct), so windows fill up; blocked: the windows, by (shard,
	// window), that hold a tile column some other use writes its own way
	// (they would never fill up): putFP8 writes its tiles of those as
	// they come.
	windowed bool
	blocked  map[stageKey]bool

	remaining atomic.Int64 // block values not yet written
	failed    atomic.Bool

	// hdrHash is the xxh3 (hex) of the header region, hashed when it is
	// written (open); data hashes the data region as it is written
	// (writeAt), so that a finished file is not read back.
	hdrHash string
	data    *xxh3s.Region
}

func newSink(e *mapping.Entry, hdr *tensorbin.Header, path string, nan uint16) (*sink, error) {
	dt, _ := tile.ParseDType(e.DType)
	layout, _ := tile.ParseLayout(e.Layout)
	kind, err := chooseKind(e, layout)
	if err != nil {
		return nil, err
	}
	vops, err := compileOps(e.Values, nan)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", e.Target, err)
	}
	s := &sink{e: e, kind: kind, dt: dt, layout: layout, hdr: hdr, path: path, vops: vops, nan: nan,
		rows: int(e.MatrixRows), cols: int(e.MatrixCols), batches: 1, stages: map[stageKey]*stage{}}
	if kind == kindTransposed && e.BatchRows > 0 {
		s.batches, s.rows = int(e.MatrixRows/e.BatchRows), int(e.BatchRows)
	}
	// One matrix of the batch: cols tile rows of rows/32 tiles each.
	per := int64(tile.TilesBytes(dt, s.cols, s.rows))
	for _, sh := range hdr.Shards {
		for k := 0; k < s.batches; k++ {
			s.base = append(s.base, int64(hdr.DataOffset+sh.Offset)+int64(k)*per)
		}
	}
	if kind == kindWhole {
		s.whole = make([][]float32, len(e.Shards))
		s.filled = make([]int, len(e.Shards))
		// Zero pieces are there from the start: the block is zeroed.
		for sh, ps := range e.Shards {
			for _, p := range ps {
				if p.Zero {
					s.filled[sh] += int(p.Rows * p.Cols)
				}
			}
		}
	}
	s.remaining.Store(int64(len(e.Shards)) * e.MatrixRows * e.MatrixCols)
	return s, nil
}

// uses are the uses of piece p, at block row block of shard sh: one, or
// one per batch it spans in a batched target, on the sink's virtual
// shards.
func (s *sink) uses(sh int, p mapping.Piece, block int64) []use {
	if s.batches <= 1 {
		return []use{{s: s, shard: sh, row: p.Row, rows: p.Rows, block: block, col: p.Col, at: p.At, width: p.Cols}}
	}
	var out []use
	br := int64(s.rows)
	for a, end := block, block+p.Rows; a < end; {
		k := a / br
		m := min(end, (k+1)*br) - a
		out = append(out, use{s: s, shard: sh*s.batches + int(k), row: p.Row + a - block, rows: m, block: a - k*br, col: p.Col, at: p.At, width: p.Cols})
		a += m
	}
	return out
}

// scratch holds a worker's reusable buffers.
type scratch struct {
	x     []float32
	wide  []float32 // widened bfloat16 rows (put16)
	stage []uint64  // transposed tile column (packTransposedTiles16)
	scale [1]float32
	wins  []*window // putFP8: the window of each tile column
	out   []byte
}

func growF(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

func grow16(b []uint16, n int) []uint16 {
	if cap(b) < n {
		return make([]uint16, n)
	}
	return b[:n]
}

func growB(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// extract copies n rows of cols values (starting at column col of rows of
// `stride` values in src) into dst and applies the entry's value ops.
func (s *sink) extract(dst, src []float32, n, stride, col int, ops valueOps) error {
	for r := 0; r < n; r++ {
		copy(dst[r*s.cols:(r+1)*s.cols], src[r*stride+col:r*stride+col+s.cols])
	}
	if len(ops) > 0 {
		ops.apply(dst[:n*s.cols])
	}
	return nil
}

// opsFor returns the value ops still to apply to values that are already
// bf16-exact (rounded) or not (valueOps.afterRead).
func (s *sink) opsFor(rounded bool) valueOps {
	return s.vops.afterRead(rounded)
}

// put delivers block rows [b0, b0+n) of shard sh: row r is
// src[(r-b0)*stride+col : ...+cols]. It reports whether the target is now
// completely written.
func (s *sink) put(w *scratch, sh, b0, n int, src []float32, stride, col int, ops valueOps) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	switch s.kind {
	case kindRowMajor:
		w.x = growF(w.x, n*s.cols)
		if err := s.extract(w.x, src, n, stride, col, ops); err != nil {
			return false, err
		}
		es := s.dt.ElementSize()
		w.out = growB(w.out, n*s.cols*es)
		k, err := tile.PackRowMajor(s.dt, w.out, w.x)
		if err != nil {
			return false, err
		}
		if err := s.writeAt(w.out[:k], s.base[sh]+int64(b0)*int64(s.cols*es)); err != nil {
			return false, err
		}
		return s.done(int64(n) * int64(s.cols)), nil
	case kindWhole:
		return s.putWhole(sh, b0, n, src, stride, col, 0, s.cols, ops)
	}
	return s.units(b0, n, func(u, a, m int) (bool, error) {
		return s.writeUnits(w, sh, u, src[(a-b0)*stride:], stride, col, m, ops)
	}, func(u, off, a, m int) (bool, error) {
		return s.stage(w, sh, u, off, src[(a-b0)*stride:], m, stride, col, ops)
	})
}

// putWhole delivers n rows of w values to the block of shard sh of a
// kindWhole target, at block row b0 and column at: row r is
// src[r*stride+col : ...+w]; ops are applied to them. It reports whether
// the target is now completely written.
func (s *sink) putWhole(sh, b0, n int, src []float32, stride, col, at, w int, ops valueOps) (bool, error) {
	if n <= 0 || w <= 0 {
		return false, nil
	}
	s.mu.Lock()
	if s.whole[sh] == nil {
		s.whole[sh] = make([]float32, s.rows*s.cols)
	}
	for r := 0; r < n; r++ {
		dst := s.whole[sh][(b0+r)*s.cols+at:][:w]
		copy(dst, src[r*stride+col:r*stride+col+w])
		if len(ops) > 0 {
			ops.apply(dst)
		}
	}
	s.filled[sh] += n * w
	full := s.filled[sh] == s.rows*s.cols
	s.mu.Unlock()
	if !full {
		return false, nil
	}
	return s.flushWhole(sh)
}

// flushZeroShards writes the shards of a kindWhole target that its zero
// pieces fill alone (no source row lands there); it reports whether the
// target is then complete.
func (s *sink) flushZeroShards() (bool, error) {
	if s.kind != kindWhole || s.rows*s.cols == 0 {
		return false, nil
	}
	complete := false
	for sh := range s.filled {
		s.mu.Lock()
		full := s.filled[sh] == s.rows*s.cols
		if full && s.whole[sh] == nil {
			s.whole[sh] = make([]float32, s.rows*s.cols)
		}
		s.mu.Unlock()
		if !full {
			continue
		}
		if err := s.open(); err != nil {
			return false, err
		}
		c, err := s.flushWhole(sh)
		if err != nil {
			return false, err
		}
		complete = complete || c
	}
	return complete, nil
}

func (s *sink) writeAt(p []byte, off int64) error {
	var err error
	if s.img != nil {
		err = s.img.WriteAt(p, off)
	} else {
		_, err = s.af.WriteAt(p, off)
	}
	if err != nil {
		return fmt.Errorf("writing %s at byte %d: %w", s.af.Name(), off, err)
	}
	s.data.WriteAt(p, off-int64(s.hdr.DataOffset))
	if s.kick != nil && s.dirty.Add(int64(len(p))) >= kickBytes {
		s.dirty.Store(0)
		select { // the writeback goroutine is busy: the next write asks again
		case s.kick <- s.af.File:
		default:
		}
	}
	return nil
}

// kickBytes is how much a durable build writes into a file between two
// requests to start its write-back (startWriteback).
const kickBytes = 16 << 20

// open creates the temporary file on first use: sized to the final file
// (gaps read as zeros) with the header written at offset 0.
func (s *sink) open() error {
	s.once.Do(func() {
		if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
			s.oerr = fmt.Errorf("creating directory of %s: %w", s.path, err)
			return
		}
		af, err := atomicfile.Create(s.path)
		if err != nil {
			s.oerr = err
			return
		}
		af.NoSync = s.noSync
		prefix, err := tensorbin.EncodeHeader(s.hdr)
		if err == nil {
			err = af.Truncate(s.hdr.FileSize())
		}
		if err == nil && s.staged {
			if d, derr := openDirect(af.File); derr == nil {
				written := [][2]int64{{0, int64(len(prefix))}}
				for _, sh := range s.hdr.Shards {
					o := int64(s.hdr.DataOffset + sh.Offset)
					written = append(written, [2]int64{o, o + int64(sh.Size)})
				}
				s.img = newImage(s.stager, af.File, d, s.hdr.FileSize(), written)
			}
		}
		if err == nil {
			if s.img != nil {
				err = s.img.WriteAt(prefix, 0)
			} else {
				_, err = af.WriteAt(prefix, 0)
			}
		}
		if err != nil {
			if s.img != nil {
				s.img.release()
			}
			af.Abort()
			s.oerr = fmt.Errorf("creating %s: %w", s.path, err)
			return
		}
		s.af = af
		s.hdrHash = cache.HexHash(xxh3.Hash(prefix))
		s.data = xxh3s.NewRegion(int64(s.hdr.DataSize()))
		// The zero gaps between shard buffers are never written.
		for _, g := range dataGaps(s.hdr) {
			for o := g[0]; o < g[1]; o += int64(len(zeros)) {
				s.data.WriteAt(zeros[:min(int64(len(zeros)), g[1]-o)], o)
			}
		}
	})
	return s.oerr
}

var zeros [4096]byte

// dataGaps returns the ranges [from, to) of the data region of h (offsets
// in it) that no shard buffer covers.
func dataGaps(h *tensorbin.Header) [][2]int64 {
	bufs := map[[2]uint64]bool{}
	var rs [][2]uint64
	for _, sh := range h.Shards {
		r := [2]uint64{sh.Offset, sh.Offset + sh.Size}
		if !bufs[r] {
			bufs[r] = true
			rs = append(rs, r)
		}
	}
	slices.SortFunc(rs, func(a, b [2]uint64) int { return cmp.Compare(a[0], b[0]) })
	var gaps [][2]int64
	var end uint64
	for _, r := range rs {
		if r[0] > end {
			gaps = append(gaps, [2]int64{int64(end), int64(r[0])})
		}
		end = max(end, r[1])
	}
	return gaps
}

// abort removes the temporary file of an unfinished target.
func (s *sink) abort() {
	s.once.Do(func() { s.oerr = fmt.Errorf("aborted") })
	if s.img != nil {
		s.img.release()
	}
	if s.af != nil {
		s.af.Abort()
	}
}

// done records n written block values and reports whether the target is
// complete.
func (s *sink) done(n int64) bool {
	return s.remaining.Add(-n) == 0
}

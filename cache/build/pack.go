package build

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// units splits block rows [b0, b0+n) of a tiled target into runs of
// complete units, handed to full (first unit u, first row a, m rows), and
// pieces of a unit, handed to part (unit u, row offset in it, first row a,
// m rows). It reports whether any call completed the target.
func (s *sink) units(b0, n int, full func(u, a, m int) (bool, error), part func(u, off, a, m int) (bool, error)) (bool, error) {
	complete := false
	end := b0 + n
	for a := b0; a < end; {
		u := a / unitRows
		us, ue := u*unitRows, min(u*unitRows+unitRows, s.rows)
		var m int
		var c bool
		var err error
		if a == us && end >= ue {
			// A run of complete units [u, u1).
			u1 := u + 1
			for u1*unitRows < s.rows && min(u1*unitRows+unitRows, s.rows) <= end {
				u1++
			}
			m = min(u1*unitRows, s.rows) - a
			c, err = full(u, a, m)
		} else {
			m = min(end, ue) - a
			c, err = part(u, a-us, a, m)
		}
		if err != nil {
			return false, err
		}
		complete = complete || c
		a += m
	}
	return complete, nil
}

// put16 is put for bfloat16 bits (src) with no value ops left to apply.
// Complete tile rows are packed straight from the bits and BFLOAT16
// row-major rows are copied; what needs staging or assembling is widened
// to float32 (exact) and takes put's way.
func (s *sink) put16(w *scratch, sh, b0, n int, src []uint16, stride, col int) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	switch s.kind {
	case kindRowMajor:
		if s.dt != tile.BFLOAT16 {
			return s.putWidened(w, sh, b0, n, src, stride, col)
		}
		off := s.base[sh] + int64(b0)*int64(s.cols*2)
		switch {
		case littleEndian && col == 0 && s.cols == stride:
			// The rows are the file's bytes as they are.
			if err := s.writeAt(u16Bytes(src[:n*stride]), off); err != nil {
				return false, err
			}
		default:
			w.out = growB(w.out, n*s.cols*2)
			for r := 0; r < n; r++ {
				o := w.out[r*s.cols*2 : (r+1)*s.cols*2]
				row := src[r*stride+col : r*stride+col+s.cols]
				if littleEndian {
					copy(o, u16Bytes(row))
					continue
				}
				for i, h := range row {
					binary.LittleEndian.PutUint16(o[2*i:], h)
				}
			}
			if err := s.writeAt(w.out, off); err != nil {
				return false, err
			}
		}
		return s.done(int64(n) * int64(s.cols)), nil
	case kindWhole:
		return s.putWidened(w, sh, b0, n, src, stride, col)
	}
	return s.units(b0, n, func(u, a, m int) (bool, error) {
		return s.writeUnits16(w, sh, u, src[(a-b0)*stride:], stride, col, m)
	}, func(u, off, a, m int) (bool, error) {
		w.wide = growF(w.wide, m*s.cols)
		for r := 0; r < m; r++ {
			o := (a-b0+r)*stride + col
			widen(w.wide[r*s.cols:(r+1)*s.cols], src[o:o+s.cols])
		}
		return s.stage(w, sh, u, off, w.wide, m, s.cols, 0, nil)
	})
}

// putFP8 delivers block rows [b0, b0+n) of shard sh of a direct target
// (use.directFP8) as F8_E4M3 codes: block row r is codes[(r-b0)*stride+col
// : ...+cols], source row srcRow+r-b0 of v, whose scales apply. b0 is a
// multiple of 32, and n too unless the rows end the block.
//
// The rows are the tile columns [b0/32, (b0+n)/32) of every tile row.
// Each tile is encoded straight from the codes into the write window that
// holds its tile column (sink.window); a window's tile row is written
// (one pwrite of 32 or more tiles) as soon as all its tiles are in, while
// they are still in the CPU's caches, even when they come from several
// sources (a tile-interleaved [gate|up] gets one tile column from each
// source in turn, and the sources advance together). Tiles of a window
// that got no memory (the builder's window budget was spent) are written
// a tile row at a time, directly.
func (s *sink) putFP8(w *scratch, sh, b0, n int, codes []byte, stride, col int, v *ckpt.Values, srcRow int64) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	const d = tile.TileDim
	tb := s.dt.TileBytes()
	h := s.cols
	ntc := (s.rows + d - 1) / d
	ntr := (h + d - 1) / d
	wc := s.winCols(ntr, ntc)
	u0 := b0 / d
	nt := (n + d - 1) / d
	// The window of each of the nt tile columns.
	w.wins = w.wins[:0]
	for c := 0; c < nt; c++ {
		if c == 0 || (u0+c)%wc == 0 {
			w.wins = append(w.wins, s.window(sh, (u0+c)/wc, ntr, ntc, tb))
		} else {
			w.wins = append(w.wins, w.wins[c-1])
		}
	}
	w.out = growB(w.out, nt*tb)
	chunk := w.out[:nt*tb]
	for t := 0; t < ntr; t++ {
		cols := min(d, h-t*d)
		for c := 0; c < nt; c++ {
			win := w.wins[c]
			var dst []byte
			if win.buf != nil {
				o := (t*win.width + u0 + c - win.w0) * tb
				dst = win.buf[o : o+tb]
			} else {
				dst = chunk[c*tb : (c+1)*tb]
			}
			rows := min(d, n-c*d)
			src := codes[c*d*stride+col+t*d:]
			sc := v.ScaleAt(srcRow+int64(c*d), int64(col+t*d))
			if rows == d && cols == d {
				w.scale[0] = sc
				tile.EncodeFP8TransposedNaN(s.dt, dst, src, stride, w.scale[:], 1, s.nan)
			} else {
				tile.EncodeFP8TransposedPartialNaN(s.dt, dst, src, stride, rows, cols, sc, s.nan)
			}
		}
		// Count row t's tiles into their windows: a window row now
		// complete is written; runs of tiles without a window, too.
		for c := 0; c < nt; {
			win := w.wins[c]
			e := c + 1
			for e < nt && w.wins[e] == win {
				e++
			}
			if win.buf == nil {
				if err := s.writeAt(chunk[c*tb:e*tb], s.base[sh]+int64(t*ntc+u0+c)*int64(tb)); err != nil {
					return false, err
				}
			} else if win.rows[t].Add(-int32(e-c)) == 0 {
				row := win.width * tb
				if err := s.writeAt(win.buf[t*row:(t+1)*row], s.base[sh]+int64(t*ntc+win.w0)*int64(tb)); err != nil {
					return false, err
				}
			}
			c = e
		}
	}
	// A window whose every tile is in is done.
	for c := 0; c < nt; {
		win := w.wins[c]
		e := c + 1
		for e < nt && w.wins[e] == win {
			e++
		}
		if win.left.Add(-int64((e-c)*ntr)) == 0 {
			s.closeWindow(sh, win, wc)
		}
		c = e
	}
	return s.done(int64(n) * int64(s.cols)), nil
}

// window holds the encoded tiles of tile columns [w0, w0+width) of one
// shard of a transposed target, every tile row (tile row t at buf[t*width*
// tileBytes:]); rows[t] counts the tiles of row t still to come, left all
// of them. buf is nil for a window that got no memory: its tiles are
// written as they come.
type window struct {
	buf       []byte
	w0, width int
	rows      []atomic.Int32
	left      atomic.Int64
}

// winTarget is the size a write window aims at (its tile rows of winCols
// tiles each), and winMinCols the fewest tile columns one has: a
// window's pwrites are then at least 32 tiles (18-35 KB) long.
const (
	winTarget  = 4 << 20
	winMinCols = 32
)

// winCols is the number of tile columns of the target's write windows.
func (s *sink) winCols(ntr, ntc int) int {
	return min(max(winTarget/max(ntr*s.dt.TileBytes(), 1), winMinCols), ntc)
}

// window returns the write window wi of shard sh, creating it with
// memory from the builder's budget (or none when that is spent).
func (s *sink) window(sh, wi, ntr, ntc, tb int) *window {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := stageKey{sh, wi}
	if win := s.wins[k]; win != nil {
		return win
	}
	wc := s.winCols(ntr, ntc)
	win := &window{w0: wi * wc, width: min(wc, ntc-wi*wc)}
	win.left.Store(int64(ntr * win.width))
	size := ntr * win.width * tb
	if s.windowed && !s.blocked[k] && s.budget.Add(-int64(size)) >= 0 {
		win.buf = s.pool.get(size)
		win.rows = make([]atomic.Int32, ntr)
		for t := range win.rows {
			win.rows[t].Store(int32(win.width))
		}
	} else if s.windowed && !s.blocked[k] {
		s.budget.Add(int64(size))
	}
	if s.wins == nil {
		s.wins = map[stageKey]*window{}
	}
	s.wins[k] = win
	return win
}

// block marks the windows of shard sh that hold block rows [row,
// row+rows) (a use that does not go through putFP8).
func (s *sink) block(sh int, row, rows int64) {
	if rows <= 0 || s.kind != kindTransposed {
		return
	}
	const d = tile.TileDim
	ntr, ntc := (s.cols+d-1)/d, (s.rows+d-1)/d
	wc := s.winCols(ntr, ntc)
	if s.blocked == nil {
		s.blocked = map[stageKey]bool{}
	}
	for w := int(row) / d / wc; w <= int(row+rows-1)/d/wc; w++ {
		s.blocked[stageKey{sh, w}] = true
	}
}

// closeWindow forgets a window whose rows are all written and returns its
// memory.
func (s *sink) closeWindow(sh int, win *window, wc int) {
	s.mu.Lock()
	delete(s.wins, stageKey{sh, win.w0 / wc})
	s.mu.Unlock()
	if win.buf != nil {
		s.budget.Add(int64(len(win.buf)))
		s.pool.put(win.buf)
	}
}

// bufPool recycles window buffers (every byte of one is written before it
// is read, so a recycled buffer needs no clearing).
type bufPool struct {
	mu   sync.Mutex
	free [][]byte
}

func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.free {
		if cap(b) >= n {
			p.free = append(p.free[:i], p.free[i+1:]...)
			return b[:n]
		}
	}
	if len(p.free) > 0 {
		// None fits: let one go, so that idle and live buffers stay
		// within about the window budget.
		p.free = p.free[1:]
	}
	return make([]byte, n)
}

func (p *bufPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b)
}

// putWidened widens n rows of bfloat16 bits to float32 and puts them.
func (s *sink) putWidened(w *scratch, sh, b0, n int, src []uint16, stride, col int) (bool, error) {
	w.wide = growF(w.wide, n*s.cols)
	for r := 0; r < n; r++ {
		off := r*stride + col
		widen(w.wide[r*s.cols:(r+1)*s.cols], src[off:off+s.cols])
	}
	return s.put(w, sh, b0, n, w.wide, s.cols, 0, nil)
}

// stage copies m rows into the staging buffer of unit u (at row off),
// applying the value ops, and writes the unit once all its rows arrived.
func (s *sink) stage(w *scratch, sh, u, off int, src []float32, m, stride, col int, ops valueOps) (bool, error) {
	k := stageKey{sh, u}
	valid := min(unitRows, s.rows-u*unitRows)
	s.mu.Lock()
	st := s.stages[k]
	if st == nil {
		st = &stage{buf: make([]float32, valid*s.cols)}
		s.stages[k] = st
	}
	err := s.extract(st.buf[off*s.cols:], src, m, stride, col, ops)
	st.filled += m
	full := st.filled == valid
	if full {
		delete(s.stages, k)
	}
	s.mu.Unlock()
	if err != nil || !full {
		return false, err
	}
	return s.writeUnits(w, sh, u, st.buf, s.cols, 0, valid, nil)
}

// writeUnits packs m block rows starting at unit u0 — row k is
// src[k*stride+col : ...+cols], ops still to be applied — and writes them.
func (s *sink) writeUnits(w *scratch, sh, u0 int, src []float32, stride, col, m int, ops valueOps) (bool, error) {
	return s.writeTiles(w, sh, u0, m, func(dst []byte) {
		if s.kind == kindStrip {
			packRowTiles(s.dt, dst, src, stride, col, m, s.cols, ops)
		} else {
			packTransposedTiles(s.dt, dst, src, stride, col, m, s.cols, ops)
		}
	})
}

// writeUnits16 is writeUnits for bfloat16 bits with no ops to apply.
func (s *sink) writeUnits16(w *scratch, sh, u0 int, src []uint16, stride, col, m int) (bool, error) {
	return s.writeTiles(w, sh, u0, m, func(dst []byte) {
		if s.kind == kindStrip {
			packRowTiles16(s.dt, dst, src, stride, col, m, s.cols)
		} else {
			packTransposedTiles16(s.dt, dst, src, stride, col, m, s.cols, &w.stage)
		}
	})
}

// writeTiles writes the tiles of m block rows starting at unit u0, which
// pack produces into the buffer it is given (the tiles in the order of
// packRowTiles or packTransposedTiles).
func (s *sink) writeTiles(w *scratch, sh, u0, m int, pack func(dst []byte)) (bool, error) {
	tb := s.dt.TileBytes()
	switch s.kind {
	case kindStrip:
		sb := tile.StripBytes(s.dt, s.cols)
		strips := (m + unitRows - 1) / unitRows
		w.out = growB(w.out, strips*sb)
		pack(w.out)
		if err := s.writeAt(w.out, s.base[sh]+int64(u0)*int64(sb)); err != nil {
			return false, err
		}
	case kindTransposed:
		// Logical matrix: H = cols rows, W = rows columns; the m block rows
		// are logical columns [u0*32, u0*32+m).
		h := s.cols
		nt := (m + tile.TileDim - 1) / tile.TileDim // tile columns written
		ntc := (s.rows + tile.TileDim - 1) / tile.TileDim
		ntr := (h + tile.TileDim - 1) / tile.TileDim
		chunk := nt * tb
		w.out = growB(w.out, ntr*chunk)
		pack(w.out)
		if nt == ntc {
			if err := s.writeAt(w.out, s.base[sh]); err != nil {
				return false, err
			}
		} else {
			for t := 0; t < ntr; t++ {
				off := s.base[sh] + int64(t*ntc+u0)*int64(tb)
				if err := s.writeAt(w.out[t*chunk:(t+1)*chunk], off); err != nil {
					return false, err
				}
			}
		}
	default:
		return false, fmt.Errorf("target %s: internal error: writeUnits on sink kind %d", s.e.Target, s.kind)
	}
	return s.done(int64(m) * int64(s.cols)), nil
}

// flushWhole converts and writes a fully assembled shard of a kindWhole
// target.
func (s *sink) flushWhole(sh int) (bool, error) {
	s.mu.Lock()
	block := s.whole[sh]
	s.whole[sh] = nil
	s.mu.Unlock()
	buf, err := packLogical(s.e, s.dt, s.layout, block)
	if err != nil {
		return false, err
	}
	if err := s.writeAt(buf, s.base[sh]); err != nil {
		return false, err
	}
	return s.done(int64(s.rows) * int64(s.cols)), nil
}

// PackShard converts one materialised shard of a plan entry — the
// row-major block values with value ops applied, as mapping's
// Entry.Materialize returns them (already transposed when the entry
// transposes) — into the host buffer bytes of the entry's dtype and layout:
// TILE pads each [H, W] matrix of the device shape (leading dimensions
// folded) to whole tiles with zeros, ROW_MAJOR stores the values as they
// are.
func PackShard(e *mapping.Entry, values []float32) ([]byte, error) {
	dt, err := tile.ParseDType(e.DType)
	if err != nil {
		return nil, err
	}
	layout, err := tile.ParseLayout(e.Layout)
	if err != nil {
		return nil, err
	}
	return packDevice(e.DeviceShape, dt, layout, values)
}

// packLogical packs an untransposed block (rows × cols) of e.
func packLogical(e *mapping.Entry, dt tile.DType, layout tile.Layout, block []float32) ([]byte, error) {
	if e.Transpose && e.BatchRows > 0 {
		block = mapping.TransposeBlock(block, e.MatrixRows, e.MatrixCols, e.BatchRows)
	} else if e.Transpose {
		t := make([]float32, len(block))
		transpose(t, block, int(e.MatrixRows), int(e.MatrixCols))
		block = t
	}
	return packDevice(e.DeviceShape, dt, layout, block)
}

func packDevice(ds []int64, dt tile.DType, layout tile.Layout, vals []float32) ([]byte, error) {
	shape := make([]int, len(ds))
	n := 1
	for i, d := range ds {
		shape[i] = int(d)
		n *= int(d)
	}
	if len(vals) != n {
		return nil, fmt.Errorf("packing shard of shape %v: have %d values, need %d", ds, len(vals), n)
	}
	size, err := tile.ShardBytes(shape, dt, layout)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if layout == tile.ROW_MAJOR {
		_, err := tile.PackRowMajor(dt, out, vals)
		return out, err
	}
	outer, h, w := tile.TileView(shape)
	if h == 0 || w == 0 || outer == 0 {
		return out, nil
	}
	per := tile.TilesBytes(dt, h, w)
	for o := 0; o < outer; o++ {
		if _, err := tile.PackTiles(dt, out[o*per:], vals[o*h*w:(o+1)*h*w], h, w); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// transpose writes the transpose of the rows×cols matrix src into dst
// (cols×rows), in cache-friendly blocks.
func transpose(dst, src []float32, rows, cols int) {
	const b = 32
	for r0 := 0; r0 < rows; r0 += b {
		r1 := min(r0+b, rows)
		for c0 := 0; c0 < cols; c0 += b {
			c1 := min(c0+b, cols)
			for r := r0; r < r1; r++ {
				row := src[r*cols : r*cols+c1]
				for c := c0; c < c1; c++ {
					dst[c*rows+r] = row[c]
				}
			}
		}
	}
}

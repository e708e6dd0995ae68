package build

import (
	"fmt"
	"sort"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/ckpt-dev/ckpt/mapping/tile"
)

// srcState is one streamed source tensor.
type srcState struct {
	t      *ckpt.Tensor
	v      *ckpt.Values
	flat   bool // read as ckpt.Matrix (Entry.Flat), not stacked
	bands  int
	hasher *xxh3s.Hasher
	hashed int
	sum    string
	mu     sync.Mutex
	uses   []use
	// roundFirst: every target using this source rounds to bf16 first, so
	// values may be decoded already rounded (see readBand).
	roundFirst bool
	// codesOnly: every use is direct, so bands are not decoded at all.
	codesOnly bool
	// scan: the float32 values read may overflow the bf16 rounding
	// (F32/F64 sources, nonfinite.go).
	scan bool
}

// use is a contiguous run of a source's rows that lands in one shard of
// one target: source rows [row, row+rows), columns from col, block row
// block.
type use struct {
	s                     *sink
	shard                 int
	row, rows, block, col int64
	// at and width: the block columns the run fills (a piece beside
	// others, mapping.Piece); width is the block's for a full-width piece.
	at, width int64
	// direct: the target's tiles are encoded straight from the band's
	// F8_E4M3 codes (sink.putFP8).
	direct bool
}

// directFP8 reports whether u can take the codes of a block-FP8 source v
// on the bits path: a transposed block-float target with nothing to apply
// after the bf16 rounding, whose tiles each lie in one scale block and
// start on whole tiles of both the source and the block (only the block's
// last tile column and tile row may be ragged).
func (u use) directFP8(v *ckpt.Values) bool {
	s := u.s
	const d = tile.TileDim
	return s.kind == kindTransposed && (s.dt == tile.BFLOAT8_B || s.dt == tile.BFLOAT4_B) && len(s.opsFor(true)) == 0 &&
		v.BM%d == 0 && v.BN%d == 0 && u.row%d == 0 && u.col%d == 0 && u.block%d == 0 &&
		(u.rows%d == 0 || u.block+u.rows == int64(s.rows))
}

type job struct {
	src        *srcState
	r0, n      int64
	prev, mine chan struct{}
	pre        *prefetched // the band's raw bytes read ahead (nil: readBand reads them)
}

// sources collects the source tensors that the sinks to build read, each
// with its uses (the runs of its rows that land in a target's shard) and
// how its bands are decoded, in file order.
func (b *builder) sources() ([]*srcState, error) {
	srcs, err := b.collectUses()
	if err != nil {
		return nil, err
	}
	for _, st := range srcs {
		st.roundFirst = true
		for _, u := range st.uses {
			st.roundFirst = st.roundFirst && len(u.s.vops) > 0 && u.s.vops[0].Kind == mapping.ElemRound
		}
		if err := b.checkOverflow(st); err != nil {
			return nil, err
		}
		if st.bitsPath() == numfmt.F8E4M3 {
			st.codesOnly = true
			for i := range st.uses {
				st.uses[i].direct = st.uses[i].directFP8(st.v)
				st.codesOnly = st.codesOnly && st.uses[i].direct
			}
		}
	}
	// A sink with direct uses gets write windows, except those holding a
	// tile column that another use writes its own way (sink.blocked).
	for _, st := range srcs {
		for _, u := range st.uses {
			// A staged file gathers its tiles in its image: no windows.
			u.s.windowed = (u.s.windowed || u.direct) && !u.s.staged
		}
	}
	for _, st := range srcs {
		for _, u := range st.uses {
			if !u.direct && u.s.windowed {
				u.s.block(u.shard, u.block, u.rows)
			}
		}
	}
	// Sources in file order, then offset: sequential reads.
	fileIdx := map[*ckpt.File]int{}
	for i, f := range b.c.Files {
		fileIdx[f] = i
	}
	sort.Slice(srcs, func(i, j int) bool {
		a, c := srcs[i].t, srcs[j].t
		if fileIdx[a.File] != fileIdx[c.File] {
			return fileIdx[a.File] < fileIdx[c.File]
		}
		return a.Offset() < c.Offset()
	})
	return srcs, nil
}

// collectUses makes the state of every source tensor the sinks to build
// read, with its uses, in the order the sinks first need them; it checks
// that every piece fits its source and every shard has the rows it needs.
func (b *builder) collectUses() ([]*srcState, error) {
	bySrc := map[*ckpt.Tensor]*srcState{}
	var srcs []*srcState
	for _, s := range b.todo {
		if s.remaining.Load() == 0 {
			continue
		}
		for sh, pieces := range s.e.Shards {
			placed, block, err := mapping.PlaceBands(pieces, s.e.MatrixCols)
			if err != nil {
				return nil, fmt.Errorf("target %s: shard %d: %w", s.e.Target, sh, err)
			}
			if block != s.e.MatrixRows {
				return nil, fmt.Errorf("target %s: shard %d has %d rows, expected %d", s.e.Target, sh, block, s.e.MatrixRows)
			}
			for _, pp := range placed {
				p := pp.Piece
				if p.Zero {
					continue // zeros from the start (newSink)
				}
				if p.Source < 0 || p.Source >= len(s.e.Sources) {
					return nil, fmt.Errorf("target %s: piece %+v names source %d of %d", s.e.Target, p, p.Source, len(s.e.Sources))
				}
				src := s.e.Sources[p.Source]
				st := bySrc[src.Tensor]
				if st == nil {
					v, err := b.c.Values(src.Tensor) // ckpt.QuantScheme, as the plan
					if err != nil {
						return nil, fmt.Errorf("target %s: %w", s.e.Target, err)
					}
					if !s.e.Flat {
						v = v.Stacked() // the plan's view of the source (ckpt.StackedMatrix)
					}
					st = &srcState{t: src.Tensor, v: v, hasher: xxh3s.New(), flat: s.e.Flat}
					bySrc[src.Tensor] = st
					srcs = append(srcs, st)
				} else if st.flat != s.e.Flat {
					return nil, fmt.Errorf("target %s: %s is read as shape[0] × the rest by one target and as a stack of its last dimension by another",
						s.e.Target, src.Name)
				}
				if p.Row < 0 || p.Col < 0 || p.Row+p.Rows > st.v.Rows || p.Col+p.Cols > st.v.Cols || p.Cols != s.e.MatrixCols && s.kind != kindWhole {
					return nil, fmt.Errorf("target %s: piece %+v does not fit %s (%d x %d)", s.e.Target, p, src.Name, st.v.Rows, st.v.Cols)
				}
				st.uses = append(st.uses, s.uses(sh, p, pp.BlockRow)...)
			}
		}
	}
	return srcs, nil
}

// groupSources splits srcs (in their order) into groups of sources that
// fill a common target, directly or through other members; the groups
// come in the order of their first member.
func groupSources(srcs []*srcState) [][]*srcState {
	parent := make([]int, len(srcs))
	for i := range parent {
		parent[i] = i
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	first := map[*sink]int{}
	for i, st := range srcs {
		for _, u := range st.uses {
			if j, ok := first[u.s]; ok {
				if a, b := find(i), find(j); a != b {
					parent[max(a, b)] = min(a, b)
				}
			} else {
				first[u.s] = i
			}
		}
	}
	idx := map[int]int{}
	var groups [][]*srcState
	for i, st := range srcs {
		r := find(i)
		g, ok := idx[r]
		if !ok {
			g = len(groups)
			idx[r] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], st)
	}
	return groups
}

// codeBandBytes bounds the bands of codesOnly sources.
const codeBandBytes = 2 << 20

// bandRows is the number of source rows per band: about BandBytes of
// float32, a multiple of 32 rows and of the FP8 scale block. Bands decoded
// straight to bfloat16 bits (bits) hold four times as many values in about
// the same memory as a float32 band (raw codes, bits and packed output,
// with no float32 copy): fewer, larger writes of transposed targets.
//
// Bands of codes that go straight to tiles (codesOnly) are smaller, about
// codeBandBytes: read, hashed and encoded while they are in the CPU's
// caches (on the bench fixture 2 MiB bands convert 20 % faster than 8 MiB
// ones, and 256 KiB ones 15 % slower).
func (b *builder) bandRows(st *srcState) int64 {
	v, bits := st.v, st.bitsPath() != ""
	bytes := b.opt.BandBytes
	if st.codesOnly {
		bytes = min(bytes, codeBandBytes)
	}
	unit := int64(tile.TileDim)
	if v.BM > 0 && v.BM%unit != 0 && unit%v.BM != 0 {
		unit = v.BM * tile.TileDim
	} else if v.BM > unit {
		unit = v.BM
	}
	per := int64(4)
	if bits {
		per = 1
	}
	rows := bytes / max(v.Cols*per, 1)
	rows = max(rows/unit, 1) * unit
	return max(min(rows, v.Rows), 1)
}

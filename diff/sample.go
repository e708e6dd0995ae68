package diff

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Range planning of sampled diffs (CompareOptions.SampleBytes, SampleBudget):
// which parts of a tensor pair are compared. Both sides are compared at
// the same element positions, so one plan serves both. The method and what
// a sample cannot prove are in docs/sampling.md.

const (
	// pieceBytes is the target size of one sampled range: a tensor's
	// bytes per side are split into about size/pieceBytes ranges, at least
	// minRanges and at most maxRanges of them, so that the sample is many
	// short clusters spread over the tensor (each range is one request
	// over HTTP).
	pieceBytes = 4 << 10
	minRanges  = 8
	maxRanges  = 32
)

// samplePlan is the part of a tensor pair a sampled diff compares.
type samplePlan struct {
	// whole: the tensor is read and compared whole, and classified
	// exactly as an unsampled diff would.
	whole bool
	// ranges are sorted, disjoint unit ranges [a, b) of the engine's
	// geometry (elements, or bytes for sub-byte raw dtypes): the clusters
	// of the sample.
	ranges [][2]int64
}

// chunks splits the sampled ranges into chunks of at most g.chunk units
// (nil when the tensor is compared whole: the engine chunks it itself),
// and returns for each chunk the index of its range.
func (s *samplePlan) chunks(g geom) ([][2]int64, []int) {
	if s == nil || s.whole {
		return nil, nil
	}
	out := [][2]int64{}
	var of []int
	for i, r := range s.ranges {
		for a := r[0]; a < r[1]; a += g.chunk {
			out = append(out, [2]int64{a, min(a+g.chunk, r[1])})
			of = append(of, i)
		}
	}
	return out, of
}

// units is the number of units the plan compares.
func (s *samplePlan) units(g geom) int64 {
	if s.whole {
		return g.numel
	}
	var n int64
	for _, r := range s.ranges {
		n += r[1] - r[0]
	}
	return n
}

// groupCols is the column alignment that keeps whole groups of scale
// blocks (bn columns) on every block-scaled side and whole groups of
// values of a scale code on every packed FP4 side (0 when neither side
// has either). Scales of whole rows (per channel, per tensor) need no
// groups: any element is decoded with its row's scale.
func (p *plan) groupCols() int64 {
	var align int64
	add := func(a int64) {
		if align == 0 {
			align = a
		} else {
			align = lcm(align, a)
		}
	}
	for _, s := range []*side{p.bs, p.fs} {
		if s != nil && s.scaled() && !s.rowBlocks {
			add(s.bn)
		}
	}
	for _, ps := range []*packedSrc{p.packB, p.packF} {
		if ps != nil {
			add(ps.group())
		}
	}
	return align
}

// sampleRNG is the generator of one tensor's sample: a function of the
// seed and the name only, so that the positions do not depend on where or
// how the checkpoints are stored.
func sampleRNG(seed uint64, name string) *rand.Rand {
	var sb [8]byte
	binary.LittleEndian.PutUint64(sb[:], seed)
	h := fnv.New64a()
	h.Write(sb[:])
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(h.Sum64(), seed^0x9e3779b97f4a7c15))
}

// planSample chooses what to compare of a pair whose geometry is g, for
// at most size bytes per side.
// A pair no larger than size on either side is compared whole. Otherwise
// the budget is split into m ranges of equal length (m between minRanges
// and maxRanges, about size/pieceBytes), whose start positions are drawn
// one in each of m equal strata of all the possible starts: the sample
// spreads over every part of the tensor, rows and columns alike. On a
// block-scaled pair a range is a run of whole groups of bn columns (across
// rows, or inside one row when rows end in a short group), so that every
// sampled element is decoded with its block's scale; the scale tensor is
// read whole (spans). On a packed FP4 pair a range is a run of whole
// groups of values of one scale code, and size counts the codes and the
// scale codes it reads (samplepacked.go).
func planSample(p *plan, g geom, size int64, seed uint64) *samplePlan {
	if g.numel == 0 || p.readBytes(g, g.numel) <= size {
		return &samplePlan{whole: true}
	}
	budget := max(p.unitsIn(g, size), 1) // units per side
	m := min(max(size/pieceBytes, minRanges), maxRanges)
	rng := sampleRNG(seed, p.row.Name)
	var ranges [][2]int64
	gc := p.groupCols()
	cols := int64(0)
	if p.bs != nil {
		cols = p.bs.cols
	}
	// unit is the granularity of the ranges: a group of gc columns on a
	// block-scaled pair (whose rows are whole groups), else one unit.
	unit, span := int64(1), g.numel
	if gc > 0 && cols > 0 && cols%gc == 0 {
		unit, span = gc, g.numel/gc
	}
	if gc > 0 && cols > 0 && cols%gc != 0 {
		// Rows end in a short group: runs of lg whole groups inside a row.
		gpr := (cols + gc - 1) / gc
		lg := min(max(budget/m/gc, 1), gpr)
		m = max(min(m, budget/(lg*gc)), 1)
		per := gpr - lg + 1 // starts per row
		starts := (g.numel / cols) * per
		m = min(m, starts)
		for j := int64(0); j < m; j++ {
			lo, hi := j*starts/m, (j+1)*starts/m
			s := lo + rng.Int64N(hi-lo)
			r, g0 := s/per, s%per
			a := r*cols + g0*gc
			ranges = append(ranges, [2]int64{a, min(a+lg*gc, (r+1)*cols)})
		}
		return &samplePlan{ranges: mergeRanges(ranges)}
	}
	// Runs of l units anywhere (across rows too), one start in each of m
	// strata of the possible starts.
	l := max(budget/m/unit, 1)
	m = max(min(m, budget/(l*unit)), 1)
	starts := span - l + 1
	m = min(m, starts)
	for j := int64(0); j < m; j++ {
		lo, hi := j*starts/m, (j+1)*starts/m
		s := lo + rng.Int64N(hi-lo)
		ranges = append(ranges, [2]int64{s * unit, (s + l) * unit})
	}
	return &samplePlan{ranges: mergeRanges(ranges)}
}

// mergeRanges sorts the ranges and merges those that overlap or touch
// into one (one read, one cluster); no gap is added, so the sample stays
// within its budget.
func mergeRanges(rs [][2]int64) [][2]int64 {
	sort.Slice(rs, func(i, j int) bool { return rs[i][0] < rs[j][0] })
	var out [][2]int64
	for _, r := range rs {
		if n := len(out); n > 0 && r[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// spans lists the byte ranges of one side a plan needs: the sampled
// ranges of the tensor (or all of it) and, for a block-scaled side, its
// scale tensor whole.
func (s *samplePlan) spans(t *ckpt.Tensor, sd *side, esize int64) []ckpt.Span {
	var out []ckpt.Span
	if s.whole {
		out = append(out, ckpt.Span{Tensor: t, Len: int64(t.NBytes())})
	} else {
		for _, r := range s.ranges {
			out = append(out, ckpt.Span{Tensor: t, Off: r[0] * esize, Len: (r[1] - r[0]) * esize})
		}
	}
	if sd != nil && sd.scaled() {
		out = append(out, ckpt.Span{Tensor: sd.scaleT, Len: int64(sd.scaleT.NBytes())})
	}
	return out
}

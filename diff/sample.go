package diff

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Range planning of sampled diffs (Options.SampleBytes): which parts of a
// tensor pair are compared. Both sides are compared at the same element
// positions, so one plan serves both.

const (
	// minPiece and maxPieces shape the sample of a tensor without block
	// scales: up to maxPieces ranges of at least minPiece bytes, one in
	// each of as many equal strata of the tensor, so that the sample
	// spreads over it without costing a request per few bytes.
	minPiece  = 16 << 10
	maxPieces = 8
)

// samplePlan is the part of a tensor pair a sampled diff compares.
type samplePlan struct {
	// whole: the tensor is read and compared whole, and classified
	// exactly as an unsampled diff would.
	whole bool
	// ranges are sorted, disjoint unit ranges [a, b) of the engine's
	// geometry (elements, or bytes for sub-byte raw dtypes).
	ranges [][2]int64
}

// chunks splits the sampled ranges into chunks of at most g.chunk units
// (nil when the tensor is compared whole: the engine chunks it itself).
// Ranges of a block-scaled tensor start on rows of scale blocks and g.chunk
// is a whole number of them, so every chunk is too.
func (s *samplePlan) chunks(g geom) [][2]int64 {
	if s == nil || s.whole {
		return nil
	}
	out := [][2]int64{}
	for _, r := range s.ranges {
		for a := r[0]; a < r[1]; a += g.chunk {
			out = append(out, [2]int64{a, min(a+g.chunk, r[1])})
		}
	}
	return out
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

// blockRows is the row alignment that keeps whole scale blocks on every
// block-scaled side (0 when neither side has block scales).
func (p *plan) blockRows() int64 {
	var align int64
	for _, s := range []*side{p.bs, p.fs} {
		if s != nil && s.scaled() {
			if align == 0 {
				align = s.bm
			} else {
				align = lcm(align, s.bm)
			}
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
// about size bytes per side. A pair no larger than size on either side is
// compared whole. A block-scaled pair is sampled in whole rows of scale
// blocks (at least one; so that requantisation and the scales apply to
// complete blocks), chosen one per stratum of equal numbers of block rows.
// Other pairs are sampled in up to maxPieces ranges, one at a random
// position inside each of as many equal strata.
func planSample(p *plan, g geom, size int64, seed uint64) *samplePlan {
	maxE := max(g.esizeB, g.esizeF, 1)
	if g.numel*maxE <= size || g.numel == 0 {
		return &samplePlan{whole: true}
	}
	budget := max(size/maxE, 1) // units per side
	rng := sampleRNG(seed, p.row.Name)
	var ranges [][2]int64
	if align := p.blockRows(); align > 0 && p.bs.cols > 0 {
		unit := align * p.bs.cols
		nUnits := (g.numel + unit - 1) / unit
		k := max(budget/unit, 1)
		if k >= nUnits {
			return &samplePlan{whole: true}
		}
		for j := int64(0); j < k; j++ {
			lo, hi := j*nUnits/k, (j+1)*nUnits/k
			u := lo + rng.Int64N(hi-lo)
			ranges = append(ranges, [2]int64{u * unit, min((u+1)*unit, g.numel)})
		}
		return &samplePlan{ranges: ranges}
	}
	pieces := min(max(budget*maxE/minPiece, 1), maxPieces)
	n := max(budget/pieces, 1)
	for j := int64(0); j < pieces; j++ {
		lo, hi := j*g.numel/pieces, (j+1)*g.numel/pieces
		start := lo + rng.Int64N(hi-lo-n+1)
		ranges = append(ranges, [2]int64{start, start + n})
	}
	return &samplePlan{ranges: ranges}
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

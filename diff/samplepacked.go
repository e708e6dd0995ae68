package diff

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Packed FP4 weights (MXFP4, NVFP4) in a sampled diff. The sample of such
// a pair is planned on its values, as for any pair, in runs of whole
// groups of the scheme (32 values per E8M0 scale for MXFP4, 16 per F8_E4M3
// scale for NVFP4); for each run of values [a, b) a packed side reads the
// codes [a/2, b/2) (two per byte) and the scale codes [a/g, b/g) of its
// groups, plus NVFP4's weight_scale_2 whole, and dequantises them with
// ckpt.DequantPacked, the dequantiser of ckpt.Values. The budget counts
// both: a packed side reads g/2+1 bytes per g values. The scale
// companions of a weight packed on both sides with one scheme are
// compared where the weight's sample reads them (the same bytes, read
// once); see docs/sampling.md.

// group is the number of values one scale code of the weight covers.
func (s *packedSrc) group() int64 { return ckpt.PackedGroup(s.q.Scheme) }

// unitCost is what one side of a pair reads for its units: num bytes per
// den units.
type unitCost struct{ num, den int64 }

// bytes is the size of n units (rounded up).
func (c unitCost) bytes(n int64) int64 { return (n*c.num + c.den - 1) / c.den }

// units is the number of units that fit in b bytes.
func (c unitCost) units(b int64) int64 { return b * c.den / c.num }

// sideCost is the unit cost of a side: esize bytes per unit, or for a
// packed FP4 side half a byte of codes per value and one scale byte per
// group.
func sideCost(ps *packedSrc, esize int64) unitCost {
	if ps != nil {
		g := ps.group()
		return unitCost{num: g/2 + 1, den: g}
	}
	return unitCost{num: max(esize, 1), den: 1}
}

// readBytes is the larger of the bytes the two sides read for n units (n
// a multiple of the packed sides' group).
func (p *plan) readBytes(g geom, n int64) int64 {
	return max(sideCost(p.packB, g.esizeB).bytes(n), sideCost(p.packF, g.esizeF).bytes(n))
}

// unitsIn is the number of units whose reads fit in size bytes on each
// side.
func (p *plan) unitsIn(g geom, size int64) int64 {
	return min(sideCost(p.packB, g.esizeB).units(size), sideCost(p.packF, g.esizeF).units(size))
}

// globalBytes is what the packed sides of p read besides codes and scale
// codes: NVFP4's weight_scale_2 (the larger side's).
func (p *plan) globalBytes() int64 {
	var n int64
	for _, ps := range []*packedSrc{p.packB, p.packF} {
		if ps != nil && ps.q.Global != nil {
			n = max(n, int64(ps.q.Global.NBytes()))
		}
	}
	return n
}

// packedSpans lists the byte ranges a packed side needs for the plan: its
// codes and scale codes whole, or for each sampled run of values (whole
// groups) the codes and the scale codes of its groups; NVFP4's global
// scale whole.
func (s *samplePlan) packedSpans(ps *packedSrc) []ckpt.Span {
	q := ps.q
	var out []ckpt.Span
	if s.whole {
		out = append(out, ckpt.Span{Tensor: ps.t, Len: int64(ps.t.NBytes())}, ckpt.Span{Tensor: q.Scale, Len: int64(q.Scale.NBytes())})
	} else {
		g := ps.group()
		for _, r := range s.ranges {
			g0, g1 := r[0]/g, (r[1]+g-1)/g // the groups of the run
			out = append(out, ckpt.Span{Tensor: ps.t, Off: g0 * g / 2, Len: (g1 - g0) * g / 2},
				ckpt.Span{Tensor: q.Scale, Off: g0, Len: g1 - g0})
		}
	}
	if q.Global != nil {
		out = append(out, ckpt.Span{Tensor: q.Global, Len: int64(q.Global.NBytes())})
	}
	return out
}

// packedMem serves the little-endian F32 bytes of a packed weight's
// values from the codes and scale codes a sampled diff read: the groups
// that hold the values asked for are dequantised (ckpt.DequantPacked).
type packedMem struct {
	ps            *packedSrc
	codes, scales *memSrc
	global        float32 // NVFP4's weight_scale_2
}

// newPackedMem is the reader of a packed side over the bytes in mem.
func newPackedMem(ps *packedSrc, mem map[*ckpt.Tensor]*memSrc) (*packedMem, error) {
	m := &packedMem{ps: ps, codes: mem[ps.t], scales: mem[ps.q.Scale]}
	if m.codes == nil || m.scales == nil {
		return nil, fmt.Errorf("tensor %s: internal error: its codes or scales were not read", ckpt.Quote(ps.q.Name))
	}
	if g := ps.q.Global; g != nil {
		raw, err := mem[g].slice(0, int64(g.NBytes()))
		if err != nil {
			return nil, err
		}
		if m.global, err = ps.q.GlobalScale(raw); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *packedMem) ReadAt(p []byte, off int64) (int, error) {
	if off%4 != 0 || len(p)%4 != 0 || off < 0 {
		return 0, fmt.Errorf("tensor %s: internal error: values [%d, %d) bytes not whole F32 values", ckpt.Quote(m.ps.q.Name), off, off+int64(len(p)))
	}
	g := m.ps.group()
	e0, e1 := off/4, off/4+int64(len(p)/4)
	g0, g1 := e0/g, (e1+g-1)/g
	codes, err := m.codes.slice(g0*g/2, (g1-g0)*g/2)
	if err != nil {
		return 0, err
	}
	scales, err := m.scales.slice(g0, g1-g0)
	if err != nil {
		return 0, err
	}
	vals := make([]float32, (g1-g0)*g)
	if err := ckpt.DequantPacked(m.ps.q.Scheme, vals, codes, scales, m.global); err != nil {
		return 0, fmt.Errorf("tensor %s: %w", ckpt.Quote(m.ps.q.Name), err)
	}
	for i, x := range vals[e0-g0*g : e1-g0*g] {
		binary.LittleEndian.PutUint32(p[4*i:], math.Float32bits(x))
	}
	return len(p), nil
}

// linkFollowers marks the pairs that are the scale companions of a weight
// packed on both sides with one scheme (an MXFP4 X_scales, an NVFP4
// weight_scale and weight_scale_2): such a pair follows its weight
// (plan.follows), compared where the weight's sample reads it.
func linkFollowers(plans []*plan) {
	byB := make(map[*ckpt.Tensor]*plan, len(plans))
	for _, p := range plans {
		byB[p.b] = p
	}
	for _, p := range plans {
		b, f := p.packB, p.packF
		if b == nil || f == nil || b.q.Scheme != f.q.Scheme {
			continue
		}
		for _, c := range [][2]*ckpt.Tensor{{b.q.Scale, f.q.Scale}, {b.q.Global, f.q.Global}} {
			if c[0] == nil || c[1] == nil {
				continue
			}
			if cp, ok := byB[c[0]]; ok && cp.f == c[1] && cp != p {
				cp.follows = p
			}
		}
	}
}

// followSample is the sample of a pair that follows a packed weight: the
// scale codes of the groups the weight's sample reads (whole when the
// weight is read whole), the global scale whole.
func (p *plan) followSample() *samplePlan {
	w := p.follows
	if w.sample.whole || p.b == w.packB.q.Global {
		return &samplePlan{whole: true}
	}
	g := w.packB.group()
	rs := make([][2]int64, len(w.sample.ranges))
	for i, r := range w.sample.ranges {
		rs[i] = [2]int64{r[0] / g, (r[1] + g - 1) / g}
	}
	return &samplePlan{ranges: mergeRanges(rs)}
}

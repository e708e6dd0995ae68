package diff

import (
	"fmt"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// An MXFP4 or NVFP4 weight against a wider float of its values' shape is
// compared by value (as kindCross) and, in the same pass, the wider side
// is re-quantised block by block with each of the scheme's recipes
// (numfmt: ocp-floor and triton-round-up for MXFP4, ModelOpt's for
// NVFP4) against the stored codes and scales: requant_identical when one
// recipe reproduces every code and scale. NVFP4's weight_scale_2 is the
// per-tensor input of the recipe: the blocks are re-quantised with the
// stored one, and the row names the recipe "modelopt" when the wider
// side's amax / 2688 is that scale, "modelopt-stored-global" when not.

// maxFP4Recipes bounds the recipes of one scheme.
const maxFP4Recipes = 2

// fp4Counts are what one recipe failed to reproduce.
type fp4Counts struct{ elems, blocks, zeroSign int64 }

// fp4Partial holds the re-quantisation counts of a run of blocks per
// recipe and the wider side's amax (NaN or Inf seen: nonFinite).
type fp4Partial struct {
	r         [maxFP4Recipes]fp4Counts
	amax      float32
	nonFinite bool
}

func (p *fp4Partial) merge(o *fp4Partial) {
	for i := range p.r {
		p.r[i].elems += o.r[i].elems
		p.r[i].blocks += o.r[i].blocks
		p.r[i].zeroSign += o.r[i].zeroSign
	}
	p.amax = max(p.amax, o.amax)
	p.nonFinite = p.nonFinite || o.nonFinite
}

// fp4Side is the packed side of a kindRequantFP4 plan: its codes tensor,
// its raw scales (E8M0 or F8_E4M3 codes, one per group of values) and
// NVFP4's global scale.
type fp4Side struct {
	scheme  quant.Scheme
	codes   *ckpt.Tensor
	q       ckpt.Quant
	group   int64
	scales  []byte
	global  float32
	wIsBase bool // the wider side is the base
}

// layoutFP4 reports whether the plan re-quantises a wider float to a
// packed FP4 side, and sets p.fp4.
func (p *plan) layoutFP4() bool {
	if p.sampled {
		return false // a sample compares values only (samplepacked.go)
	}
	pb, bPacked := p.rb.(*packedSrc)
	pf, fPacked := p.rf.(*packedSrc)
	var ps *packedSrc
	var w *side
	switch {
	case bPacked && !fPacked:
		ps, w = pb, p.fs
	case fPacked && !bPacked:
		ps, w = pf, p.bs
	default:
		return false
	}
	if w.scaled() || !isWide(w.dt) {
		return false
	}
	f := &fp4Side{scheme: ps.q.Scheme, codes: ps.t, q: ps.q, group: numfmt.MXFP4BlockSize, wIsBase: w == p.bs}
	if f.scheme == quant.NVFP4 {
		f.group = numfmt.NVFP4BlockSize
	}
	p.fp4 = f
	return true
}

// load reads the scales (and NVFP4's global scale) with read.
func (f *fp4Side) load(read func(*ckpt.Tensor) ([]byte, error)) error {
	raw, err := read(f.q.Scale)
	if err != nil {
		return err
	}
	n := int64(f.codes.Numel()) * 2 / f.group
	if int64(len(raw)) != n || f.q.Scale.DType.Bits() != 8 {
		return fmt.Errorf("tensor %s of %s: %d scale bytes for the %d blocks of %s",
			ckpt.Quote(f.q.Scale.Name), f.q.Scale.File.Location, len(raw), n, ckpt.Quote(f.codes.Name))
	}
	f.scales = raw
	if f.scheme != quant.NVFP4 {
		return nil
	}
	g, err := read(f.q.Global)
	if err != nil {
		return err
	}
	f.global, err = f.q.GlobalScale(g) // as ckpt.Values dequantises with
	return err
}

// requantFP4 re-quantises the wider side's values [e0, e1) (whole blocks)
// with every recipe of the packed side's scheme into r.fp4.
func (e *engine) requantFP4(p *plan, bRaw, fRaw []byte, e0, e1 int64, sc *scratch, r *partial) error {
	f := p.fp4
	w, wRaw := p.fs, fRaw
	if f.wIsBase {
		w, wRaw = p.bs, bRaw
	}
	codes := grow(sc.codes, (e1-e0)/2)
	sc.codes = codes
	if _, err := f.codes.ReadAt(codes, e0/2); err != nil {
		return err
	}
	e.bytesRead.Add(int64(len(codes)))
	seg := max(segMax/f.group, 1) * f.group
	for g := e0; g < e1; g += seg {
		n := min(e1-g, seg)
		vals := grow(sc.fF, n)
		sc.fF = vals
		o := g - e0
		if err := w.decode(wRaw[o*w.esize:(o+n)*w.esize], g, vals); err != nil {
			return err
		}
		amax, nf := numfmt.BlockAmax(vals)
		r.fp4.amax, r.fp4.nonFinite = max(r.fp4.amax, amax), r.fp4.nonFinite || nf
		for b := int64(0); b < n; b += f.group {
			v, c := vals[b:b+f.group], codes[(o+b)/2:(o+b+f.group)/2]
			sc := f.scales[(g+b)/f.group]
			if f.scheme == quant.NVFP4 {
				r.fp4.r[0].add(numfmt.NVFP4Requant(v, c, sc, f.global))
				continue
			}
			for i, rec := range numfmt.MXFP4Recipes {
				r.fp4.r[i].add(rec.MXFP4Requant(v, c, sc))
			}
		}
	}
	return nil
}

func (c *fp4Counts) add(cnt, zeroSign int64, scaleDiffers bool) {
	c.elems += cnt
	c.zeroSign += zeroSign
	if cnt > 0 || scaleDiffers {
		c.blocks++
	}
}

// finish sets the row's requant counts and recipe from the totals: the
// first recipe that reproduces every code and scale, else the one with
// the fewest mismatching codes (then blocks).
func (f *fp4Side) finish(row *Tensor, t *fp4Partial) {
	var names []string
	if f.scheme == quant.NVFP4 {
		amax := t.amax
		if t.nonFinite {
			amax = float32(math.NaN()) // torch's amax propagates it
		}
		g := numfmt.NVFP4GlobalScale(amax)
		names = []string{numfmt.NVFP4RecipeName}
		if !sameValue(g, f.global) {
			names[0] += "-stored-global"
		}
	} else {
		for _, r := range numfmt.MXFP4Recipes {
			names = append(names, r.String())
		}
	}
	best := 0
	for i := range names {
		c, b := t.r[i], t.r[best]
		if c.elems == 0 && c.blocks == 0 {
			best = i
			break
		}
		if c.elems < b.elems || c.elems == b.elems && c.blocks < b.blocks {
			best = i
		}
	}
	c := t.r[best]
	qe, qb := c.elems, c.blocks
	row.RequantMismatchElems, row.RequantMismatchBlocks = &qe, &qb
	row.ZeroSignCodes = c.zeroSign
	row.RequantRecipe = names[best]
	if qe == 0 && qb == 0 {
		row.Relation = RequantIdentical
	}
}

package diff

import (
	"encoding/binary"
	"math"
)

// partial holds the statistics of a run of elements, in float64. Partials
// of consecutive runs are merged in order, so the totals do not depend on
// how the work was scheduled.
type partial struct {
	changed   int64
	maxAbs    float64
	sumSqDiff float64   // Σ (f−b)²
	normB     float64   // Σ b²
	normF     float64   // Σ f²
	dot       float64   // Σ b·f
	nan       bool      // a NaN difference was seen
	nf        nonFinite // NaN/Inf values of each side (nonfinite.go)
	// requant mismatches
	qElems, qBlocks int64
	zeroSign        int64 // FP8 codes differing only in the sign of zero
}

// merge adds o (the following run) into p.
func (p *partial) merge(o *partial) {
	p.changed += o.changed
	if o.maxAbs > p.maxAbs {
		p.maxAbs = o.maxAbs
	}
	p.nan = p.nan || o.nan
	p.nf.add(o.nf)
	p.sumSqDiff += o.sumSqDiff
	p.normB += o.normB
	p.normF += o.normF
	p.dot += o.dot
	p.qElems += o.qElems
	p.qBlocks += o.qBlocks
	p.zeroSign += o.zeroSign
}

// lanes are the two-lane partial sums of accumulate: lane 0 runs over the
// even elements, lane 1 over the odd ones.
type lanes struct {
	ss, nb, nf, d [2]float64
	mx            float64
	nan           bool
}

// accumulate adds the statistics of the element pairs (b[i], f[i]). Two
// lanes of partial sums break the dependency chains; the explicit float64
// conversions keep the compiler from fusing multiply-adds, so that results
// are the same on every platform. The pairs of elements go through
// accumulatePairs (SSE2 on amd64, the same operations in the same order);
// an odd last element joins lane 0.
func (p *partial) accumulate(b, f []float32) {
	f = f[:len(b)]
	l := lanes{mx: p.maxAbs}
	n := len(b) &^ 1
	accumulatePairs(&l, b[:n], f[:n])
	if n < len(b) {
		x0, y0 := float64(b[n]), float64(f[n])
		e0 := y0 - x0
		if a0 := math.Abs(e0); a0 > l.mx {
			l.mx = a0
		}
		if e0 != e0 {
			l.nan = true
		}
		l.ss[0] += float64(e0 * e0)
		l.nb[0] += float64(x0 * x0)
		l.nf[0] += float64(y0 * y0)
		l.d[0] += float64(x0 * y0)
	}
	if l.nan || l.mx > math.MaxFloat64 { // rare: which side is not finite?
		p.nf.count(b, f)
	}
	p.maxAbs = l.mx
	p.nan = p.nan || l.nan
	p.sumSqDiff += l.ss[0] + l.ss[1]
	p.normB += l.nb[0] + l.nb[1]
	p.normF += l.nf[0] + l.nf[1]
	p.dot += l.d[0] + l.d[1]
}

// accumulatePairsGo is accumulatePairs in Go (len(b) = len(f), even).
func accumulatePairsGo(l *lanes, b, f []float32) {
	f = f[:len(b)]
	var ss0, ss1, nb0, nb1, nf0, nf1, d0, d1 float64
	mx := l.mx
	nan := false
	for i := 0; i+1 < len(b); i += 2 {
		x0, y0 := float64(b[i]), float64(f[i])
		x1, y1 := float64(b[i+1]), float64(f[i+1])
		e0, e1 := y0-x0, y1-x1
		a0, a1 := math.Abs(e0), math.Abs(e1)
		if a0 > mx {
			mx = a0
		}
		if a1 > mx {
			mx = a1
		}
		if e0 != e0 || e1 != e1 {
			nan = true
		}
		ss0 += float64(e0 * e0)
		ss1 += float64(e1 * e1)
		nb0 += float64(x0 * x0)
		nb1 += float64(x1 * x1)
		nf0 += float64(y0 * y0)
		nf1 += float64(y1 * y1)
		d0 += float64(x0 * y0)
		d1 += float64(x1 * y1)
	}
	l.ss[0] += ss0
	l.ss[1] += ss1
	l.nb[0] += nb0
	l.nb[1] += nb1
	l.nf[0] += nf0
	l.nf[1] += nf1
	l.d[0] += d0
	l.d[1] += d1
	l.mx = mx
	l.nan = l.nan || nan
}

// countValueDiff counts elements whose float32 bit patterns differ.
func countValueDiff(b, f []float32) int64 {
	f = f[:len(b)]
	var n int64
	for i := range b {
		if math.Float32bits(b[i]) != math.Float32bits(f[i]) {
			n++
		}
	}
	return n
}

// countChanged counts elements whose raw bytes or decoded values differ
// (the count for two sides whose block scales differ).
func countChanged(b, f []float32, rb, rf []byte, esize int64) int64 {
	f = f[:len(b)]
	var n int64
	if esize == 1 {
		rb, rf = rb[:len(b)], rf[:len(b)]
		for i := range b {
			x := uint32(rb[i]^rf[i]) | (math.Float32bits(b[i]) ^ math.Float32bits(f[i]))
			n += int64((x | -x) >> 31)
		}
		return n
	}
	for i := range b {
		o := int64(i) * esize
		if math.Float32bits(b[i]) != math.Float32bits(f[i]) || string(rb[o:o+esize]) != string(rf[o:o+esize]) {
			n++
		}
	}
	return n
}

// countRawDiff counts the elements of esize bytes (1, 2, 4 or 8) that
// differ between a and b, eight bytes at a time without a branch: in the
// XOR of two words, a lane is nonzero iff adding 0x7f..f to its low bits
// carries into its top bit or its top bit is set. Each lane's verdict (0
// or 1) is added into the same lane of an accumulator, which is summed
// before a lane can overflow.
func countRawDiff(a, b []byte, esize int) int64 {
	b = b[:len(a)]
	var low, top uint64
	shift := uint(8*esize - 1)
	switch esize {
	case 1:
		low, top = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	case 2:
		low, top = 0x7fff7fff7fff7fff, 0x8000800080008000
	case 4:
		low, top = 0x7fffffff7fffffff, 0x8000000080000000
	default:
		low, top, shift = 0x7fffffffffffffff, 0x8000000000000000, 63
	}
	var n int64
	i := len(a) &^ 7
	x, y := a[:i], b[:i]
	for len(x) >= 8 {
		// At most 255 words per round: no lane overflows, even bytes.
		m := min(len(x), 255*8)
		acc := laneDiffs(x[:m], y[:m], low, top, shift)
		for acc != 0 { // add up the lanes
			n += int64(acc & (uint64(1)<<(shift+1) - 1))
			acc >>= shift + 1
		}
		x, y = x[m:], y[m:]
	}
	for ; i+esize <= len(a); i += esize {
		if string(a[i:i+esize]) != string(b[i:i+esize]) {
			n++
		}
	}
	return n
}

// laneDiffs adds up, lane by lane, the differing lanes of the words of x
// and y (len(x) = len(y), a multiple of 8); see countRawDiff. Not inlined:
// alone, its loop keeps every variable in a register.
//
//go:noinline
func laneDiffs(x, y []byte, low, top uint64, shift uint) uint64 {
	var acc uint64
	y = y[:len(x)]
	for j := 0; j+8 <= len(x); j += 8 {
		d := binary.LittleEndian.Uint64(x[j:j+8]) ^ binary.LittleEndian.Uint64(y[j:j+8])
		acc += (((d & low) + low | d) & top) >> (shift & 63)
	}
	return acc
}

// finish writes the statistics of p into the row.
func (p *partial) finish(t *Tensor) {
	ch := p.changed
	t.ChangedElems = &ch
	mx := Float(p.maxAbs)
	if p.nan {
		mx = Float(math.NaN())
	}
	t.MaxAbsDiff = &mx
	var rel float64
	switch {
	case p.sumSqDiff == 0 && !p.nan:
		rel = 0
	default:
		rel = math.Sqrt(p.sumSqDiff) / math.Sqrt(p.normB) // +Inf when the base is all zeros
	}
	r := Float(rel)
	t.RelL2 = &r
	var cos float64
	nb, nf := math.Sqrt(p.normB), math.Sqrt(p.normF)
	switch {
	case nb == 0 && nf == 0:
		cos = 1
	case nb == 0 || nf == 0:
		cos = 0
	default:
		cos = p.dot / (nb * nf)
		if cos > 1 {
			cos = 1
		} else if cos < -1 {
			cos = -1
		}
	}
	c := Float(cos)
	t.Cosine = &c
	p.nf.note(t)
}

// identicalStats sets the statistics of an identical tensor.
func identicalStats(t *Tensor) {
	var zero int64
	mx, rel, cos := Float(0), Float(0), Float(1)
	t.ChangedElems, t.MaxAbsDiff, t.RelL2, t.Cosine = &zero, &mx, &rel, &cos
}

package diff

import (
	"encoding/binary"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
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
	// qDead marks the other recipes of a block-FP8 side (bit i:
	// side.recipes[i+1]) that failed a block of the run (requant.go).
	qDead    uint16
	zeroSign int64 // FP8 codes differing only in the sign of zero
	fp4      fp4Partial
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
	p.qDead |= o.qDead
	p.zeroSign += o.zeroSign
	p.fp4.merge(&o.fp4)
}

// lanes are the eight-lane partial sums of one call of accumulate:
// element i of the call goes to lane i%8, each lane adds its elements in
// order with fused multiply-adds (float64), and the lanes are combined at
// the end in one fixed order (sum8). Eight lanes break the dependency
// chains of the sums; the order is the same for the Go loop and the
// kernels, so that they give the same bits.
type lanes struct {
	ss, nb, nf, d [8]float64 // Σ(f−b)², Σb², Σf², Σb·f
	mx            float64    // max |f−b|, NaN differences ignored
}

// sum8 combines eight lanes in the order ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)).
func sum8(l *[8]float64) float64 {
	return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

// accumulate adds the statistics of the element pairs (b[i], f[i]), eight
// lanes at a time (see lanes; accumulateF32 runs the AVX2/FMA kernel where
// the CPU has one).
func (p *partial) accumulate(b, f []float32) {
	f = f[:len(b)]
	l := lanes{mx: p.maxAbs}
	accumulateF32(&l, b, f)
	if p.add(&l) { // rare: which side is not finite?
		p.nf.count(b, f)
	}
}

// accumulateBF16 is accumulate for two runs of raw little-endian BF16
// values (len(f) >= len(b), even): the same bits as decoding both to
// float32 and calling accumulate, without decoding. It reports whether a
// difference was NaN or infinite: the caller must then decode the values
// and count them into p.nf (accumulate does it itself).
func (p *partial) accumulateBF16(b, f []byte) (nonFinite bool) {
	f = f[:len(b)]
	l := lanes{mx: p.maxAbs}
	accumulateRawBF16(&l, b, f)
	return p.add(&l)
}

// add combines the lanes of one call of accumulate and adds them into p.
// It reports whether a difference was NaN or infinite, that is whether a
// value of a side is NaN or infinite (a NaN or infinite value makes its
// difference NaN or infinite), or whether p.maxAbs already was.
//
// The lanes say whether a difference was NaN: each ss lane starts at 0 and
// adds e² ∈ [0, +Inf] or NaN, so it is NaN iff one of its e was NaN (the
// sum of values in [0, +Inf] is never NaN), and so is their sum.
func (p *partial) add(l *lanes) bool {
	ss := sum8(&l.ss)
	nan := ss != ss
	p.maxAbs = l.mx
	p.nan = p.nan || nan
	p.sumSqDiff += ss
	p.normB += sum8(&l.nb)
	p.normF += sum8(&l.nf)
	p.dot += sum8(&l.d)
	return nan || l.mx > math.MaxFloat64
}

// accumulateGo adds the pairs (b[i], f[i]) into the lanes, element i into
// lane i%8 (len(f) >= len(b)). x·x, y·y and x·y of float32 values are
// exact in float64 (24-bit significands, no overflow or underflow), so
// adding them is the fused multiply-add; (f−b)² is not and takes math.FMA.
func accumulateGo(l *lanes, b, f []float32) {
	f = f[:len(b)]
	mx := l.mx
	for i := range b {
		k := i & 7
		x, y := float64(b[i]), float64(f[i])
		e := y - x
		if a := math.Abs(e); a > mx {
			mx = a
		}
		l.ss[k] = math.FMA(e, e, l.ss[k])
		l.nb[k] += float64(x * x)
		l.nf[k] += float64(y * y)
		l.d[k] += float64(x * y)
	}
	l.mx = mx
}

// bf16Block is the number of BF16 values accumulateBF16Go decodes at a
// time: a multiple of 8, so that each element keeps its lane.
const bf16Block = 256

// accumulateBF16Go is accumulateGo over the values of two runs of raw
// little-endian BF16 values (len(f) >= len(b), even), decoded a block at
// a time.
func accumulateBF16Go(l *lanes, b, f []byte) {
	var x, y [bf16Block]float32
	f = f[:len(b)]
	for len(b) >= 2 {
		n := min(len(b)/2, bf16Block)
		// BF16 decodes whenever the bytes suffice, as they do here.
		_ = numfmt.DecodeFloat32(numfmt.BF16, b, x[:n])
		_ = numfmt.DecodeFloat32(numfmt.BF16, f, y[:n])
		accumulateGo(l, x[:n], y[:n])
		b, f = b[2*n:], f[2*n:]
	}
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

// countRawDiffGo counts the elements of esize bytes (1, 2, 4 or 8) that
// differ between a and b (countRawDiff, with a kernel on amd64), eight
// bytes at a time without a branch: in the
// XOR of two words, a lane is nonzero iff adding 0x7f..f to its low bits
// carries into its top bit or its top bit is set. Each lane's verdict (0
// or 1) is added into the same lane of an accumulator, which is summed
// before a lane can overflow.
func countRawDiffGo(a, b []byte, esize int) int64 {
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
// and y (len(x) = len(y), a multiple of 8); see countRawDiffGo. Not inlined:
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

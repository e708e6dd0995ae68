package diff

import (
	"math"
	"math/bits"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Two block-scaled F8_E4M3 weights are compared block by block with exact
// arithmetic. Every F8_E4M3 value v is a multiple of 2^-9 below 2^9, so
// over a run of at most e4m3RunMax elements the sums Σv_b², Σv_f² and
// Σv_b·v_f of the unscaled values are multiples of 2^-18 below 2^51:
// float64 holds them exactly, whatever the order of the additions. A
// kernel may therefore add them in any order and any number of lanes and
// still agree bit for bit with the Go loop (e4m3RunGo), and the totals do
// not depend on how the work was split.
//
// The statistics of the dequantised values follow per block from its two
// scales s_b, s_f (when e4m3Exact accepts them: then every dequantised
// float32 value v·s is exact, so these are the statistics of the same
// float32 values as the generic path):
//
//	Σb² = s_b²·Σv_b²   Σf² = s_f²·Σv_f²   Σb·f = s_b·s_f·Σv_b·v_f
//	Σ(f−b)² = s_f²·Σv_f² + s_b²·Σv_b² − 2·s_b·s_f·Σv_b·v_f
//
// each rounded once (the last one computed exactly, see e4m3SumSq), then
// added block after block in order.

// e4m3RunMax bounds the elements of one run so that the exact sums, and
// Σv_f² + Σv_b² − 2Σv_b·v_f, stay below 2^53 units of 2^-18.
const e4m3RunMax = 1 << 15

// e4m3F32 is the value of every F8_E4M3 code (numfmt.DecodeE4M3), read
// only: the decode of scaled F8_E4M3 sides multiplies it by their scales.
// e4m3Values is the same table as float64 for the exact path (NaN codes:
// NaN; e4m3Run rejects them before use).
var e4m3F32, e4m3Values = func() (*[256]float32, *[256]float64) {
	var t32 [256]float32
	var t64 [256]float64
	for c := range t32 {
		t32[c] = numfmt.DecodeE4M3(byte(c))
		t64[c] = float64(t32[c])
	}
	return &t32, &t64
}()

// e4m3Sums are the exact statistics of a run of code pairs (b, f) in
// unscaled F8_E4M3 values.
type e4m3Sums struct {
	bb, ff, bf float64 // Σv_b², Σv_f², Σv_b·v_f
	// mx is max |v_f·sf − v_b·sb| for the sb, sf of the run (exact: the
	// products and their difference fit in float64 for scales that
	// e4m3Exact accepts, and for sb = sf = 1).
	mx float64
	// changed counts the pairs whose values differ: codes of different
	// values (±0 are one value) when the run's scales are the same, every
	// pair but two zeros when they differ. zeroSign counts code pairs
	// that differ only in the sign of zero.
	changed, zeroSign int64
}

// e4m3RunGo adds the statistics of the code pairs (b[i], f[i]) into o, for
// scales sb, sf (same: the two scales are equal; callers then pass
// sb = sf = 1 and scale max themselves). It reports false, with o in an
// unspecified state, if a code is a NaN. len(f) >= len(b).
func e4m3RunGo(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool {
	f = f[:len(b)]
	t := e4m3Values
	bb, ff, bf, mx := o.bb, o.ff, o.bf, o.mx
	var changed, zeroSign int64
	for i, x := range b {
		y := f[i]
		if x&0x7f == 0x7f || y&0x7f == 0x7f {
			return false
		}
		vb, vf := t[x], t[y]
		bb += vb * vb
		ff += vf * vf
		bf += vb * vf
		if d := math.Abs(vf*sf - vb*sb); d > mx {
			mx = d
		}
		zero := (x|y)&0x7f == 0
		if x != y && zero {
			zeroSign++
		}
		if !zero && (x != y || !same) {
			changed++
		}
	}
	o.bb, o.ff, o.bf, o.mx = bb, ff, bf, mx
	o.changed += changed
	o.zeroSign += zeroSign
	return true
}

// e4m3BlocksGo computes the statistics of len(k) whole scale blocks of bn
// code pairs each (b, f hold them one after the other; bn at most
// e4m3RunMax): out[j] becomes those of block j under k[j], exactly what
// e4m3Run adds into a zero e4m3Sums. It stops at the first block that is
// e4m3Generic or holds a NaN code and returns the number of blocks done
// before it (out from there on unspecified). e4m3Blocks is the same with
// a kernel on amd64.
func e4m3BlocksGo(b, f []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	out = out[:len(k)]
	for j := range k {
		kj := &k[j]
		out[j] = e4m3Sums{}
		if kj.class == e4m3Generic ||
			!e4m3RunGo(b[j*bn:(j+1)*bn], f[j*bn:(j+1)*bn], kj.class == e4m3Same, kj.kb, kj.kf, &out[j]) {
			return j
		}
	}
	return len(k)
}

// e4m3Exact reports whether the exact path applies to a block with scales
// sb and sf: both finite, zero or of magnitude in [2^-100, 2^100], with at
// most 20 significant bits (so that v·s is exact in float32), and, when
// they differ and neither is zero, binary exponents at most 10 apart (so
// that v_f·s_f − v_b·s_b is exact in float64 and e4m3SumSq fits in 128
// bits).
func e4m3Exact(sb, sf float32) bool {
	eb, okb := e4m3ScaleExp(sb)
	ef, okf := e4m3ScaleExp(sf)
	if !okb || !okf {
		return false
	}
	if sb == sf || sb == 0 || sf == 0 {
		return true
	}
	return eb-ef <= 10 && ef-eb <= 10
}

// e4m3ScaleExp returns the biased exponent of a scale and whether
// e4m3Exact accepts it on its own.
func e4m3ScaleExp(s float32) (int, bool) {
	if s == 0 {
		return 0, true
	}
	u := math.Float32bits(s)
	e := int(u>>23) & 0xff
	return e, e >= 127-100 && e <= 127+100 && u&15 == 0
}

// scaleParts splits a scale that e4m3Exact accepts into m·2^e, m an odd
// integer (0 for zero) with at most 20 bits.
func scaleParts(s float32) (m int64, e int) {
	if s == 0 {
		return 0, 0
	}
	u := math.Float32bits(s)
	m = int64(u&0x7fffff | 1<<23)
	e = int(u>>23&0xff) - 127 - 23
	tz := bits.TrailingZeros64(uint64(m))
	m >>= tz
	e += tz
	if u>>31 != 0 {
		m = -m
	}
	return m, e
}

// e4m3Kernel names an implementation of e4m3Run and e4m3Blocks: the Go
// loop (e4m3RunGo, e4m3BlocksGo) or a kernel of the same results bit for
// bit (amd64: e4m3run_amd64.go); e4m3Kernels lists those this CPU runs.
type e4m3Kernel uint8

const (
	e4m3KernelGo e4m3Kernel = iota
	e4m3KernelAVX2
	e4m3KernelAVX512
)

// e4m3Block is what the exact path needs of one scale block: whether it
// applies and how, and the scale factors, computed once per tensor.
type e4m3Block struct {
	class      e4m3Class
	kb, kf     float64 // the scales e4m3Run applies (1, 1 for one scale)
	bb, ff, bf float64 // s_b², s_f², s_b·s_f (exact)
	mxs        float64 // the factor of e4m3Sums.mx: |s| for one scale, else 1
	// e4m3SumSq: s_b = mb·2^g, s_f = mf·2^g, |mb|, |mf| < 2^31; mbb =
	// mb², mff = mf², cross2 = 2·|mb·mf| (< 2^63), crossNeg says mb·mf <
	// 0; unit is 2^(2g−18), a normal float64 for the scales e4m3Exact
	// accepts.
	mbb, mff, cross2 uint64
	crossNeg         bool
	unit             float64
}

type e4m3Class uint8

const (
	e4m3Generic e4m3Class = iota // not exact: decode the values
	e4m3Same                     // one scale on both sides
	e4m3Diff                     // two scales
)

// newE4M3Block describes a block with scales sb, sf.
func newE4M3Block(sb, sf float32) e4m3Block {
	if !e4m3Exact(sb, sf) {
		return e4m3Block{}
	}
	b, f := float64(sb), float64(sf)
	k := e4m3Block{class: e4m3Diff, kb: b, kf: f, bb: b * b, ff: f * f, bf: b * f, mxs: 1}
	if sb == sf {
		k.class, k.kb, k.kf, k.mxs = e4m3Same, 1, 1, math.Abs(b)
		return k
	}
	mb, eb := scaleParts(sb)
	mf, ef := scaleParts(sf)
	g := min(eb, ef)
	switch {
	case mb == 0:
		g = ef
	case mf == 0:
		g = eb
	}
	if mb != 0 {
		mb <<= eb - g
	}
	if mf != 0 {
		mf <<= ef - g
	}
	k.mbb, k.mff, k.cross2, k.crossNeg = uint64(mb*mb), uint64(mf*mf), uint64(2*abs64(mb*mf)), mb*mf < 0
	k.unit = math.Ldexp(1, 2*g-18)
	return k
}

// e4m3SumSq returns Σ(s_f·v_f − s_b·v_b)² of a run with sums o in a block
// of two different scales, correctly rounded: the sum is formed exactly as
// a 128-bit integer times a power of two.
func (k *e4m3Block) e4m3SumSq(o *e4m3Sums) float64 {
	// In units of 2^-18: A = Σv_f², B = Σv_b², C = Σv_b·v_f, exact.
	A, B, C := int64(o.ff*0x1p18), int64(o.bb*0x1p18), int64(o.bf*0x1p18)
	t := mul128(k.mff, uint64(A)).add(mul128(k.mbb, uint64(B)))
	p3 := mul128(k.cross2, uint64(abs64(C))) // 2·|s_b·s_f·C|
	if k.crossNeg != (C < 0) {
		t = t.add(p3)
	} else {
		t = t.sub(p3) // ≥ 0: a sum of squares
	}
	return t.float64() * k.unit // exact: a power of two, no underflow
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func mul128(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

func (x u128) add(y u128) u128 {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, c)
	return u128{hi, lo}
}

func (x u128) sub(y u128) u128 {
	lo, b := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, b)
	return u128{hi, lo}
}

// float64 rounds x to the nearest float64 (ties to even).
func (x u128) float64() float64 {
	if x.hi == 0 {
		return float64(x.lo)
	}
	n := 64 - bits.LeadingZeros64(x.hi) // bits of hi
	m := x.hi<<(64-n) | x.lo>>n
	if x.lo&(1<<n-1) != 0 {
		m |= 1 // sticky: far below the 53 bits kept
	}
	return float64(m) * math.Float64frombits(uint64(1023+n)<<52) // ·2^n, exact
}

// addE4M3 adds the statistics of runs with exact sums o[j] in blocks k[j]
// (none e4m3Generic) into p, one after the other. The sums stay in
// registers from block to block.
func (p *partial) addE4M3(o []e4m3Sums, k []e4m3Block) {
	normB, normF, dot, ss, mx := p.normB, p.normF, p.dot, p.sumSqDiff, p.maxAbs
	var changed, zeroSign int64
	k = k[:len(o)]
	for j := range o {
		o, k := &o[j], &k[j]
		// Each product of an exact factor with an exact sum is rounded
		// once (the conversions forbid fusing).
		normB += float64(k.bb * o.bb)
		normF += float64(k.ff * o.ff)
		dot += float64(k.bf * o.bf)
		if k.class == e4m3Same {
			// Σv_f² + Σv_b² − 2Σv_b·v_f is exact (e4m3RunMax).
			ss += float64(k.bb * (o.ff + o.bb - 2*o.bf))
		} else {
			ss += k.e4m3SumSq(o)
		}
		if m := o.mx * k.mxs; m > mx {
			mx = m
		}
		changed += o.changed
		zeroSign += o.zeroSign
	}
	p.normB, p.normF, p.dot, p.sumSqDiff, p.maxAbs = normB, normF, dot, ss, mx
	p.changed += changed
	p.zeroSign += zeroSign
}

// add adds the sums t of more pairs of the run into o.
func (o *e4m3Sums) add(t *e4m3Sums) {
	o.bb += t.bb
	o.ff += t.ff
	o.bf += t.bf
	if t.mx > o.mx {
		o.mx = t.mx
	}
	o.changed += t.changed
	o.zeroSign += t.zeroSign
}

// e4m3Lanes are the exact sums of code pairs (those of e4m3Sums) in four
// lanes, as e4m3BlocksAVX2 keeps them: it adds a block's four lanes of
// each sum into these without reducing them, and the Go side adds an
// e4m3Sums into lane 0 (add). All are exact (e4m3RunMax), so the lanes
// added up (sum) are the same bits in any order; mx is the maximum of the
// lanes'.
type e4m3Lanes struct {
	bb, ff, bf, mx    [4]float64
	changed, zeroSign int64
}

// add adds the sums o into lane 0 of l.
func (l *e4m3Lanes) add(o *e4m3Sums) {
	l.bb[0] += o.bb
	l.ff[0] += o.ff
	l.bf[0] += o.bf
	l.mx[0] = max(l.mx[0], o.mx)
	l.changed += o.changed
	l.zeroSign += o.zeroSign
}

// sum is the sums of the lanes.
func (l *e4m3Lanes) sum() e4m3Sums {
	return e4m3Sums{
		bb: l.bb[0] + l.bb[1] + l.bb[2] + l.bb[3],
		ff: l.ff[0] + l.ff[1] + l.ff[2] + l.ff[3],
		bf: l.bf[0] + l.bf[1] + l.bf[2] + l.bf[3],
		mx: max(l.mx[0], l.mx[1], l.mx[2], l.mx[3]), changed: l.changed, zeroSign: l.zeroSign,
	}
}

// e4m3AddInto adds the sums o of consecutive blocks into the lanes out.
func e4m3AddInto(out []e4m3Lanes, o []e4m3Sums) {
	out = out[:len(o)]
	for i := range o {
		out[i].add(&o[i])
	}
}

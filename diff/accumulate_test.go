package diff

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/require"
)

// accLengths are the run lengths the accumulate tests try: every length
// up to 100 (every tail after the kernel's multiples of 8) and a few long
// ones, a segment among them.
func accLengths() []int {
	var ns []int
	for n := 0; n <= 100; n++ {
		ns = append(ns, n)
	}
	return append(ns, 255, 256, 1000, 4097, segMax, segMax+7)
}

// accValues draws float32 values of every magnitude, with zeros,
// denormals, infinities and NaNs among them.
type accValues struct{ rng *rand.Rand }

var accSpecial = []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -1e-40, 1e-38,
	math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
	math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000), 1, -1, 0.1}

func (v accValues) value() float32 {
	switch v.rng.IntN(10) {
	case 0:
		return accSpecial[v.rng.IntN(len(accSpecial))]
	case 1:
		return math.Float32frombits(v.rng.Uint32())
	case 2: // every exponent, denormals included
		return float32(v.rng.NormFloat64() * math.Ldexp(1, v.rng.IntN(280)-150))
	}
	return float32(v.rng.NormFloat64() * math.Ldexp(1, v.rng.IntN(60)-30))
}

// Kinds of runs that accValues.pair draws. x·x, y·y and x·y are exact in
// float64, (f−b)² is exact for weights but not for the spread values, so
// that only they tell a fused multiply-add from a multiply and an add.
const (
	runWeights = iota // weights and their fine-tuned values: sums of terms of one magnitude
	runSpread         // values a few binades apart: (f−b)² inexact, terms of similar magnitudes
	runFinite         // finite values of every magnitude
	runAny            // NaN and Inf too
	runKinds
)

// pair draws a run of n pairs of the given kind: f equal to b in about a
// third of the elements.
func (v accValues) pair(n, kind int) (b, f []float32) {
	b, f = make([]float32, n), make([]float32, n)
	finite := kind != runAny
	for i := range b {
		if kind == runWeights {
			b[i] = float32(v.rng.NormFloat64() * 0.02)
			f[i] = b[i]
			if v.rng.IntN(3) > 0 {
				f[i] += float32(v.rng.NormFloat64() * 0.001)
			}
			continue
		}
		if kind == runSpread {
			b[i] = float32(v.rng.NormFloat64() * math.Ldexp(1, v.rng.IntN(8)))
			f[i] = float32(v.rng.NormFloat64() * math.Ldexp(1, v.rng.IntN(8)))
			continue
		}
		b[i] = v.value()
		f[i] = b[i]
		if v.rng.IntN(3) > 0 {
			f[i] = v.value()
		}
		for finite && !isFinite32(b[i]) {
			b[i] = v.value()
		}
		for finite && !isFinite32(f[i]) {
			f[i] = v.value()
		}
	}
	return b, f
}

func isFinite32(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }

// laneBits are the bits of every lane sum and of the maximum; a NaN is
// any NaN: which operand's payload a NaN sum carries is not specified
// (it differs between the FMA instruction and math.FMA's software
// fallback), and the output reports NaN sums as null anyway.
func laneBits(l *lanes) []uint64 {
	f64 := func(x float64) uint64 {
		if x != x {
			return 0x7ff8000000000000
		}
		return math.Float64bits(x)
	}
	var out []uint64
	for _, s := range [][8]float64{l.ss, l.nb, l.nf, l.d} {
		for _, x := range s {
			out = append(out, f64(x))
		}
	}
	return append(out, f64(l.mx))
}

// startLanes are lanes to start from: zero sums (as accumulate starts)
// with a maximum of 0, 1 or 1e30, or arbitrary sums, so that a kernel
// that loads or stores a lane wrongly is caught.
func startLanes(rng *rand.Rand, k int) lanes {
	l := lanes{mx: []float64{0, 1, 1e30}[k%3]}
	if k%2 == 1 {
		for _, s := range []*[8]float64{&l.ss, &l.nb, &l.nf, &l.d} {
			for i := range s {
				s[i] = rng.Float64() * 100
			}
		}
	}
	return l
}

// TestAccumulateKernels checks that accumulateF32 (the AVX2/FMA kernel on
// amd64 when the CPU has one) gives every lane sum and the maximum bit for
// bit like accumulateGo, on runs of every length up to 100 and long ones,
// from several start values.
func TestAccumulateKernels(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 10))
	v := accValues{rng}
	k := 0
	for _, n := range accLengths() {
		for rep := range 2 * runKinds {
			b, f := v.pair(n, rep%runKinds)
			start := startLanes(rng, k)
			k++
			got, want := start, start
			accumulateF32(&got, b, f)
			accumulateGo(&want, b, f)
			require.Equal(t, laneBits(&want), laneBits(&got), "length %d, run %d", n, rep)
		}
	}
}

// bf16Values draws raw BF16 runs of n values: random bit patterns, the
// BF16 of values of every magnitude, and the special patterns (±0,
// denormals, the largest finite, ±Inf, quiet and signalling NaNs).
func bf16Values(rng *rand.Rand, n int, finite bool) []byte {
	special := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0xbf80,
		0x7f80, 0xff80, 0x7fc0, 0xffc0, 0x7f81, 0xffff}
	out := make([]byte, 2*n)
	for i := range n {
		var x uint16
		for {
			switch rng.IntN(4) {
			case 0:
				x = special[rng.IntN(len(special))]
			case 1:
				x = uint16(rng.Uint32())
			default:
				w := float32(rng.NormFloat64() * math.Ldexp(1, rng.IntN(60)-30))
				x = uint16(math.Float32bits(numfmt.RoundTo(numfmt.BF16, w)) >> 16)
			}
			if !finite || x&0x7f80 != 0x7f80 {
				break
			}
		}
		binary.LittleEndian.PutUint16(out[2*i:], x)
	}
	return out
}

// bf16Pair is two raw BF16 runs of n values, f equal to b in about a
// third of the elements.
func bf16Pair(rng *rand.Rand, n int, finite bool) (b, f []byte) {
	b, f = bf16Values(rng, n, finite), bf16Values(rng, n, finite)
	for i := 0; i < n; i++ {
		if rng.IntN(3) == 0 {
			copy(f[2*i:2*i+2], b[2*i:2*i+2])
		}
	}
	return b, f
}

func decodeBF16(t *testing.T, raw []byte) []float32 {
	out := make([]float32, len(raw)/2)
	require.NoError(t, numfmt.DecodeFloat32(numfmt.BF16, raw, out))
	return out
}

// TestAccumulateBF16 checks that accumulateRawBF16 (the kernel that reads
// raw BF16 on amd64 when the CPU has one) gives the lanes of decoding to
// float32 and accumulateGo bit for bit, NaN and Inf patterns included, and
// that partial.accumulateBF16, with the caller's count of the non-finite
// values, fills the partial exactly like decoding and accumulate.
func TestAccumulateBF16(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	k := 0
	for _, n := range accLengths() {
		for rep := range 4 {
			b, f := bf16Pair(rng, n, rep%2 == 0)
			bF, fF := decodeBF16(t, b), decodeBF16(t, f)
			start := startLanes(rng, k)
			k++
			got, goGot, want := start, start, start
			accumulateRawBF16(&got, b, f)
			accumulateBF16Go(&goGot, b, f)
			accumulateGo(&want, bF, fF)
			require.Equal(t, laneBits(&want), laneBits(&got), "length %d, run %d", n, rep)
			require.Equal(t, laneBits(&want), laneBits(&goGot), "Go, length %d, run %d", n, rep)
			for kern := range bf16Best + 1 { // every kernel this CPU runs
				kGot := start
				accumulateRawBF16With(kern, &kGot, b, f)
				require.Equal(t, laneBits(&want), laneBits(&kGot), "kernel %d, length %d, run %d", kern, n, rep)
			}

			pStart := partial{maxAbs: start.mx, normB: 3}
			pGot, pWant := pStart, pStart
			if pGot.accumulateBF16(b, f) {
				pGot.nf.count(bF, fF)
			}
			pWant.accumulate(bF, fF)
			require.Equal(t, partialBits(&pWant), partialBits(&pGot), "partial, length %d, run %d", n, rep)
		}
	}
}

// partialBits shows the statistics of p bit for bit (a NaN is any NaN).
func partialBits(p *partial) string {
	f64 := func(x float64) uint64 {
		if x != x {
			return 0x7ff8000000000000
		}
		return math.Float64bits(x)
	}
	return fmt.Sprintf("changed %d max %#x ss %#x nb %#x nf %#x d %#x nan %v nonfinite %+v",
		p.changed, f64(p.maxAbs), f64(p.sumSqDiff), f64(p.normB), f64(p.normF), f64(p.dot), p.nan, p.nf)
}

// TestAccumulateDefinition checks partial.accumulate against the
// definition written out element by element: lane i%8 of each sum adds
// its elements in order with math.FMA, the lanes are combined as
// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)); the maximum ignores NaN
// differences; the NaN flag is set iff a difference is NaN; NaN and Inf
// values are counted on each side whenever there are any.
func TestAccumulateDefinition(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	v := accValues{rng}
	for _, n := range accLengths() {
		for rep := range 2 * runKinds {
			b, f := v.pair(n, rep%runKinds)
			if rep == runAny && n > 0 { // a NaN difference from two equal infinities
				b[n/2], f[n/2] = float32(math.Inf(1)), float32(math.Inf(1))
			}
			var want partial
			var ss, nb, nf, d [8]float64
			for i := range b {
				x, y := float64(b[i]), float64(f[i])
				e := y - x
				ss[i%8] = math.FMA(e, e, ss[i%8])
				nb[i%8] = math.FMA(x, x, nb[i%8])
				nf[i%8] = math.FMA(y, y, nf[i%8])
				d[i%8] = math.FMA(x, y, d[i%8])
				if e != e {
					want.nan = true
				} else {
					want.maxAbs = math.Max(want.maxAbs, math.Abs(e))
				}
				for _, s := range []struct {
					v        float32
					nan, inf *int64
				}{{b[i], &want.nf.BaseNaN, &want.nf.BaseInf}, {f[i], &want.nf.FTNaN, &want.nf.FTInf}} {
					if s.v != s.v {
						*s.nan++
					} else if math.IsInf(float64(s.v), 0) {
						*s.inf++
					}
				}
			}
			tree := func(l [8]float64) float64 {
				return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
			}
			want.sumSqDiff, want.normB, want.normF, want.dot = tree(ss), tree(nb), tree(nf), tree(d)
			var got partial
			got.accumulate(b, f)
			require.Equal(t, partialBits(&want), partialBits(&got), "length %d, run %d", n, rep)
		}
	}
}

// TestBF16SegmentsMatchDecoded checks that segments gives a chunk of two
// BF16 sides the same statistics, bit for bit, from the raw bytes as
// through the decoded values (changed count, sums, maximum, NaN flag,
// non-finite counts), with and without NaN and Inf values, and that
// normChunk gives an unchanged chunk the bits segments gives two equal
// sides.
func TestBF16SegmentsMatchDecoded(t *testing.T) {
	t.Parallel()
	const n = 2*segMax + 1001 // three segments, the last ragged
	rng := rand.New(rand.NewPCG(15, 16))
	for _, finite := range []bool{true, false} {
		b, f := bf16Pair(rng, n, finite)
		sd := func() *side { return &side{dt: numfmt.BF16, esize: 2, rows: 1, cols: n} }
		p := &plan{kind: kindSame, bs: sd(), fs: sd(), scalesSame: true, bf16: true,
			geom: geom{numel: n, chunk: n, esizeB: 2, esizeF: 2, countable: true}}
		dec := *p
		dec.bf16 = false
		e := &engine{}
		for _, pair := range [][2][]byte{{b, f}, {b, b}} {
			var got, want partial
			require.NoError(t, e.segments(p, pair[0], pair[1], 0, n, &scratch{}, &got, true))
			require.NoError(t, e.segments(&dec, pair[0], pair[1], 0, n, &scratch{}, &want, true))
			require.Equal(t, partialBits(&want), partialBits(&got), "finite %v", finite)
		}
		var fromBase, equal partial
		p.rb = bytes.NewReader(b)
		require.NoError(t, e.normChunk(p, 0, &scratch{}, &fromBase))
		require.NoError(t, e.segments(&dec, b, b, 0, n, &scratch{}, &equal, true))
		require.Equal(t, partialBits(&equal), partialBits(&fromBase), "normChunk, finite %v", finite)
		if !finite {
			require.NotZero(t, fromBase.nf, "the test has non-finite values")
		}
	}
}

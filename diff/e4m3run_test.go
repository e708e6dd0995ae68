package diff

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// e4m3Scales is a pair of block scales for TestE4M3Run: those of the b
// and the f side, and whether they count as the same (then the block is
// e4m3Same, run with scales 1 whatever sb, sf say, else e4m3Diff, which
// also takes equal scales).
type e4m3Scales struct {
	same   bool
	sb, sf float32
}

// block is the descriptor e4m3Run takes for the scales.
func (sc e4m3Scales) block() e4m3Block {
	if sc.same {
		return e4m3Block{class: e4m3Same, kb: 1, kf: 1}
	}
	return e4m3Block{class: e4m3Diff, kb: float64(sc.sb), kf: float64(sc.sf)}
}

// e4m3AllScales are the pairs of e4m3Exact-accepted scales from a list
// (powers of two, bfloat16-like and 20-bit values, both signs, zero,
// exponents up to 10 apart, the extremes 2^±100), e4m3FewScales a
// representative dozen of them for the bulk of TestE4M3Run (it must stay
// quick under -race).
var e4m3AllScales, e4m3FewScales = func() ([]e4m3Scales, []e4m3Scales) {
	f21a := math.Float32frombits(0x3f7ffff0) // 20 significant bits: the most e4m3Exact allows
	f21b := -math.Float32frombits(0x3c0ffff0)
	list := []float32{
		1, 0.5, 2, 0x1p-5, 0x1p5, 0.0087890625, -0.0087890625, 0.013671875, 0,
		0x1p-100, 0x1.4p-95, 0x1p100, 3.0517578e-05, 1.5 * 0x1p-10, f21a, f21b,
	}
	all := []e4m3Scales{{true, 1, 1}}
	for _, sb := range list {
		for _, sf := range list {
			if e4m3Exact(sb, sf) {
				all = append(all, e4m3Scales{false, sb, sf})
			}
		}
	}
	few := []e4m3Scales{
		{true, 1, 1}, {false, 1, 1}, {false, 0.0087890625, 0.013671875},
		{false, -0.0087890625, 0.0087890625}, {false, 0, 0x1p-5}, {false, 0x1p-5, 0}, {false, 0x1p5, 0x1p-5},
		{false, 0x1p-100, 0x1.4p-95}, {false, 0x1p100, 0x1p100}, {false, f21a, f21b}, {false, 1.5 * 0x1p-10, -0.013671875},
	}
	for _, sc := range few {
		if !e4m3Exact(sc.sb, sc.sf) {
			panic(fmt.Sprintf("e4m3Exact rejects %v", sc))
		}
	}
	return all, few
}()

// e4m3Values without NaN.
var e4m3NumCodes = func() []byte {
	var c []byte
	for x := range 256 {
		if x&0x7f != 0x7f {
			c = append(c, byte(x))
		}
	}
	return c
}()

// checkE4M3Run compares e4m3Run with e4m3RunGo bit for bit on one run
// under every scale pair of scales, starting from o0.
func checkE4M3Run(t *testing.T, scales []e4m3Scales, b, f []byte, o0 e4m3Sums, msg string) {
	t.Helper()
	for _, sc := range scales {
		k := sc.block()
		sb, sf := k.kb, k.kf
		want := o0
		okWant := e4m3RunGo(b, f, sc.same, sb, sf, &want)
		for _, kern := range e4m3Kernels() {
			got := o0
			okGot := e4m3RunWith(kern, b, f, &k, &got)
			if okGot != okWant {
				require.Failf(t, "NaN verdict differs", "%s, kernel %d, n %d, same %v sb %g sf %g: got %v, want %v",
					msg, kern, len(b), sc.same, sb, sf, okGot, okWant)
			}
			if !okWant {
				continue
			}
			if e4m3SumsBits(got) != e4m3SumsBits(want) {
				require.Failf(t, "sums differ", "%s, kernel %d, n %d, same %v sb %g sf %g:\ngot  %+v\nwant %+v",
					msg, kern, len(b), sc.same, sb, sf, got, want)
			}
		}
	}
}

// TestE4M3Run checks e4m3RunWith with every kernel this CPU runs (on
// amd64 the AVX-512 and the AVX2 kernel, with the Go loop for the tail)
// against e4m3RunGo bit for bit under scales 1 and many
// pairs of different scales: every pair of codes at several positions
// in runs of several lengths, random runs of every length up to 200 and
// some long ones, NaN codes at the first, the last and inner positions,
// runs of zeros of both signs, the extremes.
func TestE4M3Run(t *testing.T) {
	t.Parallel()
	t.Run("all pairs", func(t *testing.T) {
		t.Parallel()
		nc := e4m3NumCodes
		n := len(nc) * len(nc)
		b, f := make([]byte, n), make([]byte, n)
		for shift := range 3 { // each pair in other lanes and iterations
			for i := range n {
				j := (i + shift*7) % n
				b[j], f[j] = nc[i/len(nc)], nc[i%len(nc)]
			}
			for _, run := range []int{32, 64, 96, 128, 1000, 32768} {
				for i := 0; i < n; i += run {
					e := min(i+run, n)
					checkE4M3Run(t, e4m3FewScales, b[i:e], f[i:e], e4m3Sums{}, fmt.Sprintf("all pairs, shift %d, run %d at %d", shift, run, i))
					checkE4M3Run(t, e4m3FewScales, f[i:e], b[i:e], e4m3Sums{}, fmt.Sprintf("all pairs swapped, shift %d, run %d at %d", shift, run, i))
				}
			}
		}
	})
	t.Run("random", func(t *testing.T) {
		t.Parallel()
		rng := rand.New(rand.NewPCG(7, 9))
		code := func() byte { return e4m3NumCodes[rng.IntN(len(e4m3NumCodes))] }
		near := func(c byte) byte { // a code of a close value, sometimes the same
			d := rng.IntN(5) - 2
			x := int(c&0x7f) + d
			if x < 0 || x > 0x7e {
				x = int(c & 0x7f)
			}
			return byte(x) | c&0x80
		}
		run := func(n int, kind int) ([]byte, []byte) {
			b, f := make([]byte, n), make([]byte, n)
			for i := range b {
				switch kind {
				case 0: // independent
					b[i], f[i] = code(), code()
				case 1: // fine-tuned: close values
					b[i] = code()
					f[i] = near(b[i])
				default: // mostly zeros and small values
					b[i], f[i] = byte(rng.IntN(3))|byte(rng.IntN(2))<<7, byte(rng.IntN(3))|byte(rng.IntN(2))<<7
				}
			}
			return b, f
		}
		prev := e4m3Sums{bb: 3.5, ff: 0x1p-18, bf: -2, mx: 0.25, changed: 4, zeroSign: 1}
		for n := range 201 {
			for kind := range 3 {
				b, f := run(n, kind)
				scales := e4m3FewScales
				if kind == 1 {
					scales = e4m3AllScales
				}
				checkE4M3Run(t, scales, b, f, e4m3Sums{}, fmt.Sprintf("random kind %d", kind))
				checkE4M3Run(t, e4m3FewScales, b, f, prev, fmt.Sprintf("random kind %d, into %+v", kind, prev))
			}
		}
		for _, n := range []int{4096, 32767, 32768} {
			for kind := range 3 {
				b, f := run(n, kind)
				checkE4M3Run(t, e4m3FewScales, b, f, e4m3Sums{}, fmt.Sprintf("long random kind %d", kind))
			}
		}
	})
	t.Run("special", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{1, 31, 32, 33, 63, 64, 65, 95, 96, 127, 128, 160, 192, 4096} {
			// NaN codes: alone at the first, the last and inner
			// positions of either side, among zeros and among values.
			for _, fill := range []byte{0x00, 0x38, 0xfe} {
				for _, nan := range []byte{0x7f, 0xff} {
					for _, at := range []int{0, n - 1, n / 2, n / 3, 31, 32, 63, 64} {
						if at >= n {
							continue
						}
						for side := range 2 {
							b, f := make([]byte, n), make([]byte, n)
							for i := range b {
								b[i], f[i] = fill, fill^byte(i&0x80)
							}
							if side == 0 {
								b[at] = nan
							} else {
								f[at] = nan
							}
							checkE4M3Run(t, e4m3FewScales, b, f, e4m3Sums{}, fmt.Sprintf("NaN %#x on side %d at %d among %#x", nan, side, at, fill))
						}
					}
				}
			}
			// Zeros of mixed signs, and the extremes ±448, ±2^-9.
			for k, pat := range [][2]byte{{0x00, 0x80}, {0x80, 0x80}, {0x00, 0x00}, {0x7e, 0xfe}, {0xfe, 0x7e}, {0x7e, 0x7e},
				{0x01, 0x81}, {0x81, 0x01}, {0x01, 0x00}, {0x81, 0x80}, {0x7e, 0x01}, {0xfe, 0x81}} {
				b, f := make([]byte, n), make([]byte, n)
				for i := range b {
					b[i], f[i] = pat[0], pat[1]
					if k < 2 && i%3 == 0 { // some sign patterns swap
						b[i], f[i] = pat[1], pat[0]
					}
				}
				checkE4M3Run(t, e4m3AllScales, b, f, e4m3Sums{}, fmt.Sprintf("pattern %#x", pat))
			}
		}
	})
}

// BenchmarkE4M3Run measures e4m3Run (the kernel on amd64) and e4m3RunGo
// per pair of codes of fine-tuned-like runs (half the codes one step
// away), under the same and under different scales. Each iteration takes
// the next run of a 64 KiB pool, so that the Go loop's branches cannot
// learn one run by heart.
func BenchmarkE4M3Run(b *testing.B) {
	const pool = 1 << 15
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]byte, pool), make([]byte, pool)
	for i := range x {
		x[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
		y[i] = x[i]
		if rng.IntN(2) == 0 && x[i]&0x7f < 0x7e {
			y[i]++
		}
	}
	for _, n := range []int{128, 16384} {
		for _, impl := range []struct {
			name string
			run  func(b, f []byte, k *e4m3Block, o *e4m3Sums) bool
		}{{"kernel", e4m3Run}, {"avx2", func(b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
			return e4m3RunWith(e4m3KernelAVX2, b, f, k, o)
		}}, {"go", func(b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
			return e4m3RunGo(b, f, k.class == e4m3Same, k.kb, k.kf, o)
		}}} {
			if impl.name == "avx2" && !slices.Contains(e4m3Kernels(), e4m3KernelAVX2) {
				continue
			}
			for _, sc := range []struct {
				name string
				k    e4m3Block
			}{{"same", e4m3Scales{true, 1, 1}.block()}, {"scaled", e4m3Scales{false, 0.0087890625, 0.013671875}.block()}} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", impl.name, sc.name, n), func(b *testing.B) {
					i := 0
					var o e4m3Sums // outside the loop: &o escapes through impl.run
					for b.Loop() {
						o = e4m3Sums{}
						if !impl.run(x[i:i+n], y[i:i+n], &sc.k, &o) {
							b.Fatal("NaN")
						}
						if i += n; i == pool {
							i = 0
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pair")
				})
			}
		}
	}
}

// TestE4M3Blocks checks e4m3BlocksWith with every kernel this CPU runs
// (one kernel call for all the blocks on amd64) against e4m3BlocksGo bit
// for bit: blocks of every class in
// random order (the scales of e4m3FewScales and e4m3Generic ones), NaN
// codes in some blocks, block widths the kernel takes and ones it leaves
// to the Go loop, sums written over stale ones and nothing written past
// the last block.
func TestE4M3Blocks(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var wideSumSq [2]int // blocks of two scales whose Σ(f−b)² integer fits 64 bits, and not
	defer func() {
		assert.Positive(t, wideSumSq[0], "blocks of two scales with a 64-bit e4m3SumSq integer")
		assert.Positive(t, wideSumSq[1], "blocks of two scales with a wider e4m3SumSq integer")
	}()
	for _, bn := range []int{32, 64, 96, 128, 192, 48, 1} {
		for _, nk := range []int{1, 2, 5, 16} {
			for iter := range 20 {
				k := make([]e4m3Block, nk)
				b, f := make([]byte, nk*bn), make([]byte, nk*bn)
				for j := range k {
					switch c := rng.IntN(8); {
					case c == 0 && iter > 0:
						k[j] = e4m3Block{} // e4m3Generic
					default:
						k[j] = e4m3FewScales[rng.IntN(len(e4m3FewScales))].block()
					}
				}
				for i := range b {
					b[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
					f[i] = b[i]
					if rng.IntN(3) == 0 {
						f[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
					}
					if rng.IntN(16) == 0 {
						f[i] = b[i] ^ 0x80
					}
				}
				if iter%3 == 1 { // a NaN code in a random block
					i := rng.IntN(len(b))
					if rng.IntN(2) == 0 {
						b[i] = 0x7f | byte(rng.IntN(2))<<7
					} else {
						f[i] = 0x7f | byte(rng.IntN(2))<<7
					}
				}
				stale := e4m3Sums{bb: 1, ff: 2, bf: 3, mx: 4, changed: 5, zeroSign: 6}
				got, want := make([]e4m3Sums, nk+1), make([]e4m3Sums, nk)
				nWant := e4m3BlocksGo(b, f, bn, k, want)
				msg := fmt.Sprintf("bn %d, nk %d, iter %d", bn, nk, iter)
				for j := range nWant {
					var o e4m3Sums
					require.True(t, e4m3RunGo(b[j*bn:(j+1)*bn], f[j*bn:(j+1)*bn], k[j].class == e4m3Same, k[j].kb, k[j].kf, &o))
					require.Equal(t, e4m3SumsBits(o), e4m3SumsBits(want[j]), "%s: e4m3BlocksGo, block %d", msg, j)
				}
				// The blocks added into a partial that already holds sums,
				// as e4m3Segment adds them: by r.addE4M3 of the Go loop's
				// sums, and by each kernel through e4m3AddBlocksWith, under
				// the descriptors newE4M3Block makes (one scale: the same
				// kernel loop under every factor of addE4M3).
				kAdd := make([]e4m3Block, nk)
				for j := range kAdd {
					switch {
					case k[j].class == e4m3Same:
						s := e4m3AddScales[rng.IntN(len(e4m3AddScales))]
						kAdd[j] = newE4M3Block(s, s)
					case k[j].class == e4m3Diff && k[j].kb != k[j].kf:
						kAdd[j] = newE4M3Block(float32(k[j].kb), float32(k[j].kf))
					default: // generic, or two equal scales in the scaled loop (newE4M3Block never makes those)
						kAdd[j] = k[j]
						if k[j].class == e4m3Diff {
							kAdd[j] = newE4M3Block(0x1p-5, 0x1.8p-5)
						}
					}
				}
				start := partial{changed: 7, maxAbs: 0.75 * float64(rng.IntN(3)), sumSqDiff: rng.Float64(), normB: rng.Float64(),
					normF: rng.Float64(), dot: rng.Float64() - 0.5, zeroSign: 3}
				wantAdd, sumsAdd := start, make([]e4m3Sums, nk)
				nAdd := e4m3BlocksGo(b, f, bn, kAdd, sumsAdd)
				wantAdd.addE4M3(sumsAdd[:nAdd], kAdd)
				for j := range nAdd {
					if kAdd[j].class == e4m3Diff {
						wideSumSq[sumSqWide(&kAdd[j], &sumsAdd[j])]++
					}
				}
				for _, kern := range e4m3Kernels() {
					for j := range got {
						got[j] = stale
					}
					nGot := e4m3BlocksWith(kern, b, f, bn, k, got[:nk])
					msg := fmt.Sprintf("%s, kernel %d", msg, kern)
					require.Equal(t, nWant, nGot, msg)
					require.Equal(t, stale, got[nk], "%s: written past the last block", msg)
					for j := range nWant {
						require.Equal(t, e4m3SumsBits(want[j]), e4m3SumsBits(got[j]), "%s: block %d", msg, j)
					}
					gotAdd := start
					nGot = e4m3AddBlocksWith(kern, b, f, bn, kAdd, got[:nk], &gotAdd)
					require.Equal(t, nAdd, nGot, "%s: e4m3AddBlocks", msg)
					require.Equal(t, partialBits(&wantAdd), partialBits(&gotAdd), "%s: e4m3AddBlocks", msg)
					require.Equal(t, wantAdd.zeroSign, gotAdd.zeroSign, "%s: e4m3AddBlocks", msg)
				}
				if nWant < nk { // the block it stopped at is generic or holds a NaN
					var o e4m3Sums
					j := nWant
					assert.False(t, k[j].class != e4m3Generic &&
						e4m3RunGo(b[j*bn:(j+1)*bn], f[j*bn:(j+1)*bn], k[j].class == e4m3Same, k[j].kb, k[j].kf, &o), msg)
				}
			}
		}
	}
}

// e4m3AddScales are the one-scale factors of TestE4M3Blocks's added
// blocks: zero, both signs, 20 significant bits, the extremes 2^±100.
var e4m3AddScales = []float32{0.0087890625, -0.013671875, 0, 1, math.Float32frombits(0x3f7ffff0), 0x1p-100, 0x1p100, 3.0517578e-05}

// sumSqWide is 1 when the 128-bit integer e4m3SumSq forms for sums o in
// block k (of two scales) does not fit in 64 bits, else 0: the kernels
// round the two cases apart.
func sumSqWide(k *e4m3Block, o *e4m3Sums) int {
	if sumSqInt(k, o).BitLen() > 64 {
		return 1
	}
	return 0
}

// sumSqInt is the integer e4m3SumSq forms for sums o in block k (of two
// scales), exactly.
func sumSqInt(k *e4m3Block, o *e4m3Sums) *big.Int {
	A, B, C := int64(o.ff*0x1p18), int64(o.bb*0x1p18), int64(o.bf*0x1p18)
	x := new(big.Int).Mul(new(big.Int).SetUint64(k.mff), big.NewInt(A))
	x.Add(x, new(big.Int).Mul(new(big.Int).SetUint64(k.mbb), big.NewInt(B)))
	c := new(big.Int).Mul(new(big.Int).SetUint64(k.cross2), big.NewInt(C))
	if k.crossNeg {
		x.Add(x, c)
	} else {
		x.Sub(x, c)
	}
	return x
}

// e4m3SumsBits is o bit for bit.
func e4m3SumsBits(o e4m3Sums) [6]uint64 {
	return [6]uint64{math.Float64bits(o.bb), math.Float64bits(o.ff), math.Float64bits(o.bf),
		math.Float64bits(o.mx), uint64(o.changed), uint64(o.zeroSign)}
}

// BenchmarkE4M3Segment measures e4m3Segment with its bands folded
// ("fold": 16 rows, then a flush) and flushed after every row ("perrow",
// as before the fold) per pair of codes, on rows of 2048
// fine-tuned-like codes (half of them one step away) in 128×128 blocks,
// all of one scale ("same") or of two ("scaled").
func BenchmarkE4M3Segment(b *testing.B) {
	const rows, cols, bm, bn = 16, 2048, 128, 128
	rng := rand.New(rand.NewPCG(1, 2))
	x, y := make([]byte, rows*cols), make([]byte, rows*cols)
	for i := range x {
		x[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
		y[i] = x[i]
		if rng.IntN(2) == 0 && x[i]&0x7f < 0x7e {
			y[i]++
		}
	}
	for _, scales := range []string{"same", "scaled"} {
		sb, sf := make([]float32, cols/bn), make([]float32, cols/bn)
		for i := range sb {
			sb[i] = float32(rng.IntN(200)+1) * 0x1p-14
			sf[i] = sb[i]
			if scales == "scaled" {
				sf[i] *= 1.0078125
			}
		}
		p := &plan{bs: &side{rows: rows, cols: cols, bm: bm, bn: bn, sCols: cols / bn}}
		for i := range sb {
			p.e4m3Blocks = append(p.e4m3Blocks, newE4M3Block(sb[i], sf[i]))
		}
		for _, impl := range []struct {
			name   string
			perRow bool
		}{{"fold", false}, {"perrow", true}} {
			b.Run(impl.name+"/"+scales, func(b *testing.B) {
				sc := &scratch{}
				var r partial
				for b.Loop() {
					for g := int64(0); g < rows*cols; g += cols {
						if err := e4m3Segment(p, x[g:g+cols], y[g:g+cols], g, sc, &r); err != nil {
							b.Fatal(err)
						}
						if impl.perRow {
							sc.fold.flush()
						}
					}
					sc.fold.flush()
				}
				perPair(b, rows*cols)
			})
		}
	}
}

// TestE4M3KernelEdges holds every kernel against e4m3BlocksGo on blocks
// of edge values, one case a row: NaN codes at a block's first, last and
// middle positions (either side, either sign), ±0 against ±0, the
// subnormals, the largest magnitude 448 against its negation and against
// the smallest, under one and two scales, in blocks of 64, 128 and 192.
func TestE4M3KernelEdges(t *testing.T) {
	t.Parallel()
	type pos struct {
		at   int
		code byte
		f    bool // on the f side
	}
	cases := []struct {
		name   string
		b, f   func(i int) byte // codes by position
		set    []pos            // then these
		scales e4m3Scales
	}{
		{"zeros of both signs", func(i int) byte { return byte(i&1) << 7 }, func(i int) byte { return byte(i&2) << 6 }, nil, e4m3Scales{true, 1, 1}},
		{"zeros, two scales", func(i int) byte { return byte(i&1) << 7 }, func(i int) byte { return byte(i&2) << 6 }, nil, e4m3Scales{false, 0.5, 0x1p-5}},
		{"subnormals", func(i int) byte { return byte(i%8) | byte(i&8)<<4 }, func(i int) byte { return byte((i+3)%8) | byte(i&16)<<3 }, nil, e4m3Scales{true, 1, 1}},
		{"subnormals, two scales", func(i int) byte { return byte(i % 8) }, func(i int) byte { return byte(7 - i%8) }, nil, e4m3Scales{false, 0x1p-100, 0x1.4p-95}},
		{"max against -max", func(int) byte { return 0x7e }, func(int) byte { return 0xfe }, nil, e4m3Scales{true, 1, 1}},
		{"max against min", func(int) byte { return 0x7e }, func(i int) byte { return 0x01 | byte(i&1)<<7 }, nil, e4m3Scales{false, 0x1p100, 0x1p100}},
		{"max, two scales", func(int) byte { return 0xfe }, func(int) byte { return 0x7e }, nil, e4m3Scales{false, 0x1p5, -0x1p-5}},
		{"every code", func(i int) byte { return byte(i) }, func(i int) byte { return byte(i * 7) }, []pos{{0x7f, 0, false}, {0xff, 0x80, false}, {0x7f * 7 % 256, 1, true}}, e4m3Scales{true, 1, 1}},
		{"NaN first on b", func(int) byte { return 0x38 }, func(int) byte { return 0x38 }, []pos{{0, 0x7f, false}}, e4m3Scales{true, 1, 1}},
		{"NaN last on f", func(int) byte { return 0x38 }, func(int) byte { return 0xb8 }, []pos{{-1, 0xff, true}}, e4m3Scales{true, 1, 1}},
		{"NaN middle on f, two scales", func(int) byte { return 0 }, func(int) byte { return 0x80 }, []pos{{-2, 0x7f, true}}, e4m3Scales{false, 0.0087890625, 0.013671875}},
		{"NaN on both", func(int) byte { return 0x01 }, func(int) byte { return 0x81 }, []pos{{63, 0xff, false}, {63, 0x7f, true}}, e4m3Scales{false, 1, 1}},
	}
	for _, bn := range []int{64, 128, 192} {
		for _, tc := range cases {
			const nk = 3
			b, f := make([]byte, nk*bn), make([]byte, nk*bn)
			for i := range b {
				b[i], f[i] = tc.b(i), tc.f(i)
				if b[i]&0x7f == 0x7f { // NaN only where set says
					b[i] = 0x7e
				}
				if f[i]&0x7f == 0x7f {
					f[i] = 0x7e
				}
			}
			for _, p := range tc.set { // in the middle block; -1: its last, -2: its middle
				at := p.at
				switch at {
				case -1:
					at = bn - 1
				case -2:
					at = bn / 2
				}
				at = bn + at%bn
				if p.f {
					f[at] = p.code
				} else {
					b[at] = p.code
				}
			}
			k := make([]e4m3Block, nk)
			for j := range k {
				k[j] = tc.scales.block()
			}
			want := make([]e4m3Sums, nk)
			nWant := e4m3BlocksGo(b, f, bn, k, want)
			for _, kern := range e4m3Kernels() {
				got := make([]e4m3Sums, nk)
				nGot := e4m3BlocksWith(kern, b, f, bn, k, got)
				msg := fmt.Sprintf("%s, bn %d, kernel %d", tc.name, bn, kern)
				require.Equal(t, nWant, nGot, msg)
				for j := range nWant {
					assert.Equal(t, e4m3SumsBits(want[j]), e4m3SumsBits(got[j]), "%s: block %d", msg, j)
				}
				for j := range nk { // runs: the tail of each block too
					var o, w e4m3Sums
					okW := e4m3RunGo(b[j*bn:(j+1)*bn-5], f[j*bn:(j+1)*bn-5], tc.scales.same, k[j].kb, k[j].kf, &w)
					okG := e4m3RunWith(kern, b[j*bn:(j+1)*bn-5], f[j*bn:(j+1)*bn-5], &k[j], &o)
					require.Equal(t, okW, okG, "%s: run %d", msg, j)
					if okW {
						assert.Equal(t, e4m3SumsBits(w), e4m3SumsBits(o), "%s: run %d", msg, j)
					}
				}
			}
			if len(tc.set) > 0 && tc.set[0].code&0x7f == 0x7f {
				assert.Equal(t, 1, nWant, "%s, bn %d: the NaN block stops the blocks", tc.name, bn)
			}
		}
	}
}

// TestE4M3AddBlocksRounding holds e4m3AddBlocksWith, one block at a time
// into a zero partial (so Σ(f−b)² is the block's own, rounded once), against
// r.addE4M3 of the Go loop's sums on the blocks of two scales whose
// e4m3SumSq integer is a tie at 53 bits but for bits below the top 64: the
// sticky bit rounds them up. Random blocks reach a few of them (about one
// in 2^11 of the wide ones).
func TestE4M3AddBlocksRounding(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	const bn = 64
	scales := []float32{math.Float32frombits(0x3f7ffff0), -math.Float32frombits(0x3c0ffff0), math.Float32frombits(0x3e123450), math.Float32frombits(0x3d7edcb0)}
	found := 0
	for try := 0; try < 200000 && found < 4; try++ {
		sb, sf := scales[rng.IntN(len(scales))], scales[rng.IntN(len(scales))]
		if sb == sf {
			continue
		}
		k := []e4m3Block{newE4M3Block(sb, sf)}
		b, f := make([]byte, bn), make([]byte, bn)
		for i := range b {
			b[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
			f[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
		}
		o := make([]e4m3Sums, 1)
		require.Equal(t, 1, e4m3BlocksGo(b, f, bn, k, o))
		if !stickyDecides(&k[0], &o[0]) {
			continue
		}
		found++
		var want partial
		want.addE4M3(o, k)
		for _, kern := range e4m3Kernels() {
			var got partial
			require.Equal(t, 1, e4m3AddBlocksWith(kern, b, f, bn, k, o, &got), "kernel %d", kern)
			require.Equal(t, partialBits(&want), partialBits(&got), "kernel %d, scales %g %g", kern, sb, sf)
		}
	}
	require.Positive(t, found, "no block whose Σ(f−b)² needs the sticky bit")
}

// stickyDecides says whether the e4m3SumSq integer of sums o in block k
// rounds differently to float64 without the bits below its top 64.
func stickyDecides(k *e4m3Block, o *e4m3Sums) bool {
	x := sumSqInt(k, o)
	n := x.BitLen()
	if n <= 64 {
		return false
	}
	top := new(big.Int).Rsh(x, uint(n-64))
	if new(big.Int).Lsh(top, uint(n-64)).Cmp(x) == 0 {
		return false // nothing below the top 64 bits
	}
	exact, _ := new(big.Float).SetInt(x).Float64()
	trunc, _ := new(big.Float).SetInt(new(big.Int).Lsh(top, uint(n-64))).Float64()
	return exact != trunc
}

// BenchmarkE4M3AddBlocks measures e4m3AddBlocks per pair of codes on rows
// of 40 blocks of 128 fine-tuned-like codes (one in seven a step away), a
// row of a [*, 5120] weight in 128×128 blocks: one kernel call per row,
// the blocks of one scale ("same"), of two ("scaled") or mixed at random
// ("mixed", as in a fine-tune whose scales moved in about half of them).
func BenchmarkE4M3AddBlocks(b *testing.B) {
	const nk, bn, rows = 40, 128, 64
	rng := rand.New(rand.NewPCG(9, 10))
	x, y := make([]byte, rows*nk*bn), make([]byte, rows*nk*bn)
	fineTunedCodes(rng, x, y)
	for _, mix := range []string{"same", "scaled", "mixed"} {
		k := mixedBlocks(rng, nk, mix)
		out := make([]e4m3Sums, nk)
		b.Run(mix, func(b *testing.B) {
			var r partial
			for b.Loop() {
				for g := 0; g < len(x); g += nk * bn {
					if e4m3AddBlocksWith(e4m3Best, x[g:g+nk*bn], y[g:g+nk*bn], bn, k, out, &r) != nk {
						b.Fatal("NaN")
					}
				}
			}
			perPair(b, len(x))
		})
	}
}

// TestE4M3Norm holds e4m3AddNormWith, for every kernel of this CPU (on
// amd64 with AVX2, e4m3NormAVX2), against e4m3AddBlocksWith of the Go loop
// with the side compared with itself (f = b, as normChunk compares a
// chunk of equal sides): the blocks done, their sums and the partial
// they are added into, bit for bit. Codes: every finite code (±0, the
// subnormals, ±448) at random, runs of the extremes, a NaN code in some
// block; blocks of one scale, some of two scales or not exact.
func TestE4M3Norm(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 16))
	for _, bn := range []int{32, 64, 96, 128, 48, 1} {
		for _, nk := range []int{1, 2, 5, 16} {
			for iter := range 24 {
				k := make([]e4m3Block, nk)
				for j := range k {
					s := e4m3AddScales[rng.IntN(len(e4m3AddScales))]
					switch c := rng.IntN(10); {
					case c == 0 && iter > 0:
						k[j] = e4m3Block{} // e4m3Generic
					case c == 1 && iter > 0:
						k[j] = newE4M3Block(s, s*1.0078125) // two scales
					default:
						k[j] = newE4M3Block(s, s)
					}
				}
				b := make([]byte, nk*bn)
				for i := range b {
					b[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
				}
				if iter%4 == 2 { // the extremes: ±0, ±2^-9, ±448
					ext := []byte{0x00, 0x80, 0x01, 0x81, 0x7e, 0xfe}
					for i := range b {
						b[i] = ext[rng.IntN(len(ext))]
					}
				}
				if iter%3 == 1 { // a NaN code in a random block
					b[rng.IntN(len(b))] = 0x7f | byte(rng.IntN(2))<<7
				}
				start := partial{normB: 1.5, normF: 2.25, dot: 0.75, sumSqDiff: 3, maxAbs: 0.5, changed: 7, zeroSign: 1}
				want, wantOut := start, make([]e4m3Sums, nk)
				nWant := e4m3AddBlocksWith(e4m3KernelGo, b, b, bn, k, wantOut, &want)
				for _, kern := range e4m3Kernels() {
					msg := fmt.Sprintf("kernel %d, bn %d, nk %d, iter %d", kern, bn, nk, iter)
					got, gotOut := start, make([]e4m3Sums, nk)
					for j := range gotOut {
						gotOut[j] = e4m3Sums{bb: 1, ff: 2, bf: 3, mx: 4, changed: 5, zeroSign: 6} // stale
					}
					n := e4m3AddNormWith(kern, b, bn, k, gotOut, &got)
					require.Equal(t, nWant, n, msg)
					for j := range n {
						require.Equal(t, e4m3SumsBits(wantOut[j]), e4m3SumsBits(gotOut[j]), "%s: block %d", msg, j)
					}
					require.Equal(t, partialBits(&want), partialBits(&got), msg)
				}
			}
		}
	}
}

// BenchmarkE4M3Norm measures e4m3NormInto (a side compared with itself,
// normChunk) against e4m3BlocksInto of the same bytes on both sides, per
// code, on rows of 40 blocks of 128 codes of one scale.
func BenchmarkE4M3Norm(b *testing.B) {
	const nk, bn, rows = 40, 128, 64
	rng := rand.New(rand.NewPCG(17, 18))
	x := make([]byte, rows*nk*bn)
	for i := range x {
		x[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
	}
	k := mixedBlocks(rng, nk, "same")
	lanes, tmp := make([]e4m3Lanes, nk), make([]e4m3Sums, nk)
	for _, impl := range []struct {
		name string
		add  func(x []byte) int
	}{{"norm", func(x []byte) int { return e4m3NormIntoWith(e4m3Best, x, bn, k, lanes, tmp) }},
		{"blocks", func(x []byte) int { return e4m3BlocksIntoWith(e4m3Best, x, x, bn, k, lanes, tmp) }}} {
		b.Run(impl.name, func(b *testing.B) {
			for b.Loop() {
				for g := 0; g < len(x); g += nk * bn {
					if impl.add(x[g:g+nk*bn]) != nk {
						b.Fatal("NaN")
					}
				}
			}
			perPair(b, len(x))
		})
	}
}

// e4m3AddNormWith is e4m3NormIntoWith into zero lanes, added up into
// out, followed by r.addE4M3 of the blocks done.
func e4m3AddNormWith(kern e4m3Kernel, b []byte, bn int, k []e4m3Block, out []e4m3Sums, r *partial) int {
	l := make([]e4m3Lanes, len(k))
	done := e4m3NormIntoWith(kern, b, bn, k, l, make([]e4m3Sums, len(k)))
	for j := range done {
		out[j] = l[j].sum()
	}
	r.addE4M3(out[:done], k)
	return done
}

// TestE4M3BlocksInto holds e4m3BlocksIntoWith and e4m3NormIntoWith, for
// every kernel of this CPU, to the Go loop's sums added into lanes that
// already hold sums (a band's earlier rows): the lanes added up are the
// same bits, the blocks after the one that stops a call (a NaN code, a
// block left to the decoded path) are untouched. Block widths the AVX2
// kernel takes (multiples of 32), the AVX-512 one (of 64) and neither.
func TestE4M3BlocksInto(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(19, 20))
	for _, bn := range []int{32, 64, 96, 128, 48} {
		for _, nk := range []int{1, 3, 8} {
			for iter := range 16 {
				k := make([]e4m3Block, nk)
				for j := range k {
					s := e4m3AddScales[rng.IntN(len(e4m3AddScales))]
					switch c := rng.IntN(8); {
					case c == 0 && iter > 0:
						k[j] = e4m3Block{} // e4m3Generic
					case c < 4:
						k[j] = newE4M3Block(s, s*1.0078125) // two scales
					default:
						k[j] = newE4M3Block(s, s)
					}
				}
				b := randCodes(rng, nk*bn, nil)
				f := randCodes(rng, nk*bn, b)
				if iter%3 == 1 { // a NaN code in a random block
					f[rng.IntN(len(f))] = 0xff
				}
				// lanes of an earlier row: the Go loop's sums of other codes
				held := make([]e4m3Sums, nk)
				for j := range held {
					held[j] = e4m3Sums{}
					e4m3RunGo(randCodes(rng, bn, nil), randCodes(rng, bn, nil), true, 1, 1, &held[j])
				}
				for _, norm := range []bool{false, true} {
					fs := f
					if norm {
						fs = b
					}
					want := make([]e4m3Sums, nk)
					nWant := e4m3BlocksGo(b, fs, bn, k, want)
					for _, kern := range e4m3Kernels() {
						msg := fmt.Sprintf("kernel %d, bn %d, nk %d, iter %d, norm %v", kern, bn, nk, iter, norm)
						lanes := make([]e4m3Lanes, nk)
						e4m3AddInto(lanes, held)
						var n int
						if norm {
							n = e4m3NormIntoWith(kern, b, bn, k, lanes, make([]e4m3Sums, nk))
						} else {
							n = e4m3BlocksIntoWith(kern, b, fs, bn, k, lanes, make([]e4m3Sums, nk))
						}
						require.Equal(t, nWant, n, msg)
						for j := range nk {
							w := held[j]
							if j < n {
								w.add(&want[j])
							}
							require.Equal(t, e4m3SumsBits(w), e4m3SumsBits(lanes[j].sum()), "%s: block %d", msg, j)
						}
					}
				}
			}
		}
	}
}

package diff

import (
	"fmt"
	"maps"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestE4M3Values(t *testing.T) {
	t.Parallel()
	var codes [256]byte
	for i := range codes {
		codes[i] = byte(i)
	}
	var want [256]float32
	require.NoError(t, numfmt.DecodeFloat32(numfmt.F8E4M3, codes[:], want[:]))
	for c, w := range want {
		got := e4m3Values[c]
		if c&0x7f == 0x7f {
			assert.True(t, math.IsNaN(got), "code %#x", c)
			continue
		}
		assert.Equal(t, math.Float64bits(float64(w)), math.Float64bits(got), "code %#x", c)
	}
}

// exactSumSq is Σ(sf·v_f − sb·v_b)² in exact arithmetic, rounded to
// float64 once.
func exactSumSq(b, f []byte, sb, sf float32) float64 {
	sum := new(big.Float).SetPrec(2000)
	for i := range b {
		x := new(big.Float).SetPrec(2000).SetFloat64(e4m3Values[f[i]])
		x.Mul(x, big.NewFloat(float64(sf)))
		y := new(big.Float).SetPrec(2000).SetFloat64(e4m3Values[b[i]])
		y.Mul(y, big.NewFloat(float64(sb)))
		x.Sub(x, y)
		x.Mul(x, x)
		sum.Add(sum, x)
	}
	v, _ := sum.Float64()
	return v
}

// randCodes returns n random non-NaN F8_E4M3 codes; some runs share most
// codes with base.
func randCodes(r *rand.Rand, n int, base []byte) []byte {
	c := make([]byte, n)
	for i := range c {
		switch {
		case base != nil && r.IntN(4) > 0:
			c[i] = base[i]
		case r.IntN(10) == 0:
			c[i] = byte(r.IntN(2)) << 7 // ±0
		default:
			c[i] = byte(r.IntN(0x7f)) | byte(r.IntN(2))<<7
		}
	}
	return c
}

func TestE4M3SumSqExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	scales := []float32{0, 1, -1, 0x1p-20, 0.0087890625, 0.0087890625 * 1.00390625, -0.0087890625 * 1.5, 0x1p-10 * 1.375, 0x1p-100, 0x1p100, 3.0517578e-05, 1.2207031e-04}
	for it := 0; it < 400; it++ {
		sb, sf := scales[r.IntN(len(scales))], scales[r.IntN(len(scales))]
		if sb == sf || !e4m3Exact(sb, sf) {
			continue
		}
		n := 1 + r.IntN(300)
		if it%50 == 0 {
			n = e4m3RunMax
		}
		b := randCodes(r, n, nil)
		f := randCodes(r, n, b)
		if it%7 == 0 {
			// 448 everywhere: the largest sums a run can have.
			for i := range b {
				b[i], f[i] = 0x7e, 0xfe
			}
		}
		var o e4m3Sums
		require.True(t, e4m3RunGo(b, f, false, float64(sb), float64(sf), &o))
		want := exactSumSq(b, f, sb, sf)
		k := newE4M3Block(sb, sf)
		got := k.e4m3SumSq(&o)
		require.Equal(t, math.Float64bits(want), math.Float64bits(got), "n=%d sb=%g sf=%g: %g vs %g", n, sb, sf, got, want)
	}
}

func TestE4M3Exact(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sb, sf float32
		ok     bool
	}{
		{0.0087890625, 0.0087890625, true},
		{0.0087890625, 0.009765625, true},
		{0, 0.5, true},
		{1, 0x1p10, true},
		{1, 0x1p11, false},                  // exponents 11 apart
		{0x1p11, 0x1p11, true},              // the same scale
		{float32(0.1), float32(0.1), false}, // 24 significant bits
		{1, float32(math.Inf(1)), false},
		{float32(math.NaN()), 1, false},
		{0x1p-101, 0x1p-101, false},
		{0x1p101, 1, false},
	} {
		assert.Equal(t, c.ok, e4m3Exact(c.sb, c.sf), "%g %g", c.sb, c.sf)
	}
}

func TestU128Float64(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		x := u128{r.Uint64() >> r.IntN(64), r.Uint64()}
		if i%3 == 0 {
			x.lo = x.lo >> 11 << 11 // ties and exact values
			x.hi &= 1<<(r.IntN(10)+1) - 1
		}
		want, _ := new(big.Float).SetInt(new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(x.hi), 64), new(big.Int).SetUint64(x.lo))).Float64()
		require.Equal(t, want, x.float64(), "%#x %#x", x.hi, x.lo)
	}
}

// e4m3Plan is a plan of two block-scaled F8_E4M3 sides of rows×cols
// with bm×bn blocks, ready for segments.
func e4m3Plan(t *testing.T, rows, cols, bm, bn int64, sb, sf []float32) *plan {
	t.Helper()
	mk := func(s []float32) *side {
		ten := &ckpt.Tensor{TensorInfo: ckpt.TensorInfo{Name: "w", DType: numfmt.F8E4M3, Shape: []int64{rows, cols}}}
		return &side{t: ten, dt: numfmt.F8E4M3, esize: 1, rows: rows, cols: cols, scale: s, bm: bm, bn: bn, sCols: (cols + bn - 1) / bn, e4m3: e4m3F32, scaleT: ten}
	}
	p := &plan{kind: kindSame, fp8: true, bs: mk(sb), fs: mk(sf)}
	p.e4m3 = true
	for i := range sb {
		p.e4m3Blocks = append(p.e4m3Blocks, newE4M3Block(sb[i], sf[i]))
	}
	return p
}

// TestE4M3SegmentMatchesDecoded checks the exact path against the
// statistics of the decoded values (the generic path), block scales that
// the exact path accepts and others it leaves to the generic path, NaN
// codes, ragged blocks, and segments that start inside a block.
func TestE4M3SegmentMatchesDecoded(t *testing.T) {
	t.Parallel()
	const rows, cols, bm, bn = 6, 300, 2, 64
	sRows, sCols := (rows+bm-1)/bm, (cols+bn-1)/bn
	for _, c := range []struct {
		name string
		f    func(i int, s float32) float32 // the fine-tune's scale of block i
		nan  bool
		neg  bool // negative base scales
	}{
		{"same scales", func(_ int, s float32) float32 { return s }, false, false},
		{"different scales", func(_ int, s float32) float32 { return s * 1.0078125 }, false, false},
		{"negative scales", func(_ int, s float32) float32 { return -s * 2 }, false, false},
		{"same negative scales", func(_ int, s float32) float32 { return s }, false, true},
		{"zero scales", func(_ int, _ float32) float32 { return 0 }, false, false},
		{"24-bit scales", func(_ int, _ float32) float32 { return 0.1 }, false, false},
		{"scales far apart", func(_ int, s float32) float32 { return s * 0x1p12 }, false, false},
		{"mixed, NaN codes", func(i int, s float32) float32 { return []float32{s, s * 1.5, 0.1, 0, s * 0x1p-11}[i%5] }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(5, 6))
			sb := make([]float32, sRows*sCols)
			sf := make([]float32, sRows*sCols)
			for i := range sb {
				sb[i] = float32(r.IntN(200)+1) * 0x1p-14
				if c.neg {
					sb[i] = -sb[i]
				}
				sf[i] = c.f(i, sb[i])
			}
			p := e4m3Plan(t, rows, cols, bm, bn, sb, sf)
			b := randCodes(r, rows*cols, nil)
			f := randCodes(r, rows*cols, b)
			if c.nan {
				f[7], b[cols+70] = 0x7f, 0xff // generic path for their blocks
			}
			for _, start := range []int64{0, 13, 64, 200} {
				var got, want partial
				sc := &scratch{}
				for row := int64(0); row < rows; row++ {
					g := row*cols + start
					seg := func(x []byte) []byte { return x[g : (row+1)*cols] }
					require.NoError(t, e4m3Segment(p, seg(b), seg(f), g, sc, &got))
					require.NoError(t, decodeCount(p, seg(b), seg(f), g, sc, &want, true))
					want.accumulate(sc.bF[:len(seg(b))], sc.fF[:len(seg(b))])
				}
				sc.fold.flush()
				assert.Equal(t, want.changed, got.changed, "start %d", start)
				assert.Equal(t, want.zeroSign, got.zeroSign)
				assert.Equal(t, want.nan, got.nan)
				assert.Equal(t, want.maxAbs, got.maxAbs)
				assert.True(t, want.nf == got.nf, "non-finite counts")
				for _, v := range [][2]float64{{want.sumSqDiff, got.sumSqDiff}, {want.normB, got.normB}, {want.normF, got.normF}, {want.dot, got.dot}} {
					if v[0] == 0 {
						assert.Zero(t, v[1])
						continue
					}
					assert.InEpsilon(t, v[0], v[1], 1e-13)
				}
			}
		})
	}
}

// TestCountRawDiff checks countRawDiffGo, the AVX-512 kernel (where this
// CPU runs it) and countRawDiff against a plain loop for every element
// size, on lengths around the kernel's 64 bytes and longer ones.
func TestCountRawDiff(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	for _, es := range []int{1, 2, 4, 8} {
		for _, n := range append(seq(70), 127, 128, 129, 191, 255, 256, 1000, 4099) {
			a := make([]byte, n)
			for i := range a {
				a[i] = byte(r.IntN(256))
			}
			b := append([]byte(nil), a...)
			for i := range b {
				if r.IntN(3) == 0 {
					b[i] ^= byte(1) << r.IntN(8) // any single bit, the top one too
				}
			}
			var want int64
			for i := 0; i+es <= n; i += es {
				if string(a[i:i+es]) != string(b[i:i+es]) {
					want++
				}
			}
			require.Equal(t, want, countRawDiffGo(a, b, es), "Go loop, esize %d, n %d", es, n)
			require.Equal(t, want, countRawDiffWith(true, a, b, es), "kernel, esize %d, n %d", es, n)
			require.Equal(t, want, countRawDiff(a, b, es), "esize %d, n %d", es, n)
		}
	}
}

// TestE4M3ExactScalesAreExact checks the premise of e4m3Exact: for every
// scale it accepts, every F8_E4M3 value times the scale is exact in
// float32 (so the exact path sees the same values as a decode).
func TestE4M3ExactScalesAreExact(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 20000; i++ {
		s := math.Float32frombits(r.Uint32())
		if i%2 == 0 {
			s = math.Float32frombits(0x3f7ffff0 | r.Uint32()&0xf) // the longest mantissas
		}
		if _, ok := e4m3ScaleExp(s); !ok || s == 0 {
			continue
		}
		for c := 0; c < 256; c++ {
			v := e4m3Values[c]
			if v != v {
				continue
			}
			require.Equal(t, v*float64(s), float64(float32(v)*s), "code %#x scale %g", c, s)
		}
	}
}

// bandRef is the reference of the folding of rows (e4m3fold.go) in
// TestE4M3SegmentMatchesPerBlock: one e4m3RunGo per scale block (or part
// of one) of a segment, its sums added exactly into those of its block
// in the band (or, for blocks too wide to fold, into the partial at once,
// by addE4M3PerBlock), the blocks of a band added into the partial by
// addE4M3PerBlock in column order when the band ends; decoded blocks are
// added at once.
type bandRef struct {
	band int64
	sums map[int64]*e4m3Sums // by block column
	blks []e4m3Block         // the band's row of blocks
}

func (br *bandRef) segment(p *plan, bseg, fseg []byte, g int64, sc *scratch, r *partial) error {
	bs := p.bs
	row, c0 := g/bs.cols, g%bs.cols
	blks := p.e4m3Blocks[(row/bs.bm)*bs.sCols:]
	rows := bs.bm
	if rows*bs.bn > e4m3RunMax {
		rows = e4m3RunMax / bs.bn
	}
	if band := row/bs.bm*1000000 + row%bs.bm/max(rows, 1); rows > 0 && (br.sums == nil || band != br.band) {
		br.flush(p, r)
		br.band, br.sums = band, map[int64]*e4m3Sums{}
		br.blks = blks
	}
	c1 := c0 + int64(len(bseg))
	for c := c0; c < c1; {
		blk := c / bs.bn
		end := min((blk+1)*bs.bn, c1, c+e4m3RunMax)
		b, f := bseg[c-c0:end-c0], fseg[c-c0:end-c0]
		k := &blks[blk]
		var o e4m3Sums
		if k.class != e4m3Generic && e4m3RunGo(b, f, k.class == e4m3Same, k.kb, k.kf, &o) {
			if rows == 0 {
				addE4M3PerBlock(r, &o, k)
			} else if t := br.sums[blk]; t != nil {
				t.add(&o)
			} else {
				br.sums[blk] = &o
			}
		} else {
			if err := decodeCount(p, b, f, g+c-c0, sc, r, true); err != nil {
				return err
			}
			r.accumulate(sc.bF[:len(b)], sc.fF[:len(b)])
		}
		c = end
	}
	return nil
}

func (br *bandRef) flush(p *plan, r *partial) {
	cols := slices.Sorted(maps.Keys(br.sums))
	for _, c := range cols {
		addE4M3PerBlock(r, br.sums[c], &br.blks[c])
	}
	br.sums = nil
}

func isNaNCode(c byte) bool { return c&0x7f == 0x7f }

// TestE4M3SegmentMatchesPerBlock checks e4m3Segment and the fold of its
// bands against bandRef, a per-block loop, bit for bit, on rows of blocks
// of every class (one
// scale, two scales, scales left to the generic path, zero scales), NaN
// codes in some blocks (of row 1: the sums of a row with one are NaN),
// ragged last blocks, block widths that the kernel takes and others,
// segments that start and end inside a block, bands of a whole row of
// blocks and shorter ones, and blocks too wide to fold.
func TestE4M3SegmentMatchesPerBlock(t *testing.T) {
	t.Parallel()
	for _, g := range []struct{ rows, cols, bm, bn int64 }{
		{4, 2048, 128, 128}, {5, 1000, 2, 128}, {6, 300, 2, 64}, {3, 700, 1, 96}, {4, 500, 3, 48}, {2, 64, 1, 128},
		{9, 256, 4, 128}, {12, 128, 8, 64},
		// bands shorter than a row of blocks (e4m3RunMax), and blocks too
		// wide to fold
		{600, 256, 300, 128}, {3, 40000, 2, 40000},
	} {
		t.Run(fmt.Sprintf("%dx%d/%dx%d", g.rows, g.cols, g.bm, g.bn), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(g.cols), uint64(g.bn)))
			sRows, sCols := (g.rows+g.bm-1)/g.bm, (g.cols+g.bn-1)/g.bn
			sb := make([]float32, sRows*sCols)
			sf := make([]float32, sRows*sCols)
			for i := range sb {
				sb[i] = float32(r.IntN(200)+1) * 0x1p-14
				switch r.IntN(6) {
				case 0, 1:
					sf[i] = sb[i]
				case 2:
					sf[i] = sb[i] * 1.0078125
				case 3:
					sf[i] = -sb[i] * 0x1p-3
				case 4:
					sf[i] = 0.1 // 24 bits: generic
				default:
					sb[i], sf[i] = 0, sb[i]
				}
			}
			p := e4m3Plan(t, g.rows, g.cols, g.bm, g.bn, sb, sf)
			n := int(g.rows * g.cols)
			b := randCodes(r, n, nil)
			f := randCodes(r, n, b)
			for range 3 { // NaN codes in row 1: their blocks go the generic way
				i := int(g.cols) + r.IntN(int(g.cols))
				if r.IntN(2) == 0 {
					b[i] = 0x7f | byte(r.IntN(2))<<7
				} else {
					f[i] = 0xff
				}
			}
			for _, bounds := range [][2]int64{{0, g.cols}, {g.bn, g.cols}, {13, g.cols}, {0, g.cols - 7}, {g.bn + 5, g.cols - g.bn}, {1, 2}, {g.cols - 1, g.cols}} {
				if bounds[0] >= bounds[1] || bounds[1] > g.cols {
					continue
				}
				sc, scRef := &scratch{}, &scratch{}
				var got, want partial
				var ref bandRef
				hasNaN := false
				for row := range g.rows {
					e0, e1 := row*g.cols+bounds[0], row*g.cols+bounds[1]
					require.NoError(t, e4m3Segment(p, b[e0:e1], f[e0:e1], e0, sc, &got))
					require.NoError(t, ref.segment(p, b[e0:e1], f[e0:e1], e0, scRef, &want))
					hasNaN = hasNaN || slices.ContainsFunc(b[e0:e1], isNaNCode) || slices.ContainsFunc(f[e0:e1], isNaNCode)
				}
				sc.fold.flush()
				ref.flush(p, &want)
				require.Equal(t, partialBits(&want), partialBits(&got), "columns %v", bounds)
				require.Equal(t, want.zeroSign, got.zeroSign, "columns %v", bounds)
				require.Equal(t, hasNaN, math.IsNaN(got.sumSqDiff), "columns %v", bounds)
				require.True(t, hasNaN || bounds != [2]int64{0, g.cols}, "row 1 has NaN codes")
			}
		})
	}
}

// addE4M3PerBlock is partial.addE4M3 as it was for one block before it
// took many: the reference of TestE4M3SegmentMatchesPerBlock.
func addE4M3PerBlock(p *partial, o *e4m3Sums, k *e4m3Block) {
	p.normB += float64(k.bb * o.bb)
	p.normF += float64(k.ff * o.ff)
	p.dot += float64(k.bf * o.bf)
	if k.class == e4m3Same {
		p.sumSqDiff += float64(k.bb * (o.ff + o.bb - 2*o.bf))
	} else {
		p.sumSqDiff += k.e4m3SumSq(o)
	}
	if mx := o.mx * k.mxs; mx > p.maxAbs {
		p.maxAbs = mx
	}
	p.changed += o.changed
	p.zeroSign += o.zeroSign
}

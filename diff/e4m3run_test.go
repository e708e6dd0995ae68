package diff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// e4m3Scales is a pair of block scales for TestE4M3Run: those of the b
// and the f side, and whether they count as the same (the engine passes
// same with scales 1; e4m3Run also takes other equal scales as the same,
// and equal scales as not the same).
type e4m3Scales struct {
	same   bool
	sb, sf float32
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
	all := []e4m3Scales{{true, 1, 1}, {true, 0.5, 0.5}, {true, -0.0087890625, -0.0087890625}, {true, 0, 0}}
	for _, sb := range list {
		for _, sf := range list {
			if e4m3Exact(sb, sf) {
				all = append(all, e4m3Scales{false, sb, sf})
			}
		}
	}
	few := []e4m3Scales{
		{true, 1, 1}, {true, 0.5, 0.5}, {false, 1, 1}, {false, 0.0087890625, 0.013671875},
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
		sb, sf := float64(sc.sb), float64(sc.sf)
		got, want := o0, o0
		okGot := e4m3Run(b, f, sc.same, sb, sf, &got)
		okWant := e4m3RunGo(b, f, sc.same, sb, sf, &want)
		if okGot != okWant {
			require.Failf(t, "NaN verdict differs", "%s, n %d, same %v sb %g sf %g: got %v, want %v",
				msg, len(b), sc.same, sb, sf, okGot, okWant)
		}
		if !okWant {
			continue
		}
		bits := func(o e4m3Sums) [6]uint64 {
			return [6]uint64{math.Float64bits(o.bb), math.Float64bits(o.ff), math.Float64bits(o.bf),
				math.Float64bits(o.mx), uint64(o.changed), uint64(o.zeroSign)}
		}
		if bits(got) != bits(want) {
			require.Failf(t, "sums differ", "%s, n %d, same %v sb %g sf %g:\ngot  %+v\nwant %+v",
				msg, len(b), sc.same, sb, sf, got, want)
		}
	}
}

// TestE4M3Run checks e4m3Run (the AVX2 kernel with the Go loop for the
// tail on amd64) against e4m3RunGo bit for bit under scales 1 and many
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
			for _, run := range []int{32, 128, 1000, 32768} {
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
		for _, n := range []int{1, 31, 32, 33, 64, 95, 128, 160, 4096} {
			// NaN codes: alone at the first, the last and inner
			// positions of either side, among zeros and among values.
			for _, fill := range []byte{0x00, 0x38, 0xfe} {
				for _, nan := range []byte{0x7f, 0xff} {
					for _, at := range []int{0, n - 1, n / 2, n / 3, 31, 32} {
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
			run  func(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool
		}{{"kernel", e4m3Run}, {"go", e4m3RunGo}} {
			for _, sc := range []struct {
				name   string
				same   bool
				sb, sf float64
			}{{"same", true, 1, 1}, {"scaled", false, 0.0087890625, 0.013671875}} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", impl.name, sc.name, n), func(b *testing.B) {
					i := 0
					var o e4m3Sums // outside the loop: &o escapes through impl.run
					for b.Loop() {
						o = e4m3Sums{}
						if !impl.run(x[i:i+n], y[i:i+n], sc.same, sc.sb, sc.sf, &o) {
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

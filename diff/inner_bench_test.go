package diff

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

const benchN = 1 << 16

func benchFloats(seed uint32) []float32 {
	out := make([]float32, benchN)
	s := seed | 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		out[i] = numfmt.RoundTo(numfmt.BF16, float32(int32(s%2001)-1000)/20000)
	}
	return out
}

// perPair reports the time per element pair of a benchmark over n pairs.
func perPair(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pair")
}

// bf16Bytes is the raw little-endian BF16 bytes of x (BF16 values).
func bf16Bytes(x []float32) []byte {
	out := make([]byte, 2*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(math.Float32bits(v)>>16))
	}
	return out
}

// BenchmarkAccumulate is the statistics of a segment of pairs: "float32"
// through accumulate (the AVX2/FMA kernel where the CPU has one), "go"
// through the Go loop alone, "bf16" from raw BF16 values without decoding.
func BenchmarkAccumulate(b *testing.B) {
	x, y := benchFloats(1)[:segMax], benchFloats(2)[:segMax]
	xb, yb := bf16Bytes(x), bf16Bytes(y)
	for _, c := range []struct {
		name  string
		bytes int64
		run   func(p *partial)
	}{
		{"float32", 4, func(p *partial) { p.accumulate(x, y) }},
		{"go", 4, func(*partial) {
			var l lanes
			accumulateGo(&l, x, y)
		}},
		{"bf16", 2, func(p *partial) { p.accumulateBF16(xb, yb) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(segMax * 2 * c.bytes)
			var p partial
			for b.Loop() {
				c.run(&p)
			}
			perPair(b, segMax)
		})
	}
}

// BenchmarkSegmentBF16 is everything a segment of two BF16 sides costs:
// "raw" counts the changed values and accumulates from the raw bytes,
// "decoded" decodes both sides first (the path of other dtypes).
func BenchmarkSegmentBF16(b *testing.B) {
	x, y := bf16Bytes(benchFloats(1)[:segMax]), bf16Bytes(benchFloats(2)[:segMax])
	for _, raw := range []bool{true, false} {
		name := map[bool]string{true: "raw", false: "decoded"}[raw]
		b.Run(name, func(b *testing.B) {
			sd := func() *side { return &side{dt: numfmt.BF16, esize: 2, rows: 1, cols: segMax} }
			p := &plan{kind: kindSame, bs: sd(), fs: sd(), scalesSame: true, bf16: raw}
			e, sc := &engine{}, &scratch{}
			b.SetBytes(segMax * 2 * 2)
			var r partial
			for b.Loop() {
				if err := e.segments(p, x, y, 0, segMax, sc, &r, true); err != nil {
					b.Fatal(err)
				}
			}
			perPair(b, segMax)
		})
	}
}

func BenchmarkDecodeFP8Scaled(b *testing.B) {
	raw := make([]byte, benchN)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	s := &side{dt: numfmt.F8E4M3, esize: 1, rows: 1, cols: benchN, scale: make([]float32, benchN/128), bm: 128, bn: 128, sCols: benchN / 128}
	for i := range s.scale {
		s.scale[i] = 0.001
	}
	dst := make([]float32, benchN)
	b.SetBytes(benchN)
	for b.Loop() {
		_ = s.decode(raw, 0, dst)
	}
}

func BenchmarkDecodeBF16(b *testing.B) {
	raw := make([]byte, 2*benchN)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	s := &side{dt: numfmt.BF16, esize: 2, rows: 1, cols: benchN}
	dst := make([]float32, benchN)
	b.SetBytes(2 * benchN)
	for b.Loop() {
		_ = s.decode(raw, 0, dst)
	}
}

func BenchmarkCountRawDiff(b *testing.B) {
	x := make([]byte, 1<<20)
	y := make([]byte, 1<<20)
	for i := 0; i < len(y); i += 14 { // every seventh bf16 value
		y[i] = 1
	}
	b.SetBytes(1 << 20)
	for b.Loop() {
		countRawDiff(x, y, 2)
	}
}

func TestCountChanged(t *testing.T) {
	t.Parallel()
	b := []float32{1, 2, 3, 4, 0}
	f := []float32{1, 2.5, 3, 4, 0}
	rb := []byte{1, 2, 3, 0x10, 5}
	rf := []byte{1, 2, 3, 0x11, 5}
	// element 1: value differs, raw same; element 3: raw differs, value same
	if got := countChanged(b, f, rb, rf, 1); got != 2 {
		t.Fatalf("countChanged = %d, want 2", got)
	}
	if got := countChanged(b, f, []byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 2, 0, 0}, 2); got != 2 {
		t.Fatalf("countChanged (2-byte) = %d, want 2", got)
	}
	if got := countRawDiff([]byte("abcdefghijklmnopq"), []byte("abcdefghijklmnopQ"), 1); got != 1 {
		t.Fatalf("countRawDiff = %d, want 1", got)
	}
}

// BenchmarkAddE4M3 measures partial.addE4M3 per block of 128 code pairs
// (the exact sums of fine-tuned-like blocks), for blocks all of one scale,
// all of two, and the two kinds mixed at random as in a fine-tune whose
// scales moved in about half of the blocks.
func BenchmarkAddE4M3(b *testing.B) {
	const nk, bn = 4096, 128
	rng := rand.New(rand.NewPCG(5, 6))
	x, y := make([]byte, nk*bn), make([]byte, nk*bn)
	fineTunedCodes(rng, x, y)
	for _, mix := range []string{"same", "scaled", "mixed"} {
		k := mixedBlocks(rng, nk, mix)
		out := make([]e4m3Sums, nk)
		if e4m3BlocksGo(x, y, bn, k, out) != nk {
			b.Fatal("NaN")
		}
		b.Run(mix, func(b *testing.B) {
			var r partial
			for b.Loop() {
				r.addE4M3(out, k)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nk, "ns/block")
		})
	}
}

// fineTunedCodes fills x with finite E4M3 codes drawn by rng and y with
// the same codes, one in seven a step away (a fine-tune's codes).
func fineTunedCodes(rng *rand.Rand, x, y []byte) {
	for i := range x {
		x[i] = e4m3NumCodes[rng.IntN(len(e4m3NumCodes))]
		y[i] = x[i]
		if rng.IntN(7) == 0 && x[i]&0x7f < 0x7e {
			y[i]++
		}
	}
}

// mixedBlocks is nk scale blocks drawn by rng: all of one scale ("same"),
// all of two ("scaled"), or the two kinds mixed at random ("mixed").
func mixedBlocks(rng *rand.Rand, nk int, mix string) []e4m3Block {
	k := make([]e4m3Block, nk)
	for j := range k {
		s := float32(rng.IntN(200)+1) * 0x1p-14
		if mix == "scaled" || mix == "mixed" && rng.IntN(2) == 0 {
			k[j] = newE4M3Block(s, s*1.0078125)
		} else {
			k[j] = newE4M3Block(s, s)
		}
	}
	return k
}

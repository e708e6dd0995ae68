package diff

import (
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
)

const benchN = 1 << 16

func benchFloats(seed uint32) []float32 {
	out := make([]float32, benchN)
	s := seed | 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		out[i] = ckpt.RoundTo(ckpt.BF16, float32(int32(s%2001)-1000)/20000)
	}
	return out
}

func BenchmarkAccumulate(b *testing.B) {
	x, y := benchFloats(1), benchFloats(2)
	b.SetBytes(benchN * 4 * 2)
	var p partial
	for b.Loop() {
		p.accumulate(x, y)
	}
}

func BenchmarkDecodeFP8Scaled(b *testing.B) {
	raw := make([]byte, benchN)
	for i := range raw {
		raw[i] = byte(i * 7)
	}
	s := &side{dt: ckpt.F8E4M3, esize: 1, rows: 1, cols: benchN, scale: make([]float32, benchN/128), bm: 128, bn: 128, sCols: benchN / 128}
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
	s := &side{dt: ckpt.BF16, esize: 2, rows: 1, cols: benchN}
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

func BenchmarkEncodeE4M3(b *testing.B) {
	x := benchFloats(3)
	b.SetBytes(benchN * 4)
	var sink byte
	for b.Loop() {
		for _, v := range x {
			sink ^= ckpt.EncodeE4M3(v * 1000)
		}
	}
	_ = sink
}

// requantBench is a block of BF16 weights and the E4M3 codes of their
// re-quantisation with every 16th code changed.
func requantBench() ([]float32, []byte, float32) {
	w := benchFloats(4)
	s := ckpt.RoundTo(ckpt.BF16, absMaxGo(w)/ckpt.E4M3MaxFinite)
	codes := make([]byte, len(w))
	for i, x := range w {
		codes[i] = ckpt.EncodeE4M3(x / s)
		if i%16 == 0 {
			codes[i] ^= 1
		}
	}
	return w, codes, s
}

func BenchmarkRequantCodes(b *testing.B) {
	w, codes, s := requantBench()
	b.SetBytes(benchN * 4)
	for b.Loop() {
		requantCodes(w, codes, s)
	}
}

func BenchmarkRequantCodesGo(b *testing.B) {
	w, codes, s := requantBench()
	b.SetBytes(benchN * 4)
	for b.Loop() {
		requantCodesGo(w, codes, s)
	}
}

func BenchmarkAbsMax(b *testing.B) {
	w := benchFloats(5)
	b.SetBytes(benchN * 4)
	for b.Loop() {
		absMax(w)
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

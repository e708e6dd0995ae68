package numfmt

import "testing"

// The re-quantisation benchmarks (moved from diff with their kernels; same
// names, data and sizes).

const benchN = 1 << 16

// benchFloats returns benchN bf16-exact values in [-0.05, 0.05].
func benchFloats(seed uint32) []float32 {
	out := make([]float32, benchN)
	s := seed | 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		out[i] = RoundTo(BF16, float32(int32(s%2001)-1000)/20000)
	}
	return out
}

func BenchmarkEncodeE4M3(b *testing.B) {
	x := benchFloats(3)
	b.SetBytes(benchN * 4)
	var sink byte
	for b.Loop() {
		for _, v := range x {
			sink ^= EncodeE4M3(v * 1000)
		}
	}
	_ = sink
}

// requantBench is a block of BF16 weights and the E4M3 codes of their
// re-quantisation with every 16th code changed.
func requantBench() ([]float32, []byte, float32) {
	w := benchFloats(4)
	s := scaleFor(absMaxGo(w), BF16)
	codes := make([]byte, len(w))
	for i, x := range w {
		codes[i] = EncodeE4M3(x / s)
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
		requantDivMismatches(w, codes, s)
	}
}

func BenchmarkRequantCodesGo(b *testing.B) {
	w, codes, s := requantBench()
	b.SetBytes(benchN * 4)
	for b.Loop() {
		requantMismatchesGo(w, codes, s, false)
	}
}

func BenchmarkAbsMax(b *testing.B) {
	w := benchFloats(5)
	b.SetBytes(benchN * 4)
	for b.Loop() {
		AbsMax(w)
	}
}

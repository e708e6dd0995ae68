//go:build amd64 && !purego

package diff

//go:generate go run -C _asm . -out ../accumulate_amd64.s

import "golang.org/x/sys/cpu"

// useFMA says whether the AVX2/FMA kernels (accumulate, e4m3Blocks) run on
// this CPU.
var useFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// accumulateF32 is accumulateGo (len(f) >= len(b)): with AVX2 and FMA the
// multiples of 8 go through accumulateFMA, the tail through the Go loop;
// the sums are the same bits (TestAccumulateKernels).
func accumulateF32(l *lanes, b, f []float32) {
	f = f[:len(b)]
	n := len(b) &^ 7
	if useFMA && n > 0 {
		accumulateFMA(l, &b[0], &f[0], n)
		b, f = b[n:], f[n:]
	}
	accumulateGo(l, b, f)
}

// accumulateRawBF16 is accumulateBF16Go (len(f) >= len(b), even): with
// AVX2 and FMA the multiples of 8 values go through accumulateBF16FMA,
// which widens the raw values itself, the tail through the Go loop.
func accumulateRawBF16(l *lanes, b, f []byte) {
	accumulateRawBF16With(bf16Best, l, b, f)
}

// bf16Best is the fastest kernel of accumulateRawBF16 this CPU runs: 2
// accumulateBF16AVX512 (with useAVX512), 1 accumulateBF16FMA, 0 none.
var bf16Best = func() int {
	switch {
	case useAVX512:
		return 2
	case useFMA:
		return 1
	}
	return 0
}()

// accumulateRawBF16With is accumulateRawBF16 with kernel kern (as
// bf16Best; one this CPU runs): the same bits whichever (TestAccumulateBF16).
func accumulateRawBF16With(kern int, l *lanes, b, f []byte) {
	f = f[:len(b)]
	n := len(b) / 2 &^ 7
	if kern > 0 && n > 0 {
		if kern == 2 {
			accumulateBF16AVX512(l, &b[0], &f[0], n)
		} else {
			accumulateBF16FMA(l, &b[0], &f[0], n)
		}
		b, f = b[2*n:], f[2*n:]
	}
	accumulateBF16Go(l, b, f)
}

// accumulateFMA adds n (a positive multiple of 8) pairs of float32 at b
// and f into the lanes, like accumulateGo.
//
//go:noescape
func accumulateFMA(l *lanes, b, f *float32, n int)

// accumulateBF16FMA adds n (a positive multiple of 8) pairs of
// little-endian BF16 values at b and f into the lanes, like
// accumulateBF16Go.
//
//go:noescape
func accumulateBF16FMA(l *lanes, b, f *byte, n int)

// accumulateBF16AVX512 is accumulateBF16FMA in 512-bit vectors (with
// useAVX512): the same bits.
//
//go:noescape
func accumulateBF16AVX512(l *lanes, b, f *byte, n int)

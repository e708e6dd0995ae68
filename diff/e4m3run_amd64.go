//go:build amd64 && !purego

package diff

import "github.com/ckpt-dev/ckpt/internal/cpufeat"

// useE4M3AVX2 says whether e4m3AVX2 runs on this CPU (AVX2 and FMA3).
var useE4M3AVX2 = useAVX2 && cpufeat.FMA()

// e4m3Run adds the statistics of the code pairs (b[i], f[i]) into o like
// e4m3RunGo, with the same results bit for bit: with AVX2 and FMA3 the
// multiples of 32 go through e4m3AVX2, the tail through the Go loop (the
// sums are exact in any order, see e4m3exact.go; TestE4M3Run).
func e4m3Run(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool {
	n := len(b) &^ 31
	if !useE4M3AVX2 || n == 0 {
		return e4m3RunGo(b, f, same, sb, sf, o)
	}
	f = f[:len(b)]
	var out [4]float64
	changed, zeroSign, ok := e4m3AVX2(&b[0], &f[0], n, same, sb != 1 || sf != 1, sb, sf, &out)
	if !ok {
		return false
	}
	// The kernel's values are e4m3·2^8: exact powers of two undo it.
	o.bb += out[0] * 0x1p-16
	o.ff += out[1] * 0x1p-16
	o.bf += out[2] * 0x1p-16
	if mx := out[3] * 0x1p-8; mx > o.mx {
		o.mx = mx
	}
	o.changed += changed
	o.zeroSign += zeroSign
	if n == len(b) {
		return true
	}
	return e4m3RunGo(b[n:], f[n:], same, sb, sf, o)
}

// e4m3AVX2 computes the statistics of the n code pairs at b and f (n a
// positive multiple of 32): into out Σv_b², Σv_f², Σv_b·v_f times 2^16
// and max |v_f·sf − v_b·sb| times 2^8 (scaled false: sb = sf = 1), and
// the counts of e4m3RunGo. It reports false if a code is NaN.
//
//go:noescape
func e4m3AVX2(b, f *byte, n int, same, scaled bool, sb, sf float64, out *[4]float64) (changed, zeroSign int64, ok bool)

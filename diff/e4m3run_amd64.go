//go:build amd64 && !purego

package diff

// e4m3Run adds the statistics of the code pairs (b[i], f[i]) into o like
// e4m3RunGo, with the same results bit for bit: with AVX2 and FMA3 the
// multiples of 32 go through e4m3AVX2, the tail through the Go loop (the
// sums are exact in any order, see e4m3exact.go; TestE4M3Run).
func e4m3Run(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool {
	n := len(b) &^ 31
	if !useFMA || n == 0 {
		return e4m3RunGo(b, f, same, sb, sf, o)
	}
	f = f[:len(b)]
	if !e4m3AVX2(&b[0], &f[0], n, same, same && sb == 1 && sf == 1, sb, sf, o) {
		return false
	}
	if n == len(b) {
		return true
	}
	return e4m3RunGo(b[n:], f[n:], same, sb, sf, o)
}

// e4m3AVX2 adds the statistics of the n code pairs at b and f (n a
// positive multiple of 32) into o like e4m3RunGo; unit says that same
// holds and sb = sf = 1 (a faster loop). It reports false, o untouched,
// if a code is NaN.
//
//go:noescape
func e4m3AVX2(b, f *byte, n int, same, unit bool, sb, sf float64, o *e4m3Sums) bool

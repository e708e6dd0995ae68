//go:build amd64 && !purego

package diff

// accumulatePairs adds the two-lane statistics of the pairs (b[i], f[i]);
// len(b) = len(f) is even. SSE2 (part of every amd64 CPU): the two lanes
// are the two halves of the registers, each operation is the one of
// accumulatePairsGo (convert, subtract, multiply, add; no fused
// multiply-add), so the sums are bit-identical; the maximum ignores NaN
// differences like the Go comparison does (TestAccumulatePairsAsm).
func accumulatePairs(l *lanes, b, f []float32) {
	n := len(b) / 2
	if n == 0 {
		return
	}
	var out [10]float64 // ss, nb, nf, d (two lanes each), max (two lanes)
	nan := accumulateSSE2(&b[0], &f[0], n, l.mx, &out)
	l.ss[0] += out[0]
	l.ss[1] += out[1]
	l.nb[0] += out[2]
	l.nb[1] += out[3]
	l.nf[0] += out[4]
	l.nf[1] += out[5]
	l.d[0] += out[6]
	l.d[1] += out[7]
	if out[8] > l.mx {
		l.mx = out[8]
	}
	if out[9] > l.mx {
		l.mx = out[9]
	}
	l.nan = l.nan || nan
}

// accumulateSSE2 runs over n pairs of float32 at b and f and writes the
// lane sums and the lane maxima of |f-b| (starting from mx) into out; it
// reports whether a difference was NaN.
//
//go:noescape
func accumulateSSE2(b, f *float32, n int, mx float64, out *[10]float64) bool

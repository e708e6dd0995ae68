//go:build !amd64 || purego

package diff

// accumulatePairs adds the two-lane statistics of the pairs (b[i], f[i]);
// len(b) = len(f) is even.
func accumulatePairs(l *lanes, b, f []float32) { accumulatePairsGo(l, b, f) }

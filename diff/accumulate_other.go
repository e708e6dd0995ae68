//go:build !amd64 || purego

package diff

// accumulateF32 is accumulateGo (len(f) >= len(b)).
func accumulateF32(l *lanes, b, f []float32) { accumulateGo(l, b, f) }

// accumulateRawBF16 is accumulateBF16Go (len(f) >= len(b), even).
func accumulateRawBF16(l *lanes, b, f []byte) { accumulateBF16Go(l, b, f) }

// bf16Best is 0 here: no kernel.
const bf16Best = 0

// accumulateRawBF16With is accumulateBF16Go here.
func accumulateRawBF16With(_ int, l *lanes, b, f []byte) { accumulateBF16Go(l, b, f) }

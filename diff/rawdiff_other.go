//go:build !amd64 || purego

package diff

// countRawDiff is countRawDiffGo here.
func countRawDiff(a, b []byte, esize int) int64 { return countRawDiffGo(a, b, esize) }

// countRawDiffWith is countRawDiffGo here.
func countRawDiffWith(_ bool, a, b []byte, esize int) int64 { return countRawDiffGo(a, b, esize) }

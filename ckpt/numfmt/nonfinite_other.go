//go:build !amd64 || purego

package numfmt

// cleanGroup is the group ScanNonFinite resolves element by element after
// a clean prefix.
const cleanGroup = 32

// cleanPrefix returns the length of a prefix of p without a NaN or Inf of
// l.
func cleanPrefix(l *lanes, p []byte) int { return cleanPrefixGo(l, p) }

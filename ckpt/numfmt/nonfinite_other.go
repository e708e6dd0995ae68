//go:build !amd64 || purego

package verify

// cleanGroup is the group scanE4M3 resolves byte by byte after a clean
// prefix.
const cleanGroup = 32

// cleanE4M3 returns the length of a prefix of p without an F8_E4M3 NaN
// code.
func cleanE4M3(p []byte) int { return cleanE4M3Go(p) }

//go:build !amd64 || purego

package xxh3s

func stripes(sum *[8]uint64, p []byte, key []uint64) { stripesGo(sum, p, key) }

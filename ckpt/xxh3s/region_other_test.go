//go:build !amd64 || purego

package xxh3s

var simdStripes = []func(*[8]uint64, []byte, []uint64){stripes}

//go:build amd64 && !purego

package xxh3s

import "unsafe"

var simdStripes = func() []func(*[8]uint64, []byte, []uint64) {
	fs := []func(*[8]uint64, []byte, []uint64){stripes,
		func(sum *[8]uint64, p []byte, key []uint64) {
			if n := min(len(p)/stripe, len(key)-7); n > 0 {
				stripesSSE2(sum, unsafe.SliceData(p), unsafe.SliceData(key), uintptr(n))
			}
		}}
	if hasAVX2 {
		fs = append(fs, func(sum *[8]uint64, p []byte, key []uint64) {
			if n := min(len(p)/stripe, len(key)-7); n > 0 {
				stripesAVX2(sum, unsafe.SliceData(p), unsafe.SliceData(key), uintptr(n))
			}
		})
	}
	return fs
}()

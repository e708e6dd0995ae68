//go:build !amd64 || purego

package diff

// e4m3AddBlocksWith is e4m3BlocksWith followed by r.addE4M3 of the blocks
// done.
func e4m3AddBlocksWith(kern e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Sums, r *partial) int {
	done := e4m3BlocksWith(kern, b, f, bn, k, out)
	r.addE4M3(out[:done], k)
	return done
}

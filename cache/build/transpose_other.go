//go:build !amd64 || purego

package build

// transposeRows is transposeRowsGo where there is no assembly version.
func transposeRows(st []uint64, raw []byte, stride, n int) {
	transposeRowsGo(st, raw, stride, n)
}

//go:build !amd64 || purego

package diff

// e4m3Kernels is the Go loop alone here.
func e4m3Kernels() []e4m3Kernel { return []e4m3Kernel{e4m3KernelGo} }

// e4m3Run is e4m3RunGo under the scales of block k here (on amd64 a
// kernel takes over a prefix of the run, see e4m3run_amd64.go).
func e4m3Run(b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
	return e4m3RunWith(e4m3KernelGo, b, f, k, o)
}

// e4m3RunWith is e4m3Run: kern is the Go loop here.
func e4m3RunWith(_ e4m3Kernel, b, f []byte, k *e4m3Block, o *e4m3Sums) bool {
	return e4m3RunGo(b, f, k.class == e4m3Same, k.kb, k.kf, o)
}

// e4m3BlocksWith is e4m3BlocksGo: kern is the Go loop here.
func e4m3BlocksWith(_ e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	return e4m3BlocksGo(b, f, bn, k, out)
}

// e4m3Blocks is e4m3BlocksGo here.
func e4m3Blocks(b, f []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	return e4m3BlocksGo(b, f, bn, k, out)
}

// e4m3Norm is e4m3Blocks for f = b here.
func e4m3Norm(b []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	return e4m3NormWith(e4m3KernelGo, b, bn, k, out)
}

// e4m3NormWith is e4m3Norm: kern is the Go loop here.
func e4m3NormWith(_ e4m3Kernel, b []byte, bn int, k []e4m3Block, out []e4m3Sums) int {
	return e4m3BlocksGo(b, b, bn, k, out)
}

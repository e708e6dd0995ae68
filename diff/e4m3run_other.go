//go:build !amd64 || purego

package diff

// e4m3Best is the fastest kernel this CPU runs: the Go loop here.
const e4m3Best = e4m3KernelGo

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

// e4m3BlocksInto adds the sums of e4m3BlocksGo into lane 0 of out (via
// tmp) here.
func e4m3BlocksInto(b, f []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	return e4m3BlocksIntoWith(e4m3KernelGo, b, f, bn, k, out, tmp)
}

// e4m3BlocksIntoWith is e4m3BlocksInto: kern is the Go loop here.
func e4m3BlocksIntoWith(_ e4m3Kernel, b, f []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	done := e4m3BlocksGo(b, f, bn, k, tmp)
	e4m3AddInto(out, tmp[:done])
	return done
}

// e4m3NormInto is e4m3BlocksInto for f = b here.
func e4m3NormInto(b []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	return e4m3NormIntoWith(e4m3KernelGo, b, bn, k, out, tmp)
}

// e4m3NormIntoWith is e4m3NormInto: kern is the Go loop here.
func e4m3NormIntoWith(_ e4m3Kernel, b []byte, bn int, k []e4m3Block, out []e4m3Lanes, tmp []e4m3Sums) int {
	return e4m3BlocksIntoWith(e4m3KernelGo, b, b, bn, k, out, tmp)
}

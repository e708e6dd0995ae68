//go:build !amd64 || purego

package diff

// e4m3Run is e4m3RunGo here (on amd64 a kernel takes over a prefix of the
// run, see e4m3run_amd64.go).
func e4m3Run(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool {
	return e4m3RunGo(b, f, same, sb, sf, o)
}

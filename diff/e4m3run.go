package diff

// e4m3Run is e4m3RunGo (the same results bit for bit; a kernel may take
// over a prefix of the run, see e4m3exact.go).
func e4m3Run(b, f []byte, same bool, sb, sf float64, o *e4m3Sums) bool {
	return e4m3RunGo(b, f, same, sb, sf, o)
}

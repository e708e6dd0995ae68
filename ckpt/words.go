package ckpt

// An Option names an option of a library workflow by its Go spelling,
// "verify.Options.ReadData", in the hints the library writes into its
// findings and verdicts ("not checked: tensor data is read only with …").
// The library never spells a command line: the caller gives its own words
// for the options (Words), and a Go caller that gives none reads the Go
// spelling.
type Option string

// Words are a caller's names for the options its user sets, used where a
// library message tells the user which option would change a result. The
// CLI maps each Option to its flag ("--read-data"); a nil Words names the
// options by their Go spelling.
type Words map[Option]string

// Of is the caller's word for o, or o's Go spelling when the caller has
// none.
func (w Words) Of(o Option) string {
	if s, ok := w[o]; ok {
		return s
	}
	return string(o)
}

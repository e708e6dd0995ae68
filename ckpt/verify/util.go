package verify

import "strconv"

func strconvG(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

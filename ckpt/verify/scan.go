package verify

import (
	"math"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// counts are the value statistics of one tensor (or one chunk of it).
type counts struct {
	n          int64 // values scanned
	nan, inf   int64
	zero, neg  int64 // scales only
	first      int64 // element index of the first bad value, -1 if none
	firstValue string
	// over counts finite scales whose product with the largest F8_E4M3
	// code overflows bf16 (scales only); overFirst (-1 if none) and
	// overValue are the first of them.
	over      int64
	overFirst int64
	overValue float32
}

func (c *counts) bad() int64 { return c.nan + c.inf + c.zero + c.neg }

func (c *counts) note(idx int64, v string) {
	if c.first < 0 {
		c.first, c.firstValue = idx, v
	}
}

// merge adds a later chunk's counts.
func (c *counts) merge(o *counts) {
	c.n += o.n
	c.nan += o.nan
	c.inf += o.inf
	c.zero += o.zero
	c.neg += o.neg
	if c.first < 0 && o.first >= 0 {
		c.first, c.firstValue = o.first, o.firstValue
	}
	if c.over == 0 && o.over > 0 {
		c.overFirst, c.overValue = o.overFirst, o.overValue
	}
	c.over += o.over
}

// scanValues counts the NaN and Inf values of dt in p (numfmt's one
// scanner, ScanNonFinite) and notes the first; base is the element index
// of p[0].
func scanValues(dt numfmt.DType, p []byte, base int64, c *counts) {
	s := numfmt.ScanNonFinite(dt, p)
	c.n += int64(len(p) * 8 / dt.Bits())
	c.nan += s.NaN
	c.inf += s.Inf
	if s.First >= 0 {
		v := "NaN"
		if s.FirstInf {
			v = "Inf"
		}
		c.note(base+s.First, v)
	}
}

// scanScales decodes scale values and counts those that are not finite
// and positive.
func scanScales(dt numfmt.DType, p []byte, base int64, c *counts, tmp []float32) []float32 {
	n := len(p) * 8 / dt.Bits()
	if cap(tmp) < n {
		tmp = make([]float32, n)
	}
	tmp = tmp[:n]
	if err := numfmt.DecodeFloat32(dt, p, tmp); err != nil {
		return tmp
	}
	c.n += int64(n)
	for i, v := range tmp {
		switch {
		case v != v:
			c.nan++
			c.note(base+int64(i), "NaN")
		case math.IsInf(float64(v), 0):
			c.inf++
			c.note(base+int64(i), formatFloat(v))
		case v == 0:
			c.zero++
			c.note(base+int64(i), "0")
		case v < 0:
			c.neg++
			c.note(base+int64(i), formatFloat(v))
		case !numfmt.FiniteIn(numfmt.BF16, v*numfmt.E4M3MaxFinite):
			if c.over == 0 {
				c.overFirst, c.overValue = base+int64(i), v
			}
			c.over++
		}
	}
	return tmp
}

func formatFloat(v float32) string {
	return formatG(float64(v))
}

func formatG(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconvG(v)
}

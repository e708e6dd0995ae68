package diff

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// NonFiniteCounts are the NaN and Inf values of each side of a tensor.
type NonFiniteCounts struct {
	BaseNaN int64 `json:"base_nan"`
	BaseInf int64 `json:"base_inf"`
	FTNaN   int64 `json:"ft_nan"`
	FTInf   int64 `json:"ft_inf"`
}

// nonFinite accumulates NaN/Inf counts. accumulate only calls count for a
// run whose differences are NaN or Inf, so finite tensors cost nothing.
type nonFinite NonFiniteCounts

func (n *nonFinite) add(o nonFinite) {
	n.BaseNaN += o.BaseNaN
	n.BaseInf += o.BaseInf
	n.FTNaN += o.FTNaN
	n.FTInf += o.FTInf
}

func (n *nonFinite) count(b, f []float32) {
	nan, inf := numfmt.CountNonFiniteF32(b)
	n.BaseNaN += nan
	n.BaseInf += inf
	nan, inf = numfmt.CountNonFiniteF32(f[:len(b)])
	n.FTNaN += nan
	n.FTInf += inf
}

// note records the counts in the row and says which side is not finite:
// "ft has 1666 NaN (base is finite): max_abs_diff, rel_l2 and cosine are
// not defined".
func (n *nonFinite) note(t *Tensor) {
	if *n == (nonFinite{}) {
		return
	}
	c := NonFiniteCounts(*n)
	t.NonFinite = &c
	side := func(name string, nan, inf int64) string {
		var parts []string
		if nan > 0 {
			parts = append(parts, fmt.Sprintf("%d NaN", nan))
		}
		if inf > 0 {
			parts = append(parts, fmt.Sprintf("%d Inf", inf))
		}
		if len(parts) == 0 {
			return ""
		}
		return name + " has " + strings.Join(parts, " and ")
	}
	b, f := side("base", c.BaseNaN, c.BaseInf), side("ft", c.FTNaN, c.FTInf)
	switch {
	case b != "" && f != "":
		t.Note = b + ", " + f
	case b != "":
		t.Note = b + " (ft is finite)"
	default:
		t.Note = f + " (base is finite)"
	}
	t.Note += ": statistics over them are not defined (null in JSON)"
}

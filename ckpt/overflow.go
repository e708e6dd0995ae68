package ckpt

import (
	"fmt"
	"math"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Overflow: finite source values whose conversion is not finite (a BF16
// or F32 value above the F16 maximum converted to F16, an FP8 code times a
// huge block scale dequantised to BF16). Such results count as non-finite
// values, as a NaN or Inf in the source would (NonFiniteError with Output
// set).

// ScaleOverflow is a block scale whose product with the largest code of
// its weight is not finite in the dtype the weight is dequantised to.
type ScaleOverflow struct {
	Block [2]int64 // block row and column (the scale's element)
	Scale float32
}

// OverflowingScales returns how many block scales of v times the largest
// F8_E4M3 code (448), computed in float32 and rounded to dt (BF16, F16 or
// F32), are not finite, and the first one. Non-finite scales are not
// counted (they are non-finite sources). It reads nothing: the scale is
// already decoded.
func (v *Values) OverflowingScales(dt numfmt.DType) (n int64, first ScaleOverflow) {
	if v.Scale == nil {
		return 0, first
	}
	for i, s := range v.blocks.Scale {
		a := float32(math.Abs(float64(s)))
		if a > math.MaxFloat32 || s != s || numfmt.FiniteIn(dt, a*numfmt.E4M3MaxFinite) {
			continue
		}
		if n == 0 {
			first = ScaleOverflow{Block: [2]int64{int64(i) / v.blocks.SCols, int64(i) % v.blocks.SCols}, Scale: s}
		}
		n++
	}
	return n, first
}

// CountOverflow reads the whole tensor of v and counts the values that are
// finite in the source but not once converted to dt (BF16, F16 or F32):
// dequantised when v has a block scale (float32 product), then rounded to
// dt. It is for the rare tensors found to overflow (the caller's cheap
// test, OverflowingScales or a scan of converted output, fired).
func (v *Values) CountOverflow(dt numfmt.DType) (int64, error) {
	var over int64
	rows := v.ChunkRows(4 << 20)
	var raw []byte
	vals := make([]float32, rows*v.Cols)
	for r := int64(0); r < v.Rows; r += rows {
		n := min(rows, v.Rows-r)
		var err error
		raw, err = v.ReadRows(r, n, raw, vals)
		if err != nil {
			return 0, err
		}
		bad := numfmt.CountNotFinite(dt, vals[:n*v.Cols])
		if bad > 0 {
			// Non-finite source values stay non-finite: not overflow.
			nan, inf := CountNonFinite(v.T.DType, raw)
			bad -= nan + inf
		}
		over += bad
	}
	return over, nil
}

// Overflow records count finite values of t that are not finite once
// converted to out (why: how they overflow, for the message): under Allow
// they are counted (NonFinite.Overflow); otherwise it returns
// *NonFiniteError with Output set. A zero count or a nil guard does nothing.
func (g *FiniteGuard) Overflow(t *Tensor, out numfmt.DType, count int64, why string) error {
	return g.OverflowOf(t, int64(t.Numel()), out, count, why)
}

// OverflowOf is Overflow for a tensor read as values values (a packed
// E2M1 weight holds two per stored element: Values.NumValues).
func (g *FiniteGuard) OverflowOf(t *Tensor, values int64, out numfmt.DType, count int64, why string) error {
	if g == nil || count == 0 {
		return nil
	}
	if !g.Allow {
		return &NonFiniteError{NonFinite: NonFinite{Tensor: t.Name, Overflow: count}, DType: t.DType, Values: values, Action: g.Action, Output: out, Why: why}
	}
	g.add(t.Name, 0, 0, count)
	return nil
}

func (e *NonFiniteError) overflowMessage() string {
	why := ""
	if e.Why != "" {
		why = " (" + e.Why + ")"
	}
	return fmt.Sprintf("tensor %s (%s): %d of %d values are finite but overflow to Inf when converted to %s%s: refusing to %s",
		Quote(e.Tensor), e.DType, e.Overflow, e.Values, e.Output, why, e.Action)
}

// ScaleOverflowWhy says which block scales overflow dt (for
// FiniteGuard.Overflow and verify's warning).
func ScaleOverflowWhy(scale string, n int64, first ScaleOverflow, dt numfmt.DType) string {
	return fmt.Sprintf("%d block scale(s) of %s times the largest code %d exceed the %s maximum %.5g, the first at block [%d, %d] = %.5g",
		n, Quote(scale), numfmt.E4M3MaxFinite, dt, numfmt.MaxFinite(dt), first.Block[0], first.Block[1], first.Scale)
}

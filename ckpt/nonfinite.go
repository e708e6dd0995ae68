package ckpt

import (
	"fmt"
	"sort"
	"sync"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// NonFinite counts the NaN and Inf values of one tensor.
type NonFinite struct {
	Tensor string `json:"tensor"`
	NaN    int64  `json:"nan"`
	Inf    int64  `json:"inf"`
	// Overflow counts finite source values whose conversion (to the
	// output dtype, or dequantised with their block scale) is not finite.
	Overflow int64 `json:"overflow,omitempty"`
}

// NonFiniteError says a tensor holds NaN or Inf values and the operation
// (Action, e.g. "build a cache from it") was refused.
type NonFiniteError struct {
	NonFinite
	DType  numfmt.DType
	Values int64 // elements of the tensor
	Action string
	// Output, when set, is the dtype the tensor's finite values were
	// converted to and Overflow counts those that are not finite there
	// (Why says how, e.g. the first overflowing block scale).
	Output numfmt.DType
	Why    string
	// ReadAs, when set, is how the tensor's bytes are read (an MXFP4
	// scale stored as U8 is read as F8_E8M0).
	ReadAs numfmt.DType
}

// Error is the message of the NonFiniteError: what was refused and how to
// proceed anyway, the option named by its Go spelling
// (Options.AllowNonFinite); With names it in a caller's words.
func (e *NonFiniteError) Error() string { return e.With(nil) }

// With is the message of the NonFiniteError, w naming the option that
// proceeds anyway (AllowNonFinite).
func (e *NonFiniteError) With(w Words) string {
	return e.refusal() + " (pass " + w.Of("AllowNonFinite") + " to proceed anyway)"
}

// refusal says which tensor holds what and what was refused, without how to
// proceed anyway.
func (e *NonFiniteError) refusal() string {
	if e.Output != "" {
		return e.overflowMessage()
	}
	what := fmt.Sprintf("%d NaN and %d Inf", e.NaN, e.Inf)
	dt, as := e.DType, string(e.DType)
	if e.ReadAs != "" {
		dt, as = e.ReadAs, fmt.Sprintf("%s read as %s", e.DType, e.ReadAs)
	}
	switch dt {
	case numfmt.F8E4M3:
		what = fmt.Sprintf("%d NaN codes (0x7f/0xff)", e.NaN)
	case numfmt.F8E8M0:
		what = fmt.Sprintf("%d NaN codes (0xff)", e.NaN)
	}
	return fmt.Sprintf("tensor %s (%s) has %s of %d values: refusing to %s", Quote(e.Tensor), as, what, e.Values, e.Action)
}

// CountNonFinite counts NaN and Inf encodings in raw little-endian
// elements of dt (numfmt.ScanNonFinite, the one scanner): an all-ones
// exponent for F8_E5M2, BF16, F16, F32 and F64 (a zero mantissa is Inf),
// the NaN codes 0x7f/0xff of F8_E4M3 (which has no Inf), 0xff of F8_E8M0
// and 0x80 of the FNUZ formats. Other dtypes count nothing.
func CountNonFinite(dt numfmt.DType, raw []byte) (nan, inf int64) {
	s := numfmt.ScanNonFinite(dt, raw)
	return s.NaN, s.Inf
}

// FiniteGuard checks tensor data for NaN and Inf as it streams by. With
// Allow it only counts; otherwise the first chunk holding any makes Check
// count that whole tensor and return *NonFiniteError. A nil guard checks
// nothing. It is safe for concurrent use.
type FiniteGuard struct {
	Allow  bool
	Action string // for NonFiniteError, e.g. "build a cache from it"
	mu     sync.Mutex
	counts map[string]*NonFinite
}

// Check counts NaN and Inf in raw, a chunk of t's data.
func (g *FiniteGuard) Check(t *Tensor, raw []byte) error {
	if g == nil {
		return nil
	}
	nan, inf := CountNonFinite(t.DType, raw)
	if nan+inf == 0 {
		return nil
	}
	if !g.Allow {
		return g.refuse(t)
	}
	g.add(t.Name, nan, inf, 0)
	return nil
}

// CheckTensor reads and checks a whole tensor (for small ones such as
// block scales, that are not streamed).
func (g *FiniteGuard) CheckTensor(t *Tensor) error {
	if g == nil {
		return nil
	}
	if !numfmt.CanBeNonFinite(t.DType) {
		return nil
	}
	nan, inf, err := countTensor(t)
	if err != nil {
		return err
	}
	if nan+inf == 0 {
		return nil
	}
	if !g.Allow {
		return &NonFiniteError{NonFinite: NonFinite{Tensor: t.Name, NaN: nan, Inf: inf}, DType: t.DType, Values: int64(t.Numel()), Action: g.Action}
	}
	g.add(t.Name, nan, inf, 0)
	return nil
}

// CheckScales checks every scale a dequantised weight's values v are
// multiplied by, as CheckTensor checks a tensor, whatever the scheme: the
// block or channel scale of FP8 weights, an MXFP4 weight's E8M0 codes
// (stored as U8, read as F8_E8M0: 0xff is NaN), an NVFP4 weight's F8_E4M3
// block scales and its F32 global scale (weight_scale_2). A NaN or Inf
// scale makes values NaN or Inf: refused (*NonFiniteError naming the
// scale) unless Allow, when the scale's counts are kept. Values of plain
// tensors have no scale: nothing is checked.
func (g *FiniteGuard) CheckScales(v *Values) error {
	if g == nil || v == nil || v.Scale == nil {
		return nil
	}
	if v.Scheme == quant.MXFP4 {
		nan, _ := CountNonFinite(numfmt.F8E8M0, v.codes)
		if nan == 0 {
			return nil
		}
		if !g.Allow {
			return &NonFiniteError{NonFinite: NonFinite{Tensor: v.Scale.Name, NaN: nan}, DType: v.Scale.DType, ReadAs: numfmt.F8E8M0,
				Values: int64(len(v.codes)), Action: g.Action}
		}
		g.add(v.Scale.Name, nan, 0, 0)
		return nil
	}
	if err := g.CheckTensor(v.Scale); err != nil {
		return err
	}
	if v.Global != nil {
		return g.CheckTensor(v.Global)
	}
	return nil
}

func (g *FiniteGuard) refuse(t *Tensor) error {
	nan, inf, err := countTensor(t)
	if err != nil {
		return err
	}
	return &NonFiniteError{NonFinite: NonFinite{Tensor: t.Name, NaN: nan, Inf: inf}, DType: t.DType, Values: int64(t.Numel()), Action: g.Action}
}

func (g *FiniteGuard) add(name string, nan, inf, over int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.counts == nil {
		g.counts = map[string]*NonFinite{}
	}
	c := g.counts[name]
	if c == nil {
		c = &NonFinite{Tensor: name}
		g.counts[name] = c
	}
	c.NaN += nan
	c.Inf += inf
	c.Overflow += over
}

// Counts returns the tensors found with NaN or Inf (under Allow), in
// natural order of name.
func (g *FiniteGuard) Counts() []NonFinite {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]NonFinite, 0, len(g.counts))
	for _, c := range g.counts {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool { return NaturalLess(out[i].Tensor, out[j].Tensor) })
	return out
}

// countTensor counts a whole tensor's NaN and Inf, 4 MiB at a time.
func countTensor(t *Tensor) (nan, inf int64, err error) {
	n := int64(t.NBytes())
	buf := make([]byte, min(n, 4<<20))
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if _, err := t.ReadAt(buf[:k], off); err != nil {
			return 0, 0, err
		}
		a, b := CountNonFinite(t.DType, buf[:k])
		nan, inf = nan+a, inf+b
		off += k
	}
	return nan, inf, nil
}

// NonFiniteNote summarises tensors written with NaN/Inf values kept (the
// first three by name), or returns "" when there are none; w are the
// caller's words for the option that kept them (AllowNonFinite).
func NonFiniteNote(nf []NonFinite, w Words) string {
	if len(nf) == 0 {
		return ""
	}
	return fmt.Sprintf("%d source tensor(s) hold NaN or Inf (or overflow when converted), kept as they are (%s): %s",
		len(nf), w.Of("AllowNonFinite"), NonFiniteKept(nf))
}

// NonFiniteKept lists the first three tensors of nf (their name and
// counts), and how many more there are.
func NonFiniteKept(nf []NonFinite) string {
	var first string
	for i, c := range nf {
		if i == 3 {
			first += fmt.Sprintf(", and %d more", len(nf)-3)
			break
		}
		if i > 0 {
			first += ", "
		}
		switch {
		case c.Overflow > 0 && c.NaN+c.Inf == 0:
			first += fmt.Sprintf("%s (%d finite value(s) overflow to Inf when converted)", EscapeName(c.Tensor), c.Overflow)
		case c.Overflow > 0:
			first += fmt.Sprintf("%s (%d NaN, %d Inf, and %d finite value(s) overflow to Inf when converted)", EscapeName(c.Tensor), c.NaN, c.Inf, c.Overflow)
		default:
			first += fmt.Sprintf("%s (%d NaN, %d Inf)", EscapeName(c.Tensor), c.NaN, c.Inf)
		}
	}
	return first
}

package ckpt

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"
	"sync"
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
	DType  DType
	Values int64 // elements of the tensor
	Action string
	// Output, when set, is the dtype the tensor's finite values were
	// converted to and Overflow counts those that are not finite there
	// (Why says how, e.g. the first overflowing block scale).
	Output DType
	Why    string
}

func (e *NonFiniteError) Error() string {
	if e.Output != "" {
		return e.overflowMessage()
	}
	what := fmt.Sprintf("%d NaN and %d Inf", e.NaN, e.Inf)
	if e.DType == F8E4M3 {
		what = fmt.Sprintf("%d NaN codes (0x7f/0xff)", e.NaN)
	}
	return fmt.Sprintf("tensor %s (%s) has %s of %d values: refusing to %s (pass --allow-nonfinite to proceed anyway)",
		Quote(e.Tensor), e.DType, what, e.Values, e.Action)
}

// lanes describes where a dtype's exponent is: every lane of width bytes
// whose exp bits are all ones is NaN or Inf (mantissa bits man zero: Inf).
type lanes struct {
	width       int
	exp, lo     uint64 // exponent mask and its lowest bit, in one lane
	sign        uint64 // the lane's top bit
	man         uint64 // mantissa mask (0: every hit is NaN)
	nanOnlyCode int    // for 8-bit formats with one NaN code (FNUZ, E8M0): the code; else -1
}

var laneTable = map[DType]lanes{
	F8E4M3: {width: 1, exp: 0x7f, lo: 0x01, sign: 0x80, nanOnlyCode: -1},
	F8E5M2: {width: 1, exp: 0x7c, lo: 0x04, sign: 0x80, man: 0x03, nanOnlyCode: -1},
	BF16:   {width: 2, exp: 0x7f80, lo: 0x0080, sign: 0x8000, man: 0x007f, nanOnlyCode: -1},
	F16:    {width: 2, exp: 0x7c00, lo: 0x0400, sign: 0x8000, man: 0x03ff, nanOnlyCode: -1},
	F32:    {width: 4, exp: 0x7f800000, lo: 0x00800000, sign: 0x80000000, man: 0x007fffff, nanOnlyCode: -1},
	F64:    {width: 8, exp: 0x7ff0000000000000, lo: 0x0010000000000000, sign: 0x8000000000000000, man: 0x000fffffffffffff, nanOnlyCode: -1},

	F8E8M0:     {width: 1, nanOnlyCode: 0xff},
	F8E4M3FNUZ: {width: 1, nanOnlyCode: 0x80},
	F8E5M2FNUZ: {width: 1, nanOnlyCode: 0x80},
}

func repeat(v uint64, width int) uint64 {
	var out uint64
	for i := 0; i < 8; i += width {
		out |= v << (8 * i)
	}
	return out
}

// CountNonFinite counts NaN and Inf encodings in raw little-endian
// elements of dt: an all-ones exponent for F8_E5M2, BF16, F16, F32 and F64
// (a zero mantissa is Inf), the NaN codes 0x7f/0xff of F8_E4M3 (which has
// no Inf), 0xff of F8_E8M0 and 0x80 of the FNUZ formats. Other dtypes
// count nothing. Eight bytes are tested at a time.
func CountNonFinite(dt DType, raw []byte) (nan, inf int64) {
	l, ok := laneTable[dt]
	if !ok {
		return 0, 0
	}
	if l.nanOnlyCode >= 0 {
		c := byte(l.nanOnlyCode)
		for _, b := range raw {
			if b == c {
				nan++
			}
		}
		return nan, 0
	}
	exp, lo, sign := repeat(l.exp, l.width), repeat(l.lo, l.width), repeat(l.sign, l.width)
	word := func(w uint64) {
		// A lane's masked exponent plus its lowest bit carries into the
		// lane's top bit only when the exponent is all ones.
		hits := ((w & exp) + lo) & sign
		if hits == 0 {
			return
		}
		if l.man == 0 {
			nan += int64(bits.OnesCount64(hits))
			return
		}
		for k := 0; k < 8; k += l.width {
			lane := (w >> (8 * k)) & (l.sign | l.exp | l.man)
			if lane&l.exp == l.exp {
				if lane&l.man == 0 {
					inf++
				} else {
					nan++
				}
			}
		}
	}
	i := 0
	for ; i+32 <= len(raw); i += 32 {
		b := raw[i : i+32 : i+32]
		w0, w1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
		w2, w3 := binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:])
		if (((w0&exp)+lo)|((w1&exp)+lo)|((w2&exp)+lo)|((w3&exp)+lo))&sign == 0 {
			continue
		}
		word(w0)
		word(w1)
		word(w2)
		word(w3)
	}
	for ; i+8 <= len(raw); i += 8 {
		word(binary.LittleEndian.Uint64(raw[i:]))
	}
	n := i
	for i := n; i+l.width <= len(raw); i += l.width {
		var lane uint64
		for k := l.width - 1; k >= 0; k-- {
			lane = lane<<8 | uint64(raw[i+k])
		}
		if lane&l.exp == l.exp {
			if l.man != 0 && lane&l.man == 0 {
				inf++
			} else {
				nan++
			}
		}
	}
	return nan, inf
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
	if _, ok := laneTable[t.DType]; !ok {
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
// first three by name), or returns "" when there are none.
func NonFiniteNote(nf []NonFinite) string {
	if len(nf) == 0 {
		return ""
	}
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
	return fmt.Sprintf("%d source tensor(s) hold NaN or Inf (or overflow when converted), kept as they are (--allow-nonfinite): %s", len(nf), first)
}

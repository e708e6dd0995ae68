package mapping

import (
	"fmt"
	"path"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Op is the operation of a transform step (Step.Op) or of a value op
// (ValueOp.Op). Its value is its JSON spelling, so a profile or a plan
// fingerprint reads and writes it as the string it always was, and a
// misspelt op survives decoding to be reported by Validate.
type Op string

// The transform vocabulary (see Step and the table ops).
const (
	OpRound      Op = "round"
	OpAdd        Op = "add"
	OpNegExp     Op = "neg_exp"
	OpSelectCols Op = "select_cols"
	OpFuse       Op = "fuse"
	OpPad        Op = "pad"
	OpTranspose  Op = "transpose"
	OpReshape    Op = "reshape"
)

// opSpec is one op of the vocabulary: the Step fields it takes, whether
// it is a value op (elementwise, applied in listed order) or a layout op
// and then its place in the fixed order of layout steps, and the three
// things the package does with a step: check it (Validate), apply it to
// the chain of one target (planning), and describe it (Entry.Describe).
type opSpec struct {
	op     Op
	params string // the Step fields the op reads
	// layout is the op's place among the layout steps (1, 2, ...); 0 for
	// a value op.
	layout   int
	check    func(s *Step, i, sources int) error
	plan     func(s *Step, c *chain) error
	describe func(s *Step, e *Entry) string
	// inexact, for a value op whose result another implementation (the
	// serving host's torch) does not reproduce bit for bit, is how close
	// it does; nil for an op whose result is exactly reproducible.
	inexact *Tolerance
}

// ops is the transform vocabulary, value ops first, then the layout ops
// in the order a rule must list them. It is the one place that interprets
// a step.
var ops = []opSpec{
	{op: OpRound, params: "dtype",
		check: func(s *Step, i, _ int) error {
			if s.DType != "BF16" {
				return fmt.Errorf("step %d: round supports dtype BF16, got %q", i, s.DType)
			}
			return nil
		},
		plan: func(s *Step, c *chain) error {
			c.values = append(c.values, ValueOp{Op: OpRound, DType: s.DType})
			return nil
		},
		describe: func(s *Step, _ *Entry) string { return "round(" + strings.ToLower(s.DType) + ")" },
	},
	{op: OpAdd, params: "value",
		check: func(s *Step, i, _ int) error {
			if s.Value == nil {
				return fmt.Errorf("step %d: add needs a value", i)
			}
			return nil
		},
		plan: func(s *Step, c *chain) error {
			c.values = append(c.values, ValueOp{Op: OpAdd, Value: *s.Value})
			return nil
		},
		describe: func(s *Step, _ *Entry) string { return fmt.Sprintf("add(%g)", *s.Value) },
	},
	{op: OpNegExp,
		check: func(*Step, int, int) error { return nil },
		plan: func(_ *Step, c *chain) error {
			c.values = append(c.values, ValueOp{Op: OpNegExp})
			return nil
		},
		describe: func(*Step, *Entry) string { return "neg_exp(float32)" },
		// torch 2.15.0's float32 exp (DEFAULT, AVX2 and AVX-512 kernels
		// alike) is one ulp from the correctly rounded NegExp32 for 45 of
		// the 65,280 finite bf16 inputs; the interop suite's transformers
		// leg measures it with torch itself.
		inexact: &Tolerance{Op: OpNegExp, ULP: 1, Why: "transcendental: within 1 ulp of float32 " +
			"(torch's float32 exp is not correctly rounded; ckpt's −exp is)"},
	},
	{op: OpSelectCols, params: "start, count, unit, pad, repeat", layout: 1,
		check: func(s *Step, i, _ int) error {
			for j, e := range []string{s.Start, s.Count, s.Unit, s.Pad, s.Repeat} {
				if e == "" && j >= 2 {
					continue
				}
				if err := checkSyntax(e); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			if s.Pad != "" && s.Unit == "" {
				return fmt.Errorf("step %d: select_cols pads units: pad needs unit", i)
			}
			return nil
		},
		plan: func(s *Step, c *chain) error {
			var err error
			if c.colStart, err = evalExpr(s.Start, c.vars); err != nil {
				return err
			}
			if c.colCount, err = evalExpr(s.Count, c.vars); err != nil {
				return err
			}
			c.colUnit, c.colPad, c.colRepeat = c.colCount, 0, 1
			ev := func(e string, dst *int64) {
				if err == nil && e != "" {
					*dst, err = evalExpr(e, c.vars)
				}
			}
			ev(s.Unit, &c.colUnit)
			ev(s.Pad, &c.colPad)
			ev(s.Repeat, &c.colRepeat)
			if err != nil {
				return err
			}
			switch {
			case c.colUnit <= 0 || c.colCount%c.colUnit != 0:
				return fmt.Errorf("select_cols: %d columns are not whole units of %d", c.colCount, c.colUnit)
			case c.colPad < 0 || c.colRepeat < 1:
				return fmt.Errorf("select_cols: pad %d and repeat %d must be at least 0 and 1", c.colPad, c.colRepeat)
			}
			return nil
		},
		describe: func(s *Step, _ *Entry) string {
			d := fmt.Sprintf("select_cols(start=%s, count=%s", s.Start, s.Count)
			if s.Unit != "" {
				d += ", unit=" + s.Unit
			}
			if s.Pad != "" {
				d += ", pad=" + s.Pad
			}
			if s.Repeat != "" {
				d += ", repeat=" + s.Repeat
			}
			return d + ")"
		},
	},
	{op: OpFuse, params: "parts, interleave", layout: 2,
		check: checkFuse,
		plan: func(s *Step, c *chain) error {
			for _, pt := range s.Parts {
				rp, err := resolvePart(pt, c.rows[pt.Source], c.vars)
				if err != nil {
					return fmt.Errorf("part %s: %v", pt.Label, err)
				}
				c.parts = append(c.parts, rp)
			}
			c.interleave = c.interleave || s.Interleave
			return nil
		},
		describe: describeFuse,
	},
	{op: OpPad, params: "rows, cols", layout: 3,
		check: func(s *Step, i, _ int) error {
			if s.Rows == "" && s.Cols == "" {
				return fmt.Errorf("step %d: pad needs rows or cols", i)
			}
			for _, e := range []string{s.Rows, s.Cols} {
				if e == "" {
					continue
				}
				if err := checkSyntax(e); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			return nil
		},
		plan: func(s *Step, c *chain) error {
			var err error
			if s.Rows != "" {
				if c.padRows, err = evalExpr(s.Rows, c.vars); err != nil {
					return err
				}
			}
			if s.Cols != "" {
				c.padCols, err = evalExpr(s.Cols, c.vars)
			}
			return err
		},
		describe: func(s *Step, _ *Entry) string {
			var a []string
			if s.Rows != "" {
				a = append(a, "rows="+s.Rows)
			}
			if s.Cols != "" {
				a = append(a, "cols="+s.Cols)
			}
			return "pad(" + strings.Join(a, ", ") + ")"
		},
	},
	{op: OpTranspose, layout: 4,
		check: func(*Step, int, int) error { return nil },
		plan: func(_ *Step, c *chain) error {
			c.transpose = true
			return nil
		},
		describe: func(_ *Step, e *Entry) string {
			if e.BatchRows > 0 {
				return fmt.Sprintf("transpose(each run of %d rows)", e.BatchRows)
			}
			return "transpose"
		},
	},
	{op: OpReshape, params: "shape", layout: 5,
		check: func(s *Step, i, _ int) error {
			if len(s.Shape) == 0 {
				return fmt.Errorf("step %d: reshape needs a shape", i)
			}
			for _, e := range s.Shape {
				if err := checkSyntax(e); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
			return nil
		},
		plan: func(s *Step, c *chain) error {
			c.reshape = s.Shape
			return nil
		},
		describe: func(_ *Step, e *Entry) string { return "reshape(" + ckpt.FormatShape(e.Shape) + ")" },
	},
}

// Tolerance says how closely another implementation reproduces the
// result of a value op that is not exactly reproducible: within ULP units
// in the last place of the stored element type, per element, for the
// reason Why. A comparison of a file whose entry applies such an op
// with a file the serving stack wrote holds the two within ULP, not bit
// for bit (cache/check).
type Tolerance struct {
	Op  Op     `json:"op"`
	ULP uint64 `json:"ulp"`
	Why string `json:"why"`
}

// Tolerance is how closely the op's result is reproducible: nil when it
// is exactly (every op but neg_exp), or for an unknown op.
func (op Op) Tolerance() *Tolerance {
	if s := op.spec(); s != nil && s.inexact != nil {
		t := *s.inexact
		return &t
	}
	return nil
}

// stepsTolerance is the widest tolerance of the ops of steps (the first
// of the widest); nil when every op is exactly reproducible.
func stepsTolerance(steps []Step) *Tolerance {
	var out *Tolerance
	for _, s := range steps {
		if t := s.Op.Tolerance(); t != nil && (out == nil || t.ULP > out.ULP) {
			out = t
		}
	}
	return out
}

// Tolerance is how closely the entry's file is reproducible by another
// implementation of its transform: the widest tolerance of the value ops
// its steps apply, nil when every one is exactly reproducible (then
// only the same bytes are the same file).
func (e *Entry) Tolerance() *Tolerance { return stepsTolerance(e.Steps) }

// FileTolerance is the tolerance of the cache file named file (its path
// relative to the cache folder, e.g.
// "layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin") by
// the profile's rules, for a comparison that has the file but not its
// plan entry (cache compare): the tolerance of the first rule with a not
// exactly reproducible op whose target, dtype and layout name the file,
// and that target; nil when no such rule names it.
func (p *Profile) FileTolerance(file string) (*Tolerance, string) {
	if p == nil {
		return nil, ""
	}
	name, base := CacheName(file), path.Base(file)
	for i := range p.Rules {
		r := &p.Rules[i]
		t := stepsTolerance(r.Transform)
		if t == nil || !strings.HasSuffix(base, FileName("", r.DType, r.Layout)) {
			continue
		}
		caps := map[string]bool{}
		if len(r.Sources) > 0 {
			if tp, err := parseTemplate(r.Sources[0]); err == nil {
				for _, c := range tp.captureNames() {
					caps[c] = true
				}
			}
		}
		nr, err := compileTarget(r, caps, nil)
		if err != nil {
			continue // Validate refuses the rule
		}
		if _, ok := nr.match(name); ok {
			return t, name
		}
	}
	return nil, ""
}

// spec returns the vocabulary entry of op, or nil for an unknown op.
func (op Op) spec() *opSpec {
	for i := range ops {
		if ops[i].op == op {
			return &ops[i]
		}
	}
	return nil
}

// opNames lists the ops (all of them, or only the layout ops) as
// "a, b, c", in vocabulary order.
func opNames(layoutOnly bool) string {
	var names []string
	for _, s := range ops {
		if !layoutOnly || s.layout > 0 {
			names = append(names, string(s.op))
		}
	}
	return strings.Join(names, ", ")
}

func checkFuse(s *Step, i, sources int) error {
	if len(s.Parts) == 0 {
		return fmt.Errorf("step %d: fuse needs parts", i)
	}
	for j, pt := range s.Parts {
		if pt.Source < 0 || pt.Source >= sources {
			return fmt.Errorf("step %d: part %d names source %d of %d", i, j, pt.Source, sources)
		}
		if pt.Label == "" {
			return fmt.Errorf("step %d: part %d has no label", i, j)
		}
		switch pt.Order {
		case "", OrderInterleaveHalves:
		default:
			return fmt.Errorf("step %d part %q: order %q: want %s", i, pt.Label, pt.Order, OrderInterleaveHalves)
		}
		for _, e := range []string{pt.Offset, pt.Units, pt.UnitRows, pt.Stride, pt.Pad} {
			if e == "" {
				continue
			}
			if err := checkSyntax(e); err != nil {
				return fmt.Errorf("step %d part %q: %w", i, pt.Label, err)
			}
		}
	}
	return nil
}

func describeFuse(s *Step, e *Entry) string {
	var labels []string
	for _, p := range s.Parts {
		l, _, _ := strings.Cut(p.Label, " ")
		labels = append(labels, l)
	}
	kind := "per device"
	if e.Placement.Kind == "replicate" {
		kind = "whole"
	}
	if s.Interleave {
		kind += " tile-interleaved"
	}
	return fmt.Sprintf("fuse(%s [%s])", kind, strings.Join(labels, "|"))
}

// validateSteps checks a rule's transform chain: every op known and its
// parameters well-formed, layout steps each at most once and in order.
func (r *Rule) validateSteps() error {
	last := 0
	for i := range r.Transform {
		s := &r.Transform[i]
		spec := s.Op.spec()
		if spec == nil {
			return fmt.Errorf("step %d: unknown op %q (want %s)", i, s.Op, opNames(false))
		}
		if err := spec.check(s, i, len(r.Sources)); err != nil {
			return err
		}
		if spec.layout == 0 {
			continue
		}
		if spec.layout <= last {
			return fmt.Errorf("step %d: %s is repeated or out of order (layout steps go %s)", i, s.Op, opNames(true))
		}
		last = spec.layout
	}
	return nil
}

// chain is a rule's transform chain interpreted for one binding of its
// sources: what the entry's recipe takes from each step.
type chain struct {
	vars exprVars
	rows []int64 // rows of each source's matrix view
	// values are the value ops in order; the rest come from layout steps.
	values             []ValueOp
	colStart, colCount int64 // colCount < 0: every column
	// colUnit, colPad, colRepeat: select_cols' units of columns, the zero
	// columns after each and how often the window repeats.
	colUnit, colPad, colRepeat int64
	// padRows, padCols: pad's sizes of the block (0: no padding).
	padRows, padCols int64
	parts            []resolvedPart
	interleave       bool
	transpose        bool
	reshape          []string
	layout           bool // some layout step is present
}

// planSteps interprets a validated transform chain for one binding. Its
// errors are config problems of the target.
func planSteps(steps []Step, vars exprVars, rows []int64) (*chain, error) {
	c := &chain{vars: vars, rows: rows, colCount: -1}
	for i := range steps {
		spec := steps[i].Op.spec()
		if spec == nil {
			continue // Validate refuses it
		}
		c.layout = c.layout || spec.layout > 0
		if err := spec.plan(&steps[i], c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Describe lists the entry's transform chain in words, in order, e.g.
// ["dequantize(fp8 block)", "round(bf16)", "fuse(per device [q|k|v|z|a|b])",
// "transpose"]. Placement, dtype and layout are reported separately.
func (e *Entry) Describe() []string {
	var out []string
	for _, s := range e.Sources {
		if s.Scale != nil {
			out = append(out, "dequantize(fp8 block)")
			break
		}
	}
	for i := range e.Steps {
		if spec := e.Steps[i].Op.spec(); spec != nil {
			out = append(out, spec.describe(&e.Steps[i], e))
		}
	}
	return out
}

// ElemKind is what a value op does to every value.
type ElemKind uint8

// The elementwise value ops.
const (
	// ElemRound rounds to bfloat16, nearest even.
	ElemRound ElemKind = iota + 1
	// ElemAdd adds Elem.Add in float32.
	ElemAdd
	// ElemNegExp takes −exp(x) in float32 (numfmt.NegExp32).
	ElemNegExp
)

// Elem is a value op ready to apply: its kind and, for ElemAdd, the
// addend.
type Elem struct {
	Kind ElemKind
	Add  float32
}

// Apply applies the op to vals in place; a NaN a bf16 rounding meets
// becomes what nan says. It is the one place a value op is computed
// (applyValues and the cache builder's compiled ops call it).
func (e Elem) Apply(vals []float32, nan numfmt.NaNPolicy) {
	switch e.Kind {
	case ElemRound:
		for i, x := range vals {
			vals[i] = numfmt.RoundBF16(x, nan)
		}
	case ElemAdd:
		for i := range vals {
			vals[i] += e.Add
		}
	case ElemNegExp:
		for i, x := range vals {
			vals[i] = numfmt.NegExp32(x)
		}
	}
}

// Elementwise is what a value op does to every value: round it to bf16
// (round), add a constant in float32 (add), or take −exp in float32
// (neg_exp). It is the one interpreter of value ops (applyValues and the
// cache builder's compiled ops use it); an op that is not a value op, or a
// rounding to another dtype, is an error.
func (v ValueOp) Elementwise() (Elem, error) {
	switch v.Op {
	case OpRound:
		if v.DType != "BF16" {
			return Elem{}, fmt.Errorf("round to %q is not supported", v.DType)
		}
		return Elem{Kind: ElemRound}, nil
	case OpAdd:
		return Elem{Kind: ElemAdd, Add: float32(v.Value)}, nil
	case OpNegExp:
		return Elem{Kind: ElemNegExp}, nil
	}
	return Elem{}, fmt.Errorf("unknown value op %q", v.Op)
}

package mapping

import (
	"fmt"
	"strconv"
	"strings"
)

// exprVars are the integer variables an expression may use: the integer
// settings of the config (text section first, then top level), N (devices
// of the mesh) and, in reshape shapes, rows and cols of the device matrix.
type exprVars map[string]int64

// evalExpr evaluates an integer expression: identifiers, non-negative integer
// literals, + - * / and parentheses, with the usual precedence, and the
// function roundup(x, m): x rounded up to a multiple of m (the padding of
// a dimension to whole tiles, as tt-metal's nearest_multiple and
// math.ceil(x / m) * m compute it). Division must be exact; an inexact
// division, an unknown identifier or function or a syntax error is an
// error naming the expression.
func evalExpr(expr string, vars exprVars) (int64, error) {
	p := &exprParser{src: expr, vars: vars}
	p.next()
	v, err := p.sum()
	if err != nil {
		return 0, fmt.Errorf("expression %q: %w", expr, err)
	}
	if p.tok != "" {
		return 0, fmt.Errorf("expression %q: unexpected %q", expr, p.tok)
	}
	return v, nil
}

// checkSyntax parses expr without variables (identifiers are accepted).
func checkSyntax(expr string) error {
	p := &exprParser{src: expr, syntaxOnly: true}
	p.next()
	if _, err := p.sum(); err != nil {
		return fmt.Errorf("expression %q: %w", expr, err)
	}
	if p.tok != "" {
		return fmt.Errorf("expression %q: unexpected %q", expr, p.tok)
	}
	return nil
}

type exprParser struct {
	src        string
	pos        int
	tok        string
	vars       exprVars
	syntaxOnly bool
}

func (p *exprParser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	c := p.src[p.pos]
	start := p.pos
	switch {
	case isIdentByte(c):
		for p.pos < len(p.src) && (isIdentByte(p.src[p.pos]) || p.src[p.pos] >= '0' && p.src[p.pos] <= '9') {
			p.pos++
		}
	case c >= '0' && c <= '9':
		for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
			p.pos++
		}
	default:
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func isIdentByte(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (p *exprParser) sum() (int64, error) {
	v, err := p.product()
	if err != nil {
		return 0, err
	}
	for p.tok == "+" || p.tok == "-" {
		op := p.tok
		p.next()
		w, err := p.product()
		if err != nil {
			return 0, err
		}
		if op == "+" {
			v += w
		} else {
			v -= w
		}
	}
	return v, nil
}

func (p *exprParser) product() (int64, error) {
	v, err := p.atom()
	if err != nil {
		return 0, err
	}
	for p.tok == "*" || p.tok == "/" {
		op := p.tok
		p.next()
		w, err := p.atom()
		if err != nil {
			return 0, err
		}
		switch {
		case p.syntaxOnly:
		case op == "*":
			v *= w
		case w == 0:
			return 0, fmt.Errorf("division by zero")
		case v%w != 0:
			return 0, fmt.Errorf("%d / %d is not exact", v, w)
		default:
			v /= w
		}
	}
	return v, nil
}

func (p *exprParser) atom() (int64, error) {
	t := p.tok
	switch {
	case t == "":
		return 0, fmt.Errorf("unexpected end")
	case t == "(":
		p.next()
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		if p.tok != ")" {
			return 0, fmt.Errorf("missing )")
		}
		p.next()
		return v, nil
	case t[0] >= '0' && t[0] <= '9':
		p.next()
		v, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bad number %q", t)
		}
		return v, nil
	case isIdentByte(t[0]):
		p.next()
		if p.tok == "(" {
			return p.call(t)
		}
		if p.syntaxOnly {
			return 1, nil
		}
		v, ok := p.vars[t]
		if !ok {
			return 0, fmt.Errorf("unknown variable %q", t)
		}
		return v, nil
	}
	return 0, fmt.Errorf("unexpected %q", t)
}

// call evaluates a function call whose name was just read (the current
// token is its "(").
func (p *exprParser) call(name string) (int64, error) {
	var args []int64
	p.next()
	for {
		v, err := p.sum()
		if err != nil {
			return 0, err
		}
		args = append(args, v)
		if p.tok == ")" {
			p.next()
			break
		}
		if p.tok != "," {
			return 0, fmt.Errorf("missing ) after the arguments of %s", name)
		}
		p.next()
	}
	switch name {
	case "roundup":
		if len(args) != 2 {
			return 0, fmt.Errorf("roundup takes 2 arguments (x, m), got %d", len(args))
		}
		if p.syntaxOnly {
			return 1, nil
		}
		x, m := args[0], args[1]
		if m <= 0 {
			return 0, fmt.Errorf("roundup(%d, %d): the multiple must be positive", x, m)
		}
		return (x + m - 1) / m * m, nil
	}
	return 0, fmt.Errorf("unknown function %q (known: roundup)", name)
}

// evalAssert evaluates "lhs == rhs" (or "lhs != rhs").
func evalAssert(a string, vars exprVars) (bool, error) {
	for _, op := range []string{"==", "!="} {
		if l, r, ok := strings.Cut(a, op); ok {
			lv, err := evalExpr(strings.TrimSpace(l), vars)
			if err != nil {
				return false, err
			}
			rv, err := evalExpr(strings.TrimSpace(r), vars)
			if err != nil {
				return false, err
			}
			return (lv == rv) == (op == "=="), nil
		}
	}
	return false, fmt.Errorf("assertion %q: want \"lhs == rhs\" or \"lhs != rhs\"", a)
}

func checkAssertSyntax(a string) error {
	for _, op := range []string{"==", "!="} {
		if l, r, ok := strings.Cut(a, op); ok {
			if err := checkSyntax(strings.TrimSpace(l)); err != nil {
				return err
			}
			return checkSyntax(strings.TrimSpace(r))
		}
	}
	return fmt.Errorf("assertion %q: want \"lhs == rhs\" or \"lhs != rhs\"", a)
}

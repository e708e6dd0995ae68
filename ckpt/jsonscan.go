package ckpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jscan is the one JSON reader of safetensors headers and indexes. It reads
// RFC 8259 JSON exactly as serde_json, the parser of the reference crate,
// does (huggingface/safetensors: safetensors/src/tensor.rs@caa9a133,
// `serde_json::from_str` of `HashMetadata`): object keys are compared byte
// for byte after unescaping (never case-folded), a string must not hold a
// control character or an invalid escape, a \u escape of a surrogate must
// be a high surrogate followed by a low one (a lone surrogate is an error,
// where encoding/json silently makes it U+FFFD), a number must follow the
// grammar and, if not an integer, be finite in float64, and containers
// nest at most maxDepth deep. What a document means (which keys, duplicate
// keys) is left to the caller, which sees every key in order.
//
// The input must already be valid UTF-8.
type jscan struct {
	buf      []byte
	pos      int
	depth    int
	maxDepth int
	base     int64 // added to positions in errors (8 for a header)
	// dry checks without building: str and number return "" (and key
	// its key as ""), allocating nothing but the literal of a number whose
	// range must be checked (the config reader's first pass).
	dry bool
}

// jsonSyntaxError is a JSON error at an absolute byte offset.
type jsonSyntaxError struct {
	Offset int64
	Msg    string
}

func (e *jsonSyntaxError) Error() string { return e.Msg }

func (s *jscan) errAt(pos int, format string, args ...any) error {
	return &jsonSyntaxError{Offset: s.base + int64(pos), Msg: fmt.Sprintf(format, args...)}
}

// ws skips JSON whitespace.
func (s *jscan) ws() {
	for s.pos < len(s.buf) {
		switch s.buf[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next non-whitespace byte, 0 at the end.
func (s *jscan) peek() byte {
	s.ws()
	if s.pos >= len(s.buf) {
		return 0
	}
	return s.buf[s.pos]
}

func (s *jscan) eofErr() error { return s.errAt(s.pos, "unexpected end of JSON") }

// found describes the next token for an error message.
func (s *jscan) found() string {
	switch c := s.peek(); {
	case c == 0:
		return "the end of the document"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	default:
		return fmt.Sprintf("%q", rune(c))
	}
}

// open consumes delim ('{' or '[') and counts a nesting level.
func (s *jscan) open(delim byte) error {
	if s.peek() != delim {
		return s.errAt(s.pos, "expected %q", delim)
	}
	s.depth++
	if s.depth > s.maxDepth {
		return s.errAt(s.pos, "values nested deeper than %d levels", s.maxDepth)
	}
	s.pos++
	return nil
}

// more reports whether another member or element follows in the container
// closed by end, consuming the separating comma, or consumes end. first
// is true before the first member.
func (s *jscan) more(end byte, first bool) (bool, error) {
	c := s.peek()
	if c == end {
		s.pos++
		s.depth--
		return false, nil
	}
	if !first {
		if c != ',' {
			if c == 0 {
				return false, s.eofErr()
			}
			return false, s.errAt(s.pos, "expected ',' or %q, found %s", end, s.found())
		}
		s.pos++
		if s.peek() == end {
			return false, s.errAt(s.pos, "trailing comma")
		}
	}
	if s.peek() == 0 {
		return false, s.eofErr()
	}
	return true, nil
}

// key reads an object key and the colon after it.
func (s *jscan) key() (string, int, error) {
	if s.peek() != '"' {
		if s.pos >= len(s.buf) {
			return "", s.pos, s.eofErr()
		}
		return "", s.pos, s.errAt(s.pos, "expected a string key, found %s", s.found())
	}
	at := s.pos
	k, err := s.str()
	if err != nil {
		return "", at, err
	}
	if s.peek() != ':' {
		if s.pos >= len(s.buf) {
			return "", at, s.eofErr()
		}
		return "", at, s.errAt(s.pos, "expected ':' after key, found %s", s.found())
	}
	s.pos++
	return k, at, nil
}

// str reads a string; the next byte must be '"'.
func (s *jscan) str() (string, error) {
	s.pos++ // opening quote
	start := s.pos
	for s.pos < len(s.buf) {
		c := s.buf[s.pos]
		switch {
		case c == '"':
			v := ""
			if !s.dry {
				v = string(s.buf[start:s.pos])
			}
			s.pos++
			return v, nil
		case c == '\\':
			return s.strEscaped(start)
		case c < 0x20:
			return "", s.errAt(s.pos, "control character 0x%02x in a string", c)
		}
		s.pos++
	}
	return "", s.errAt(s.pos, "unexpected end of JSON in a string")
}

// strEscaped finishes a string that has escapes, from its first backslash.
func (s *jscan) strEscaped(start int) (string, error) {
	var out []byte
	if !s.dry {
		out = append(make([]byte, 0, s.pos-start+16), s.buf[start:s.pos]...)
	}
	for s.pos < len(s.buf) {
		c := s.buf[s.pos]
		switch {
		case c == '"':
			s.pos++
			if s.dry {
				return "", nil
			}
			return string(out), nil
		case c < 0x20:
			return "", s.errAt(s.pos, "control character 0x%02x in a string", c)
		case c != '\\':
			if !s.dry {
				out = append(out, c)
			}
			s.pos++
			continue
		}
		at := s.pos
		if s.pos+1 >= len(s.buf) {
			return "", s.errAt(s.pos, "unexpected end of JSON in a string")
		}
		e := s.buf[s.pos+1]
		s.pos += 2
		var r rune
		switch e {
		case '"', '\\', '/':
			r = rune(e)
		case 'b':
			r = '\b'
		case 'f':
			r = '\f'
		case 'n':
			r = '\n'
		case 'r':
			r = '\r'
		case 't':
			r = '\t'
		case 'u':
			var err error
			if r, err = s.hex4(at); err != nil {
				return "", err
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return "", s.errAt(at, `invalid escape \u%04X: a low surrogate without a high one`, r)
			case r >= 0xD800 && r <= 0xDBFF:
				if s.pos+1 >= len(s.buf) || s.buf[s.pos] != '\\' || s.buf[s.pos+1] != 'u' {
					return "", s.errAt(at, `invalid escape \u%04X: a high surrogate not followed by a low surrogate`, r)
				}
				s.pos += 2
				lo, err := s.hex4(at)
				if err != nil {
					return "", err
				}
				if lo < 0xDC00 || lo > 0xDFFF {
					return "", s.errAt(at, `invalid escape \u%04X\u%04X: a high surrogate not followed by a low surrogate`, r, lo)
				}
				r = utf16.DecodeRune(r, lo)
			}
		default:
			return "", s.errAt(at, "invalid escape %q in a string", "\\"+string(rune(e)))
		}
		if !s.dry {
			out = utf8.AppendRune(out, r)
		}
	}
	return "", s.errAt(s.pos, "unexpected end of JSON in a string")
}

func (s *jscan) hex4(at int) (rune, error) {
	if s.pos+4 > len(s.buf) {
		return 0, s.errAt(at, `invalid \u escape: fewer than 4 hex digits`)
	}
	var r rune
	for _, c := range s.buf[s.pos : s.pos+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, s.errAt(at, `invalid \u escape %q: not 4 hex digits`, string(s.buf[at:s.pos+4]))
		}
		r = r<<4 | rune(d)
	}
	s.pos += 4
	return r, nil
}

// number reads a number literal: it returns the literal and whether it is
// an integer (no fraction, no exponent). A number that is not an integer
// of at most maxIntDigits digits must be finite as a float64.
func (s *jscan) number() (string, bool, error) {
	start := s.pos
	b := s.buf
	i := s.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
		if i < len(b) && b[i] >= '0' && b[i] <= '9' {
			return "", false, s.errAt(start, "invalid number: leading zero")
		}
	case i < len(b) && b[i] == 'I':
		return "", false, s.errAt(start, "invalid number: NaN and Infinity are not JSON")
	case digits() == 0:
		return "", false, s.errAt(start, "invalid number")
	}
	isInt := true
	if i < len(b) && b[i] == '.' {
		i++
		isInt = false
		if digits() == 0 {
			return "", false, s.errAt(start, "invalid number: no digit after '.'")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		isInt = false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return "", false, s.errAt(start, "invalid number: no digit in the exponent")
		}
	}
	s.pos = i
	if !isInt || i-start > 20 {
		// serde_json parses integers that do not fit 64 bits, and every
		// non-integer, as f64: out of range is an error.
		lit := string(b[start:i])
		if _, err := strconv.ParseFloat(lit, 64); errors.Is(err, strconv.ErrRange) {
			if f, _ := strconv.ParseFloat(lit, 64); f != 0 { // underflow to 0 is not an error
				return "", false, s.errAt(start, "number out of range: %s", truncLit(lit))
			}
		}
		if s.dry {
			return "", isInt, nil
		}
		return lit, isInt, nil
	}
	if s.dry {
		return "", isInt, nil
	}
	return string(b[start:i]), isInt, nil
}

func truncLit(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// literal reads true, false or null.
func (s *jscan) literal() (any, error) {
	for _, w := range []string{"true", "false", "null"} {
		if len(s.buf)-s.pos >= len(w) && string(s.buf[s.pos:s.pos+len(w)]) == w {
			s.pos += len(w)
			switch w {
			case "true":
				return true, nil
			case "false":
				return false, nil
			}
			return nil, nil
		}
	}
	if c := s.peek(); c == 'N' || c == 'I' {
		return nil, s.errAt(s.pos, "invalid value: NaN and Infinity are not JSON")
	}
	return nil, s.errAt(s.pos, "invalid value: expected a JSON value, found %s", s.found())
}

// skip reads and discards one value, checking it all the same.
func (s *jscan) skip() error {
	switch c := s.peek(); {
	case c == 0:
		return s.eofErr()
	case c == '{':
		if err := s.open('{'); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := s.more('}', first)
			if err != nil || !ok {
				return err
			}
			if _, _, err := s.key(); err != nil {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '[':
		if err := s.open('['); err != nil {
			return err
		}
		for first := true; ; first = false {
			ok, err := s.more(']', first)
			if err != nil || !ok {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
		}
	case c == '"':
		_, err := s.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := s.number()
		return err
	default:
		_, err := s.literal()
		return err
	}
}

// end checks that only whitespace follows the document.
func (s *jscan) end() error {
	if s.peek() != 0 {
		return s.errAt(s.pos, "trailing characters after the JSON document")
	}
	return nil
}

// value reads one value as Go data (objects as map[string]any, numbers as
// json.Number). A key repeated in one object is an error: a checker does
// not pick between two values.
func (s *jscan) value() (any, error) {
	switch c := s.peek(); {
	case c == 0:
		return nil, s.eofErr()
	case c == '{':
		if err := s.open('{'); err != nil {
			return nil, err
		}
		m := map[string]any{}
		for first := true; ; first = false {
			ok, err := s.more('}', first)
			if err != nil {
				return nil, err
			}
			if !ok {
				return m, nil
			}
			k, at, err := s.key()
			if err != nil {
				return nil, err
			}
			if _, dup := m[k]; dup {
				return nil, s.errAt(at, "duplicate key %s in an object", Quote(k))
			}
			if m[k], err = s.value(); err != nil {
				return nil, err
			}
		}
	case c == '[':
		if err := s.open('['); err != nil {
			return nil, err
		}
		a := []any{}
		for first := true; ; first = false {
			ok, err := s.more(']', first)
			if err != nil {
				return nil, err
			}
			if !ok {
				return a, nil
			}
			v, err := s.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case c == '"':
		return s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		lit, _, err := s.number()
		return json.Number(lit), err
	default:
		return s.literal()
	}
}

package output

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// The escaping of text copied from inputs (tensor names, config keys and
// values, file names), one function per format (EscapeTerm, EscapeCSV, EscapeMarkdown; the
// HTML page's html/template escapes for HTML), chosen by EscapeFor.
// Grid.Render applies the one of its format to every cell; commands apply
// it to the text they copy into prose lines. The terminal's is ckpt.EscapeName (the libraries'
// messages use it too): control characters (C0, DEL, C1), bidirectional
// controls (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) and every
// other character Go does not print (strconv.IsPrint) are shown escaped,
// in Go syntax; it is applied to text and table cells as well.

// EscapeFor is the escaping of format for text copied from inputs: in
// its tables (Grid.Render) and in its prose lines (a command's verdict,
// the paths, sources, profile and file names it names): EscapeMarkdown
// for Markdown, EscapeCSV for CSV, EscapeTerm for the rest (text, table).
// Every command renders copied text through it, so a Markdown report
// carries no markup and a terminal no control character from its inputs.
func EscapeFor(format string) func(string) string {
	switch format {
	case Markdown:
		return EscapeMarkdown
	case CSV:
		return EscapeCSV
	}
	return EscapeTerm
}

// EscapeTerm escapes s for a terminal (ckpt.EscapeName).
func EscapeTerm(s string) string { return ckpt.EscapeName(s) }

// EscapeCSV makes a cell inert in a spreadsheet, as OWASP's CSV injection
// guidance says (https://owasp.org/www-community/attacks/CSV_Injection;
// CWE-1236): a cell that begins with '=', '+', '-', '@', a tab or a
// carriage return gets a single quote in front, so that a spreadsheet
// reads it as text, never as a formula. A cell that is a number (as
// strconv.ParseFloat reads it: "-0.5", "-1e-05", "-Inf") or a lone "-"
// (a value that does not apply) is left as it is: numbers stay numbers.
// The CSV writer quotes the rest.
func EscapeCSV(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return s
	}
	if s == "-" || isNumber(s) { // ckpt's "not applicable", a number
		return s
	}
	return "'" + s
}

// EscapeMarkdown escapes s so that a Markdown renderer (CommonMark, GitHub's
// GFM) shows it as the text it is, in a table cell or in prose: every
// character that can open inline markup gets a backslash (emphasis '*',
// '_' unless between letters or digits, strikethrough '~', code '`',
// links and images '[' ']', raw HTML and autolinks '<' '>', entities '&',
// table cells '|', the backslash itself), so do the ':' of a URL scheme
// (before '/', after "mailto" or "xmpp"), the '@' of an e-mail address
// and the '.' of "www." (GFM's extended autolinks), and what would start
// a block at the start of a line: '#' (a heading), '>' (a block quote),
// '-' or '+' and a space (a list item), "1." or "1)" and a space, a row
// of three '-' (a thematic break). A shape such as [2,64] and a number
// are left as they are (brackets of digits alone link nowhere: no text
// copied from inputs can define a link reference, its brackets are
// escaped). Control characters are escaped first (ckpt.EscapeName), so
// that no line break reaches the document.
func EscapeMarkdown(s string) string {
	s = ckpt.EscapeName(s)
	if s == "" || isNumber(s) || isShape(s) {
		return s
	}
	var b strings.Builder
	prev := rune(-1)
	for i, r := range s {
		esc := false
		switch r {
		case '\\', '`', '*', '~', '[', ']', '<', '>', '&', '|', '@':
			esc = true
		case '_':
			next, _ := utf8.DecodeRuneInString(s[i+1:])
			esc = !(alnum(prev) && alnum(next))
		case ':':
			esc = strings.HasPrefix(s[i+1:], "/") || hasSuffixFold(s[:i], "mailto") || hasSuffixFold(s[:i], "xmpp")
		case '.':
			esc = i >= 3 && strings.EqualFold(s[i-3:i], "www")
		}
		if i == 0 && !esc {
			esc = blockStart(s)
		}
		if i > 0 && i == leadingDigits(s) && (r == '.' || r == ')') && spaceOrEnd(s[i+1:]) {
			esc = true // an ordered list item
		}
		if esc {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

// blockStart reports whether s, at the start of a line, would open a
// heading, a block quote, a bullet list item or a thematic break with its
// first character.
func blockStart(s string) bool {
	switch s[0] {
	case '>':
		return true
	case '#':
		n := len(s) - len(strings.TrimLeft(s, "#"))
		return n <= 6 && spaceOrEnd(s[n:])
	case '-', '+':
		if len(s) > 1 && (s[1] == ' ' || s[1] == '\t') {
			return true
		}
		return s[0] == '-' && strings.Count(s, "-") >= 3 && strings.Trim(s, "- \t") == ""
	}
	return false
}

func spaceOrEnd(s string) bool { return s == "" || s[0] == ' ' || s[0] == '\t' }

// isShape reports whether s is a shape as FormatShape writes it: [], [2],
// [2,64].
func isShape(s string) bool {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return false
	}
	return strings.Trim(s[1:len(s)-1], "0123456789,") == ""
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func alnum(r rune) bool { return r >= 0 && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func leadingDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

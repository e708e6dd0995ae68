package output

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"golang.org/x/term"
)

// Term is an output stream that is a terminal: tables written to it fit
// Width columns (0: no limit) and colour statuses when Color is set.
type Term struct {
	io.Writer
	Width int
	Color bool
	// Prose, set by a command that prints tables for people (the table
	// format), wraps every line of text longer than Width at spaces (a
	// word longer than the line after its '.', '/' and ','), keeping its
	// indent; the lines of a table (│ ┌ ├ └) pass as they are. Flush
	// writes what is left of a last line without a newline.
	Prose   bool
	pending []byte
}

// Write writes p, wrapping its lines of prose when Prose is set.
func (t *Term) Write(p []byte) (int, error) {
	if !t.Prose && len(t.pending) == 0 {
		return t.Writer.Write(p)
	}
	t.pending = append(t.pending, p...)
	for {
		i := bytes.IndexByte(t.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(t.pending[:i])
		t.pending = t.pending[i+1:]
		if _, err := io.WriteString(t.Writer, t.wrapLine(line)+"\n"); err != nil {
			return 0, err
		}
	}
}

// Flush writes the part of a line Write holds back (no newline yet).
func (t *Term) Flush() error {
	if len(t.pending) == 0 {
		return nil
	}
	line := string(t.pending)
	t.pending = nil
	_, err := io.WriteString(t.Writer, t.wrapLine(line))
	return err
}

// wrapLine wraps one line of prose to the terminal's width at spaces,
// each continuation indented as the line is; a table line, or one that
// fits, is returned as it is.
func (t *Term) wrapLine(line string) string {
	plain := ansiRE.ReplaceAllString(line, "")
	if !t.Prose || t.Width <= 0 || twwidth.Width(plain) <= t.Width || line != plain || tableLine(plain) {
		return line
	}
	body := strings.TrimLeft(line, " ")
	indent := line[:len(line)-len(body)]
	if len(indent) >= t.Width/2 {
		indent = ""
	}
	wrapped := wrapParts(body, t.Width-len(indent))
	return indent + strings.ReplaceAll(wrapped, "\n", "\n"+indent)
}

// tableLine tells a line of a drawn table.
func tableLine(s string) bool {
	for _, b := range []string{"│", "┌", "├", "└"} {
		if strings.HasPrefix(s, b) {
			return true
		}
	}
	return false
}

// ansiRE matches an SGR escape sequence (colour).
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// defaultWidth is the width of a terminal whose size is unknown.
const defaultWidth = 80

// ForTerminal returns w as a *Term when terminal is true, and w unchanged
// otherwise. The width is $COLUMNS when set, else the size of the terminal
// when w is one, else 80. Colour is on unless $NO_COLOR is set to a
// non-empty value (https://no-color.org) or $TERM is "dumb".
func ForTerminal(w io.Writer, terminal bool, getenv func(string) string) io.Writer {
	if !terminal {
		return w
	}
	if t, ok := w.(*Term); ok {
		return t
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	width := 0
	if n, err := strconv.Atoi(strings.TrimSpace(getenv("COLUMNS"))); err == nil && n > 0 {
		width = n
	} else if f, ok := w.(*os.File); ok {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil && n > 0 {
			width = n
		}
	}
	if width == 0 {
		width = defaultWidth
	}
	return &Term{Writer: w, Width: width, Color: getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"}
}

// TermOf returns w's terminal, or nil when w is not one.
func TermOf(w io.Writer) *Term {
	t, _ := w.(*Term)
	return t
}

// ANSI colours (SGR parameters) of statuses and diff relations.
var palette = map[string]string{
	// verify statuses
	"pass": "32",   // green
	"warn": "33",   // yellow
	"fail": "1;31", // bold red
	"skip": "2",    // dim
	// diff relations
	"identical":         "32", // green
	"same_header":       "32",
	"requant_identical": "36", // cyan
	"changed":           "33", // yellow
	"dtype_changed":     "35", // magenta
	"shape_changed":     "35",
	"only_in_base":      "31", // red
	"only_in_ft":        "34", // blue
}

// colorize wraps a status or relation word in its colour.
func colorize(s string) string {
	if c, ok := palette[s]; ok {
		return "\x1b[" + c + "m" + s + "\x1b[0m"
	}
	return s
}

// forPeople returns the header and rows as a table shows them: sizes in
// binary units, thousands separators.
func (g *Grid) forPeople(*Term) (header []string, rows [][]string) {
	header = append([]string(nil), g.Header...)
	rows = make([][]string, len(g.Rows))
	for i, r := range g.Rows {
		row := make([]string, len(r))
		for j, c := range r {
			if n, err := strconv.ParseInt(c, 10, 64); err == nil {
				switch {
				case g.Sizes[j]:
					c = Bytes(n)
				case g.Right[j]:
					c = grouped(c)
				}
			}
			row[j] = c
		}
		rows[i] = row
	}
	return header, rows
}

// shapeRE matches a shape cell (Shape).
var shapeRE = regexp.MustCompile(`^\[[0-9,]*\]$`)

func sum(w []int) int {
	t := 0
	for _, x := range w {
		t += x
	}
	return t
}

// headerSegments splits a header after each "_" and at spaces.
func headerSegments(h string) []string {
	var segs []string
	for _, f := range strings.Fields(h) {
		for len(f) > 0 {
			i := strings.IndexByte(f, '_')
			if i < 0 || len(f)-i-1 <= 2 { // "rel_l2" stays whole
				segs = append(segs, f)
				break
			}
			segs = append(segs, f[:i+1])
			f = f[i+1:]
		}
	}
	return segs
}

// headerSegment is the width of a header's widest segment.
func headerSegment(h string) int {
	m := 0
	for _, s := range headerSegments(h) {
		m = max(m, twwidth.Width(s))
	}
	return m
}

// wrapHeader puts a header's segments on lines of at most w columns (a
// segment wider than w gets a line of its own).
func wrapHeader(h string, w int) string {
	var lines []string
	line := ""
	for _, s := range headerSegments(h) {
		sep := ""
		if line != "" && !strings.HasSuffix(line, "_") {
			sep = " "
		}
		if line != "" && twwidth.Width(line+sep+s) > w {
			lines = append(lines, line)
			line, sep = "", ""
		}
		line += sep + s
	}
	return strings.Join(append(lines, line), "\n")
}

// shrink lowers the widths of cols, widest first (water-filling), not below
// mins, until the sum of all widths is at most avail or every column of
// cols is at its minimum. It never widens a column.
func shrink(w, cols, mins []int, avail int) {
	floor := func(j int) int { return min(mins[j], w[j]) }
	total := func(c int) int { // total width with cols capped at c
		t := sum(w)
		for _, j := range cols {
			t += max(floor(j), min(w[j], c)) - w[j]
		}
		return t
	}
	if len(cols) == 0 || total(1<<30) <= avail {
		return
	}
	lo, hi := 0, 0 // the largest cap with total(cap) <= avail
	for _, j := range cols {
		hi = max(hi, w[j])
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if total(mid) <= avail {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	slack := avail - total(lo)
	for _, j := range cols {
		c := max(floor(j), min(w[j], lo))
		if c < w[j] && c == lo && slack > 0 { // hand out what the integer cap left over
			c++
			slack--
		}
		w[j] = c
	}
}

// cellWidth is the display width of a cell's widest line.
func cellWidth(s string) int {
	m := 0
	for l := range strings.SplitSeq(s, "\n") {
		m = max(m, twwidth.Width(l))
	}
	return m
}

// wrap breaks s into lines of at most w runes at spaces. A word longer
// than w (a tensor name in a message) is broken after its dots, slashes and
// underscores, and cut only where a part is still too long.
func wrap(s string, w int) string {
	if w < 1 {
		return s
	}
	var lines []string
	for para := range strings.SplitSeq(s, "\n") {
		line := []rune{}
		for _, word := range strings.Fields(para) {
			wr := []rune(word)
			if len(line) > 0 && len(line)+1+len(wr) <= w {
				line = append(append(line, ' '), wr...)
				continue
			}
			if len(line) > 0 {
				lines = append(lines, string(line))
				line = line[:0:0]
			}
			if len(wr) <= w {
				line = wr
				continue
			}
			for _, part := range nameParts(wr) {
				if len(line)+len(part) > w && len(line) > 0 {
					lines = append(lines, string(line))
					line = line[:0:0]
				}
				for len(part) > w {
					lines = append(lines, string(part[:w]))
					part = part[w:]
				}
				line = append(line, part...)
			}
		}
		lines = append(lines, string(line))
	}
	return strings.Join(lines, "\n")
}

// nameParts splits a name after each '.', '/' and '_'.
func nameParts(r []rune) [][]rune {
	var parts [][]rune
	start := 0
	for i, c := range r {
		if c == '.' || c == '/' || c == '_' {
			parts = append(parts, r[start:i+1])
			start = i + 1
		}
	}
	if start < len(r) {
		parts = append(parts, r[start:])
	}
	return parts
}

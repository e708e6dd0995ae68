package output

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

// A table for people (the table format) is drawn here, not by tablewriter:
// its rows may be grouped under spanning headings and its columns dropped
// when the terminal is too narrow. It looks like tablewriter's default
// boxes ("│ " before each cell, " │ " between, " │" after the last).

// line is a row of a table for people: cells, or a heading (the prefix
// the names of the rows below share) that spans the table.
type line struct {
	heading string
	cells   []string
	group   string // the heading a row is listed under
	// factored is set when other columns' prefixes are in the heading
	// too (GroupAlso): such a row is never listed without it
	factored bool
}

// renderPeople writes the table format of g to w.
func (g *Grid) renderPeople(w io.Writer) error {
	t := TermOf(w)
	header, rows := g.humanCells()
	lines := g.grouped(rows)
	cols := make([]int, len(header)) // the columns shown
	for j := range cols {
		cols[j] = j
	}
	widths := natural(header, lines, cols)
	var dropped []string
	if t != nil && t.Width > 0 {
		cols, dropped = g.choose(header, lines, t.Width)
		widths = g.fitCols(header, lines, cols, t.Width)
	}
	lines = inlineSingles(lines, cols, widths)
	if len(cols) > 0 && g.Names[cols[0]] {
		widths = adjustName(lines, cols, widths)
	}
	if len(dropped) > 0 {
		note := fmt.Sprintf("(not shown at %d columns: %s; --format text shows all)", t.Width, strings.Join(dropped, ", "))
		fmt.Fprintln(w, wrap(note, max(t.Width, 20)))
	}
	color := t != nil && t.Color
	inner := sum(widths) + 3*(len(widths)-1)
	var b strings.Builder
	rule := func(l, m, r string) {
		b.WriteString(l)
		for i, x := range widths {
			if i > 0 {
				b.WriteString(m)
			}
			b.WriteString(strings.Repeat("─", x+2))
		}
		b.WriteString(r + "\n")
	}
	row := func(cells []string, body bool) {
		parts := make([][]string, len(cols))
		n := 1
		for i, j := range cols {
			c := ""
			if j < len(cells) {
				c = cells[j]
			}
			if body {
				c = g.fitCell(j, c, widths[i], header)
			} else if twwidth.Width(c) > widths[i] {
				c = wrapHeader(c, widths[i])
			}
			parts[i] = strings.Split(c, "\n")
			n = max(n, len(parts[i]))
		}
		for k := range n {
			b.WriteString("│")
			for i, j := range cols {
				s := ""
				if k < len(parts[i]) {
					s = parts[i][k]
				}
				pad := strings.Repeat(" ", max(0, widths[i]-twwidth.Width(s)))
				if color && body && g.Color[j] {
					s = colorize(s)
				}
				if body && g.Right[j] {
					b.WriteString(" " + pad + s + " │")
				} else {
					b.WriteString(" " + s + pad + " │")
				}
			}
			b.WriteString("\n")
		}
	}
	rule("┌", "┬", "┐")
	row(header, false)
	rule("├", "┼", "┤")
	for _, l := range lines {
		if l.heading == "" {
			row(l.cells, true)
			continue
		}
		for _, s := range strings.Split(wrapParts(l.heading, inner), "\n") {
			pad := strings.Repeat(" ", max(0, inner-twwidth.Width(s)))
			if color {
				s = "\x1b[1m" + s + "\x1b[0m"
			}
			b.WriteString("│ " + s + pad + " │\n")
		}
	}
	rule("└", "┴", "┘")
	_, err := io.WriteString(w, b.String())
	return err
}

// humanCells returns the header and rows with sizes in binary units and
// thousands separators.
func (g *Grid) humanCells() (header []string, rows [][]string) {
	return g.forPeople(nil)
}

// LayerPrefix is the prefix of a name through its first all-digit
// component ("model.language_model.layers.3.", "mtp.layers.0.",
// "P300/cache/layers.0/"), or "" when it has none.
func LayerPrefix(name string) string {
	start := 0
	for i := 0; i <= len(name); i++ {
		if i < len(name) && name[i] != '.' && name[i] != '/' {
			continue
		}
		if i == len(name) {
			return ""
		}
		comp := name[start:i]
		if comp != "" && strings.Trim(comp, "0123456789") == "" && start > 0 {
			return name[:i+1]
		}
		start = i + 1
	}
	return ""
}

// firstPrefix is the first component of a name with its separator, or ""
// when the name has a single component.
func firstPrefix(name string) string {
	if i := strings.IndexAny(name, "./"); i >= 0 && i < len(name)-1 {
		return name[:i+1]
	}
	return ""
}

// grouped turns rows into lines. With g.Group, consecutive rows whose
// first cells share a layer prefix (LayerPrefix), or else a first
// component, are listed under a heading of that prefix (for a first
// component: the longest prefix the run shares, at a separator), each
// showing the rest of its name.
func (g *Grid) grouped(rows [][]string) []line {
	var out []line
	if !g.Group {
		for _, r := range rows {
			out = append(out, line{cells: r})
		}
		return out
	}
	key := func(r []string) (string, bool) {
		if len(r) == 0 {
			return "", false
		}
		if p := LayerPrefix(r[0]); p != "" {
			return p, true
		}
		if i := strings.LastIndexByte(r[0], '/'); i >= 0 && i < len(r[0])-1 {
			return r[0][:i+1], true // a directory
		}
		return firstPrefix(r[0]), false
	}
	for i := 0; i < len(rows); {
		k, layer := key(rows[i])
		j := i + 1
		for j < len(rows) {
			if k2, _ := key(rows[j]); k2 != k {
				break
			}
			j++
		}
		if k == "" {
			for _, r := range rows[i:j] {
				out = append(out, line{cells: r})
			}
			i = j
			continue
		}
		head := k
		if !layer { // the longest shared prefix that leaves every name a rest
			lcp := rows[i][0]
			for _, r := range rows[i+1 : j] {
				for !strings.HasPrefix(r[0], lcp) {
					lcp = lcp[:len(lcp)-1]
				}
			}
			for _, r := range rows[i:j] {
				if len(r[0]) == len(lcp) {
					lcp = lcp[:len(lcp)-1]
				}
			}
			if c := strings.LastIndexAny(lcp, "./"); c+1 >= len(head) {
				head = lcp[:c+1]
			}
		}
		heading := head
		type factor struct {
			k int
			p string
		}
		var also []factor // the layer prefixes factored out of GroupAlso columns
		for _, k := range slices.Sorted(maps.Keys(g.GroupAlso)) {
			if p := sharedLayer(rows[i:j], k); p != "" {
				also = append(also, factor{k, p})
				heading += "  (" + g.Header[k] + ": " + p + ")"
			}
		}
		out = append(out, line{heading: heading})
		for _, r := range rows[i:j] {
			c := slices.Clone(r)
			c[0] = r[0][len(head):]
			for _, a := range also {
				c[a.k] = strings.ReplaceAll(c[a.k], a.p, "")
			}
			out = append(out, line{cells: c, group: head, factored: heading != head})
		}
		i = j
	}
	return out
}

// colKind is how a column of a table for people may give way.
type colKind int

const (
	text  colKind = iota // wraps at spaces (long words after '.', '/', ',')
	fixed                // numbers, statuses, shapes: never broken
	name                 // names: never broken
)

// unbreakable is the longest word a text cell keeps whole; longer words
// (tensor names in a message or a list) break after their separators.
const unbreakable = 20

// filePart is the longest piece of a file name (between its '.' and '/')
// kept whole; longer pieces break after each '_' too.
const filePart = 12

// isFileName tells a word that names a file of a cache or checkpoint.
func isFileName(word string) bool {
	w := strings.TrimRight(word, ",")
	return strings.HasSuffix(w, ".tensorbin") || strings.HasSuffix(w, ".safetensors")
}

// colInfo measures column j over the body lines.
type colInfo struct {
	kind             colKind
	prose            bool
	droppable        bool // it has a Drop priority
	nat, min, header int
}

func (g *Grid) info(header []string, lines []line, j int) colInfo {
	ci := colInfo{header: twwidth.Width(header[j]), droppable: g.Drop[j] > 0}
	shapes, any := true, false
	cellMax, part := 0, 0
	for _, l := range lines {
		if l.heading != "" || j >= len(l.cells) {
			continue
		}
		c := l.cells[j]
		any = true
		cellMax = max(cellMax, cellWidth(c))
		ci.prose = ci.prose || strings.Contains(c, " ")
		shapes = shapes && (c == "-" || c == "" || shapeRE.MatchString(c))
		part = max(part, longestPart(c))
	}
	switch {
	case g.Names[j]:
		ci.kind = name
	case g.Right[j] || g.Color[j] || (shapes && any):
		ci.kind = fixed
	}
	ci.nat = max(ci.header, cellMax)
	ci.min = max(headerSegment(header[j]), cellMax)
	if ci.kind == text {
		ci.min = max(headerSegment(header[j]), part)
	}
	return ci
}

// longestPart is the widest piece wrapParts may leave of s.
func longestPart(s string) int {
	m := 0
	for _, word := range strings.Fields(s) {
		if twwidth.Width(word) <= unbreakable {
			m = max(m, twwidth.Width(word))
			continue
		}
		for _, p := range breakParts(word) {
			m = max(m, twwidth.Width(p))
		}
	}
	return m
}

// natural is the width of each shown column when nothing is cut.
func natural(header []string, lines []line, cols []int) []int {
	w := make([]int, len(cols))
	for i, j := range cols {
		w[i] = twwidth.Width(header[j])
		for _, l := range lines {
			if l.heading == "" && j < len(l.cells) {
				w[i] = max(w[i], cellWidth(l.cells[j]))
			}
		}
	}
	return w
}

// boxWidth is the width of a table of columns of widths w.
func boxWidth(w []int) int { return sum(w) + 3*len(w) + 1 }

// choose picks the columns shown at width: every column without a Drop
// priority, then the droppable columns by importance — first those whose
// cells mostly say something, then those mostly empty, then those all
// empty (a cell is empty when it is "" or "-", or "0" in a column of
// numbers), each by priority (1 first, then 2...) — as long as they fit
// at their narrowest (prose that is never dropped: 24 columns). It
// returns the columns shown and the headers of those it drops.
func (g *Grid) choose(header []string, lines []line, width int) (cols []int, dropped []string) {
	mins := make([]int, len(header))
	for j := range header {
		ci := g.info(header, lines, j)
		mins[j] = ci.min
		if ci.kind == text && ci.prose && g.Drop[j] == 0 { // a column is dropped before prose that stays is squeezed below 24
			mins[j] = min(ci.nat, max(ci.min, 24))
		}
	}
	type level struct{ empty, prio int }
	keep := map[int]bool{}
	levelOf := map[int]level{}
	var levels []level
	for j := range header {
		if p := g.Drop[j]; p > 0 {
			l := level{g.emptiness(lines, j), p}
			if l.empty == 2 {
				l.prio = 0 // the columns that say nothing: shown all together, or none
			}
			levelOf[j] = l
			if !slices.Contains(levels, l) {
				levels = append(levels, l)
			}
		} else {
			keep[j] = true
		}
	}
	slices.SortFunc(levels, func(a, b level) int {
		if a.empty != b.empty {
			return a.empty - b.empty
		}
		return a.prio - b.prio
	})
	cost := func() int {
		var w []int
		for j := range header {
			if keep[j] {
				w = append(w, mins[j])
			}
		}
		return boxWidth(w)
	}
	for _, l := range levels {
		for j := range header {
			if g.Drop[j] > 0 && levelOf[j] == l {
				keep[j] = true
			}
		}
		if cost() > width {
			for j := range header {
				if g.Drop[j] > 0 && levelOf[j] == l {
					keep[j] = false
				}
			}
		}
	}
	for j := range header {
		if keep[j] {
			cols = append(cols, j)
		} else {
			dropped = append(dropped, header[j])
		}
	}
	return cols, dropped
}

// emptiness classes column j over the body lines: 2 when no cell says
// anything ("", "-", or "0" in a column of numbers: a count that is zero
// everywhere), 1 when more than half are "" or "-", else 0.
func (g *Grid) emptiness(lines []line, j int) int {
	n, blank, zero := 0, 0, 0
	for _, l := range lines {
		if l.heading != "" || j >= len(l.cells) {
			continue
		}
		n++
		switch c := strings.TrimSpace(l.cells[j]); {
		case c == "" || c == "-":
			blank++
		case c == "0" && g.Right[j]:
			zero++
		}
	}
	switch {
	case blank+zero == n:
		return 2
	case 2*blank > n:
		return 1
	}
	return 0
}

// fitCols gives the shown columns widths that fit width. Columns give way
// in this order: prose (a column with spaces) down to 24 columns, other
// text to 12, numbers, statuses, shapes and names to their narrowest
// (their headers wrap), prose that may be dropped to its narrowest, prose
// to 12, then every column to its narrowest (the
// longest word it keeps whole; a number, status, shape or name whole; a
// header wrapped after "_"). A table whose narrowest columns do not fit
// is left wider: nothing is ever cut.
func (g *Grid) fitCols(header []string, lines []line, cols []int, width int) []int {
	n := len(cols)
	avail := width - (3*n + 1)
	infos := make([]colInfo, n)
	w := make([]int, n)
	for i, j := range cols {
		infos[i] = g.info(header, lines, j)
		w[i] = infos[i].nat
	}
	stepI := func(pick func(i int, ci colInfo) bool, floor func(ci colInfo) int) {
		if sum(w) <= avail {
			return
		}
		var idx []int
		mins := make([]int, n)
		for i, ci := range infos {
			if pick(i, ci) {
				idx = append(idx, i)
				mins[i] = min(ci.nat, max(ci.min, floor(ci)))
			}
		}
		shrink(w, idx, mins, avail)
	}
	step := func(pick func(ci colInfo) bool, floor func(ci colInfo) int) {
		stepI(func(_ int, ci colInfo) bool { return pick(ci) }, floor)
	}
	isProse := func(ci colInfo) bool { return ci.kind == text && ci.prose }
	isText := func(ci colInfo) bool { return ci.kind == text && !ci.prose }
	// The grouped first column of names that may wrap (file names) gives
	// way last.
	first := func(i int) bool { return g.Group && i == 0 && cols[0] == 0 && !g.Names[0] }
	step(isProse, func(colInfo) int { return 24 })
	stepI(func(i int, ci colInfo) bool { return isText(ci) && !first(i) }, func(colInfo) int { return 12 })
	stepI(func(i int, ci colInfo) bool { return ci.kind != text && !first(i) }, func(colInfo) int { return 0 })
	step(func(ci colInfo) bool { return isProse(ci) && ci.droppable }, func(colInfo) int { return 0 })
	stepI(func(i int, ci colInfo) bool { return isProse(ci) && !first(i) }, func(colInfo) int { return 12 })
	stepI(func(i int, _ colInfo) bool { return !first(i) }, func(colInfo) int { return 0 })
	step(func(colInfo) bool { return true }, func(colInfo) int { return 0 })
	return w
}

// fitCell wraps a body cell of column j to width w: text at spaces (and
// long words after their separators); numbers, statuses, shapes and names
// are never broken.
func (g *Grid) fitCell(j int, c string, w int, header []string) string {
	if cellWidth(c) <= w || g.Names[j] || g.Right[j] || g.Color[j] || shapeRE.MatchString(c) {
		return c
	}
	return wrapParts(c, w)
}

// inlineSingles lists a group of one row without its heading when its
// whole name fits the name column.
func inlineSingles(lines []line, cols []int, widths []int) []line {
	if len(cols) == 0 || cols[0] != 0 {
		return lines
	}
	var out []line
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		single := l.heading != "" && i+1 < len(lines) && !lines[i+1].factored && lines[i+1].heading == "" &&
			(i+2 == len(lines) || lines[i+2].heading != "")
		if single {
			r := slices.Clone(lines[i+1].cells)
			r[0] = l.heading + r[0]
			if twwidth.Width(r[0]) <= widths[0] {
				out = append(out, line{cells: r})
				i++
				continue
			}
		}
		out = append(out, l)
	}
	return out
}

// adjustName widens the name column so that no name is broken (it may
// have been measured before a group was inlined).
func adjustName(lines []line, cols []int, widths []int) []int {
	for i := range cols {
		for _, l := range lines {
			if l.heading == "" && cols[i] < len(l.cells) && i == 0 {
				widths[i] = max(widths[i], cellWidth(l.cells[cols[i]]))
			}
		}
	}
	return widths
}

// wrapParts breaks s into lines of at most w columns at spaces; a word
// longer than w is broken after its '.', '/' and ',' (never inside a
// part: a part wider than w keeps a line of its own).
func wrapParts(s string, w int) string {
	if w < 1 {
		return s
	}
	var lines []string
	for para := range strings.SplitSeq(s, "\n") {
		cur := ""
		for _, word := range strings.Fields(para) {
			if cur != "" && twwidth.Width(cur)+1+twwidth.Width(word) <= w {
				cur += " " + word
				continue
			}
			if cur != "" {
				lines = append(lines, cur)
				cur = ""
			}
			if twwidth.Width(word) <= w {
				cur = word
				continue
			}
			for _, p := range breakParts(word) {
				if cur != "" && twwidth.Width(cur)+twwidth.Width(p) > w {
					lines = append(lines, cur)
					cur = ""
				}
				cur += p
			}
		}
		lines = append(lines, cur)
	}
	return strings.Join(lines, "\n")
}

// breakParts splits a word after each '.', '/' and ','; a piece still
// longer than unbreakable (filePart in a file name) also after each '_'.
func breakParts(word string) []string {
	var parts []string
	limit := unbreakable
	if isFileName(word) {
		limit = filePart
	}
	for _, p := range splitAfter(word, ".,/") {
		if twwidth.Width(p) > limit {
			parts = append(parts, splitAfter(p, "_")...)
		} else {
			parts = append(parts, p)
		}
	}
	return parts
}

// splitAfter splits s after each of seps.
func splitAfter(s, seps string) []string {
	var parts []string
	start := 0
	for i, c := range s {
		if strings.ContainsRune(seps, c) {
			parts = append(parts, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}

// sharedLayer is the layer prefix every cell of column k in rows starts
// with, or "".
func sharedLayer(rows [][]string, k int) string {
	p := ""
	for _, r := range rows {
		if k >= len(r) {
			return ""
		}
		q := LayerPrefix(r[k])
		if q == "" || !strings.HasPrefix(r[k], q) || (p != "" && q != p) {
			return ""
		}
		p = q
	}
	return p
}

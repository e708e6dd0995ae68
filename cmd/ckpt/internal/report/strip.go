package report

import (
	"fmt"
	"github.com/ckpt-dev/ckpt/ckpt"
	"io"
	"strings"
	"unicode/utf8"
)

// StripOptions says how WriteStrip draws: Width is the width to fit (0:
// 80), Unicode selects the block glyphs ' ░▒▓█' (else '.:-=#'), Color
// adds ANSI colours (the glyphs alone stay readable).
type StripOptions struct {
	Width   int
	Unicode bool
	Color   bool
	Metric  Metric
}

// glyph sets: the state glyphs and the levels 1..4.
type glyphs struct {
	same, unmeasured, nonfinite, requant, notCompared, shape, onlyBase, onlyFT string
	levels                                                                     [Levels]string
	sep                                                                        string // between sections
}

var (
	unicodeGlyphs = glyphs{same: "·", unmeasured: "*", nonfinite: "!", requant: "r", notCompared: "?", shape: "x",
		onlyBase: "<", onlyFT: ">", levels: [Levels]string{"░", "▒", "▓", "█"}, sep: "│"}
	asciiGlyphs = glyphs{same: ".", unmeasured: "*", nonfinite: "!", requant: "r", notCompared: "?", shape: "x",
		onlyBase: "<", onlyFT: ">", levels: [Levels]string{":", "-", "=", "#"}, sep: "|"}
)

// ANSI colours (SGR parameters) of the levels and states.
var (
	levelColors = [Levels]string{"2;33", "33", "31", "1;91"}
	stateColors = map[State]string{Same: "2", Requant: "36", NotCompared: "2", Shape: "35", OnlyBase: "31", OnlyFT: "34", NonFinite: "1;35", Unmeasured: "33"}
)

func (g glyphs) of(st State, level int) string {
	switch st {
	case Same:
		return g.same
	case Level:
		return g.levels[level-1]
	case Unmeasured:
		return g.unmeasured
	case NonFinite:
		return g.nonfinite
	case Requant:
		return g.requant
	case NotCompared:
		return g.notCompared
	case Shape:
		return g.shape
	case OnlyBase:
		return g.onlyBase
	case OnlyFT:
		return g.onlyFT
	}
	return " "
}

func paint(s string, st State, level int, color bool) string {
	if !color || st == Absent {
		return s
	}
	c := stateColors[st]
	if st == Level {
		c = levelColors[level-1]
	}
	if c == "" {
		return s
	}
	return "\x1b[" + c + "m" + s + "\x1b[0m"
}

// WriteStrip draws the decoder grid of h (one row per decoder layer and
// MTP layer, one cell per tensor kind) by o.Metric, with a legend, in
// o.Width columns: cells as wide as their labels (2 at least) when that
// fits, else one character each under key letters explained below. It
// writes nothing when there are no decoder layers.
func WriteStrip(w io.Writer, h *Heatmap, o StripOptions) error {
	var grid *Grid
	for i := range h.Grids {
		if h.Grids[i].Decoder {
			grid = &h.Grids[i]
			break
		}
	}
	if grid == nil || len(grid.Rows) == 0 {
		return nil
	}
	width := o.Width
	if width <= 0 {
		width = 80
	}
	gl := asciiGlyphs
	if o.Unicode {
		gl = unicodeGlyphs
	}
	labelW := len("layer")
	for _, r := range grid.Rows {
		labelW = max(labelW, utf8.RuneCountInString(r.Label))
	}
	// Sections: runs of columns of one section.
	type span struct{ from, to int }
	var spans []span
	for j, c := range grid.Columns {
		if j == 0 || c.Section != grid.Columns[j-1].Section {
			spans = append(spans, span{j, j})
		}
		spans[len(spans)-1].to = j + 1
	}
	colW := make([]int, len(grid.Columns))
	total := labelW
	for _, s := range spans {
		total += 2 // " │"
		for j := s.from; j < s.to; j++ {
			colW[j] = max(2, len(grid.Columns[j].Label))
			total += 1 + colW[j]
		}
	}
	compact := total > width
	keys := make([]string, len(grid.Columns))
	if compact {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		for j := range colW {
			colW[j] = 1
			keys[j] = "?"
			if j < len(letters) {
				keys[j] = letters[j : j+1]
			}
		}
	}
	var b strings.Builder
	title := fmt.Sprintf("heatmap by layer: %s per tensor kind (with its scales)", o.Metric)
	if len(title) > width {
		title = "heatmap by layer: " + o.Metric.String()
	}
	b.WriteString(title + "\n")
	// The section line and the label line.
	sec := []string{pad("", labelW)}
	lab := []string{pad("layer", labelW)}
	for _, s := range spans {
		w := 0
		var ls []string
		for j := s.from; j < s.to; j++ {
			if compact {
				ls = append(ls, keys[j])
				w += 1
				continue
			}
			ls = append(ls, pad(grid.Columns[j].Label, colW[j]))
			w += 1 + colW[j]
		}
		if !compact {
			w-- // the names start over the first label
		}
		sec = append(sec, strings.Repeat(" ", 2+boolInt(!compact))+pad(truncate(sectionName(grid.Columns[s.from].Section), w), w))
		if compact {
			lab = append(lab, "  "+strings.Join(ls, ""))
		} else {
			lab = append(lab, "   "+strings.Join(ls, " "))
		}
	}
	b.WriteString(strings.TrimRight(strings.Join(sec, ""), " ") + "\n")
	b.WriteString(strings.TrimRight(strings.Join(lab, ""), " ") + "\n")
	for _, r := range grid.Rows {
		b.WriteString(pad(r.Label, labelW))
		for _, s := range spans {
			b.WriteString(" " + gl.sep)
			for j := s.from; j < s.to; j++ {
				st, lv := h.Classify(r.Cells[j], o.Metric)
				cell := strings.Repeat(gl.of(st, lv), colW[j])
				if !compact {
					b.WriteString(" ")
				}
				b.WriteString(paint(cell, st, lv, o.Color))
			}
		}
		b.WriteString("\n")
	}
	// The legend, wrapped to the width.
	ranges := h.LevelRanges(o.Metric)
	items := []string{paint(gl.same, Same, 0, o.Color) + " " + h.SameLabel()}
	for i := range ranges {
		items = append(items, paint(gl.levels[i], Level, i+1, o.Color)+" "+ranges[i])
	}
	used := map[State]bool{}
	for _, r := range grid.Rows {
		for _, c := range r.Cells {
			st, _ := h.Classify(c, o.Metric)
			used[st] = true
		}
	}
	for _, e := range []struct {
		st   State
		text string
	}{
		{Unmeasured, "changed, not measured"}, {NonFinite, "nan/inf"}, {Requant, "re-quantises exactly"},
		{NotCompared, "data not compared"}, {Shape, "shape changed"}, {OnlyBase, "only in base"}, {OnlyFT, "only in ft"},
	} {
		if used[e.st] {
			items = append(items, paint(gl.of(e.st, 0), e.st, 0, o.Color)+" "+e.text)
		}
	}
	if used[Absent] {
		items = append(items, "blank: no such tensor")
	}
	writeWrapped(&b, "legend: ", items, width)
	if compact {
		var ks []string
		for j, c := range grid.Columns {
			ks = append(ks, keys[j]+"="+ckpt.EscapeName(c.Kind))
		}
		writeWrapped(&b, "columns: ", ks, width)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// sectionName is the heading of a section of columns.
func sectionName(s string) string {
	switch s {
	case "":
		return "norms"
	case "linear_attn":
		return "linear_attn (GDN)"
	}
	return s
}

// writeWrapped writes prefix and items separated by two spaces, wrapping
// before width (items are measured without their colour codes).
func writeWrapped(b *strings.Builder, prefix string, items []string, width int) {
	line, n := prefix, utf8.RuneCountInString(prefix)
	indent := strings.Repeat(" ", n)
	for i, it := range items {
		w := visibleWidth(it)
		if i > 0 {
			if n+2+w > width {
				b.WriteString(line + "\n")
				line, n = indent, len(indent)
			} else {
				line += "  "
				n += 2
			}
		}
		line += it
		n += w
	}
	b.WriteString(line + "\n")
}

// visibleWidth counts the runes of s outside ANSI escape sequences.
func visibleWidth(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r == 'm' {
				esc = false
			}
		case r == '\x1b':
			esc = true
		default:
			n++
		}
	}
	return n
}

func pad(s string, w int) string {
	if n := utf8.RuneCountInString(s); n < w {
		return s + strings.Repeat(" ", w-n)
	}
	return s
}

func truncate(s string, w int) string {
	if utf8.RuneCountInString(s) <= w {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, w)])
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

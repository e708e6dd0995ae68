package output

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// Formats a command can print.
const (
	Auto     = "auto"
	Table    = "table"
	Text     = "text"
	JSON     = "json"
	JSONL    = "jsonl"
	CSV      = "csv"
	Markdown = "markdown"
)

// Resolve turns "auto" (or "") into table on a terminal and text
// otherwise, and checks that the format is one of allowed.
func Resolve(format string, terminal bool, allowed ...string) (string, error) {
	if format == "" || format == Auto {
		if terminal {
			return Table, nil
		}
		return Text, nil
	}
	for _, a := range allowed {
		if a == format {
			return format, nil
		}
	}
	return "", fmt.Errorf("unknown --format %q (want one of auto, %s)", format, strings.Join(allowed, ", "))
}

// Grid is a table of strings: a title (optional), a header and rows.
// Cells hold exact, machine-friendly values (Int, Shape); the table format
// adapts them for people:
//
//   - Right lists the columns that are right-aligned (numbers); their
//     integers get thousands separators in a table;
//
//   - Sizes lists the columns that hold byte counts, shown in binary units
//     (28.7 GiB) in a table;
//
//   - Color lists the columns that hold statuses (pass, warn, fail, skip)
//     or diff relations, coloured in a table on a colour terminal.
//
//   - Names lists the columns of names (tensors, targets, files) that a
//     table never cuts nor wraps;
//
//   - Group lists the rows of a table under headings: consecutive rows
//     whose first cells share a layer prefix ("model.language_model.
//     layers.3.", see LayerPrefix) or a first component ("mtp.") are listed
//     under it, each showing only the rest of its name;
//
//   - GroupAlso lists columns (of names, as in a list of sources) whose
//     shared layer prefix within a group also goes into its heading;
//
//   - Drop gives columns a priority (1, 2, ...; 0: always shown): when a
//     table does not fit the terminal, the columns of the highest
//     priorities are dropped (and named in a note above the table).
//
// On a terminal (a *Term) a table fits the terminal's width: text cells
// wrap at spaces (long words after '.', '/' and ','), never inside a word;
// numbers, statuses, shapes and names are never cut. Text, CSV and
// Markdown keep the cells and rows as they are.
type Grid struct {
	Title     string
	Header    []string
	Rows      [][]string
	Right     map[int]bool
	Sizes     map[int]bool
	Color     map[int]bool
	Names     map[int]bool
	Group     bool
	GroupAlso map[int]bool
	Drop      map[int]int
}

// Render writes g in format (table, text, markdown or csv), every cell
// and the title escaped for the format (EscapeCSV, EscapeMarkdown,
// EscapeTerm: cells may
// hold names and values copied from inputs).
func (g *Grid) Render(w io.Writer, format string) error {
	if esc := EscapeFor(format); format == CSV || format == Markdown || format == Text || format == Table {
		e := *g
		e.Title = esc(g.Title)
		e.Rows = make([][]string, len(g.Rows))
		for i, r := range g.Rows {
			e.Rows[i] = make([]string, len(r))
			for j, c := range r {
				e.Rows[i][j] = esc(c)
			}
		}
		g = &e
	}
	switch format {
	case CSV:
		cw := csv.NewWriter(w)
		if err := cw.Write(g.Header); err != nil {
			return err
		}
		if err := cw.WriteAll(g.Rows); err != nil {
			return err
		}
		cw.Flush()
		return cw.Error()
	case Text:
		if g.Title != "" {
			fmt.Fprintf(w, "%s\n", g.Title)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(g.Header, "\t"))
		for _, r := range g.Rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	case Table:
		if g.Title != "" {
			fmt.Fprintf(w, "%s\n", g.Title)
		}
		return g.renderPeople(w)
	case Markdown:
		if g.Title != "" {
			fmt.Fprintf(w, "### %s\n\n", g.Title)
		}
		opts := []tablewriter.Option{tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
			tablewriter.WithRenderer(renderer.NewMarkdown())}
		aligns := make([]tw.Align, len(g.Header))
		for i := range aligns {
			aligns[i] = tw.AlignLeft
			if g.Right[i] {
				aligns[i] = tw.AlignRight
			}
		}
		opts = append(opts, tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}))
		t := tablewriter.NewTable(w, opts...)
		header, rows := g.Header, g.Rows
		hdr := make([]any, len(header))
		for i, h := range header {
			hdr[i] = h
		}
		t.Header(hdr...)
		for _, r := range rows {
			row := make([]any, len(r))
			for i, c := range r {
				row[i] = c // escaped above (Markdown: a '|' would split the column)
			}
			if err := t.Append(row...); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		fmt.Fprintln(w)
		return nil
	}
	return fmt.Errorf("format %q cannot render a table", format)
}

// Int formats an integer as plain digits (machine-friendly; a table adds
// thousands separators in its right-aligned columns).
func Int(n int64) string { return strconv.FormatInt(n, 10) }

// grouped inserts thousands separators into a string of decimal digits
// (with an optional sign).
func grouped(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Bytes formats a byte count in binary units (exact below 1 KiB).
func Bytes(n int64) string { return ckpt.FormatBytes(n) }

// Shape formats a shape as [a,b,c]: one field for awk, cut and sort.
func Shape(s []int64) string { return ckpt.FormatShape(s) }

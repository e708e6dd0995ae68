package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/report"
	"github.com/ckpt-dev/ckpt/diff"
)

// diffOutput returns where diff writes its report: stdout, or (-o) the
// output policy's file (atomicfile.Open: a file written atomically, or a
// character device or FIFO written through), opened before the comparison
// so that a refused path (exit 2) or an unwritable one (exit 3) fails at
// once; diff.Run refuses a file of either side. commit renames it into
// place, abort (after commit: nothing) removes the temporary file.
func (a *App) diffOutput(path string) (w io.Writer, commit func() error, abort func(), err error) {
	nothing := func() error { return nil }
	if path == "" {
		return a.Out, nothing, func() {}, nil
	}
	af, err := atomicfile.Open(path, atomicfile.Policy{Flag: "-o"})
	if err != nil {
		return nil, nil, nil, err
	}
	sw := &stickyWriter{w: af}
	return sw, func() error {
		if sw.err != nil {
			return fmt.Errorf("writing %s: %w", path, sw.err)
		}
		if err := af.Commit(); err != nil {
			return err
		}
		fmt.Fprintf(a.Err, "ckpt: wrote the diff report to %s\n", path)
		return nil
	}, af.Abort, nil
}

// stickyWriter keeps the first write error (the report's lines are
// written without checking each).
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	if err != nil {
		s.err = err
	}
	return n, err
}

// writeDiffStrip writes the heatmap strip of --by layer: on a terminal
// fitted to its width, in colour unless NO_COLOR, with block glyphs in a
// UTF-8 locale; elsewhere in ASCII for 80 columns (in Markdown as a code
// block).
func writeDiffStrip(w io.Writer, format string, res *diff.Result, v diffView) error {
	h := report.Build(res)
	o := report.StripOptions{Width: 80, Metric: report.RelL2}
	if t := output.TermOf(w); t != nil && format == output.Table {
		o.Color, o.Unicode = t.Color, utf8Locale(v.Getenv)
		if t.Width > 0 {
			o.Width = t.Width
		}
	}
	var b strings.Builder
	if err := report.WriteStrip(&b, h, o); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	s := b.String()
	if format == output.Markdown {
		// a fence longer than any run of backticks inside (names are
		// copied into the strip)
		fence := "```"
		for strings.Contains(s, fence) {
			fence += "`"
		}
		s = fence + "text\n" + s + fence + "\n"
	}
	_, err := fmt.Fprint(w, s)
	return err
}

// utf8Locale reports whether the locale ($LC_ALL, else $LC_CTYPE, else
// $LANG) is a UTF-8 one.
func utf8Locale(getenv func(string) string) bool {
	if getenv == nil {
		return false
	}
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(k); v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return false
}

// writeDiffHTML writes the self-contained HTML page of the result.
func writeDiffHTML(w io.Writer, res *diff.Result, v diffView) error {
	p := report.Page{
		Result:  res,
		Heatmap: report.Build(res),
		Verdict: diffVerdict(res),
		Layers:  res.Layers,
	}
	if p.Layers == nil {
		p.Layers = diff.ByLayer(res.Tensors)
	}
	p.Relations = append(p.Relations, summaryRelations(res)...)
	for _, c := range res.Config {
		text := describeConfigChange(c) + configNote(c)
		p.Config = append(p.Config, report.ConfigLine{Path: ckpt.EscapeName(c.Path), Change: c.Change, Text: text})
	}
	if s := res.Sample; s != nil {
		p.SampleLine = fmt.Sprintf("%d tensor(s) sampled, %d read whole; read %s, %s", s.SampledTensors, s.WholeTensors,
			sideRead("base", s.Base), sideRead("ft", s.FT))
	}
	mode := string(res.Mode)
	if res.Sampled {
		mode += fmt.Sprintf(" (--sample: the data of %d of %d tensors)", res.SampleTensors, len(res.Tensors))
	}
	if s := res.Sample; s != nil {
		mode += fmt.Sprintf(", sampled: %s per tensor and side (seed %d)", output.Bytes(s.BytesPerTensor), s.Seed)
	}
	p.Mode = mode
	return report.WriteHTML(w, &p)
}

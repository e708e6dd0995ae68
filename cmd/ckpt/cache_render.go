package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/list"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
)

// printBuild renders a cache build: its JSON document, or the counts, the
// speed, the DRAM per device and the manifest's path.
func printBuild(w io.Writer, format string, rep *build.Result) error {
	out, plan := rep.Document, rep.Plan
	if format == output.JSON {
		return output.WriteJSON(w, out)
	}
	esc := output.EscapeFor(format)
	fmt.Fprintf(w, "%s on mesh %s: %d files in %s: %d built, %d unchanged, %d removed\n", esc(out.Profile), out.Mesh, out.Files,
		esc(filepath.Join(out.Out, filepath.FromSlash(plan.CacheDir))), len(out.Built), out.Skipped, len(out.Removed))
	fmt.Fprintf(w, "streamed %d source tensors (%s elements, %s) in %.1fs: %.0f M elements/s\n", out.SourceTensors,
		output.Int(out.SourceElements), output.Bytes(out.SourceBytes), out.Seconds, out.ElementsPerSecond/1e6)
	if v := out.Vision; v != nil {
		fmt.Fprintf(w, "vision part %s: %d files in %s: %d built, %d unchanged, %d removed\n", esc(v.Profile), v.Files,
			esc(filepath.Join(v.Out, filepath.FromSlash(v.CacheDir))), len(v.Built), v.Skipped, len(v.Removed))
	}
	if err := printMemory(w, format, plan.Device, out.Memory, out.PerDevice); err != nil {
		return err
	}
	fmt.Fprintf(w, "manifest: %s\n", esc(out.Manifest))
	if v := out.Vision; v != nil {
		fmt.Fprintf(w, "manifest: %s\n", esc(v.Manifest))
	}
	return nil
}

// printCheck renders the check of one cache folder: its JSON document,
// its findings as JSON Lines, or printFindings.
func printCheck(w io.Writer, format string, res *check.DirResult) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		return output.WriteJSONL(w, "finding", res.Findings, res.SummaryRecord())
	}
	return printFindings(w, format, res)
}

// printCheckAll renders the checks of several cache folders: each
// folder's findings and verdict, then a line counting the verdicts (json:
// check.Result; jsonl: the findings with their folder's dir).
func printCheckAll(w io.Writer, format string, res *check.Result) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		return output.WriteJSONL(w, "finding", res.Rows(), res.SummaryRecord())
	}
	for i, r := range res.Folders {
		if i > 0 && format != output.Text {
			fmt.Fprintln(w)
		}
		if err := printFindings(w, format, r); err != nil {
			return err
		}
	}
	verdict := "all ok"
	if failed := res.Failed(); failed > 0 {
		verdict = fmt.Sprintf("%d FAILED", failed)
	}
	_, err := fmt.Fprintf(w, "%d cache folders in %s checked: %s\n", len(res.Folders), output.EscapeFor(format)(res.Dir), verdict)
	return err
}

// printFindings renders a cache check: one line per finding in text
// ("id: file: message"), a table (finding, file, message) otherwise; then
// the verdict. The folder, the source (the manifest's, when no --source
// was given: an archive's word) and the file names are copied text,
// escaped for the format.
func printFindings(w io.Writer, format string, r *check.DirResult) error {
	esc := output.EscapeFor(format)
	// A warning (the missing vision folder of a text folder checked
	// alone) is named as one: it does not fail the check.
	id := func(f ckpt.Finding) string {
		if f.Status == ckpt.Warn {
			return string(f.ID) + " (warning)"
		}
		return string(f.ID)
	}
	if format == output.Text {
		for _, f := range r.Findings {
			if f.File() != "" {
				fmt.Fprintf(w, "%s: %s: %s\n", id(f), esc(f.File()), esc(f.Message))
			} else {
				fmt.Fprintf(w, "%s: %s\n", id(f), esc(f.Message))
			}
		}
	} else if len(r.Findings) > 0 {
		g := &output.Grid{Header: []string{"finding", "file", "message"}}
		for _, f := range r.Findings {
			g.Rows = append(g.Rows, []string{id(f), ckpt.EscapeName(f.File()), ckpt.EscapeName(f.Message)})
		}
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, ig := range r.Ignore {
		fmt.Fprintf(w, "left out of the plan by --ignore %s: %s\n", esc(ckpt.Quote(ig.Glob)), esc(ignoredTensors(ig.Tensors)))
	}
	if r.OK {
		if r.VisionNotVerified != "" {
			// Not the model: its vision folder was not there to check.
			why := "was not found and not verified"
			if r.VisionOwner != "" {
				why = "holds the vision part of " + r.VisionOwner + " and was not verified"
			}
			fmt.Fprintf(w, "ok (text folder only: the vision folder %s %s): %d files (%s) in %s match the plan of %s and their manifest; %s\n",
				esc(r.VisionNotVerified), esc(why), r.Files, output.Bytes(r.Bytes), esc(r.Dir), esc(r.Source), esc(r.Verdict(flagWords())))
			return nil
		}
		fmt.Fprintf(w, "ok: %d files (%s) in %s match the plan of %s and their manifest; %s\n",
			r.Files, output.Bytes(r.Bytes), esc(r.Dir), esc(r.Source), esc(r.Verdict(flagWords())))
		return nil
	}
	failed := 0
	for _, f := range r.Findings {
		if f.Failed() {
			failed++
		}
	}
	fmt.Fprintf(w, "FAILED: %d problem(s) in %s (%d files checked)\n", failed, esc(r.Dir), r.Files)
	return nil
}

// printList renders a cache listing: its JSON document, its files as JSON
// Lines, or a grid (name, dtype, layout, shard shape, placement, shards,
// memory, bytes) and, but in csv, a line with the totals.
func printList(w io.Writer, format string, res *list.Result) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		return output.WriteJSONL(w, "file", res.Files, res.SummaryRecord())
	}
	g := &output.Grid{Header: []string{"name", "dtype", "layout", "shard shape", "placement", "shards", "memory", "bytes"}, Right: map[int]bool{5: true, 7: true},
		Sizes: map[int]bool{7: true}}
	tableForPeople(g, map[string]int{"bytes": 1, "shard shape": 2, "dtype": 3, "placement": 4, "shards": 5, "layout": 6, "memory": 7})
	for _, e := range res.Files {
		if e.Error != "" {
			g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Path), "?", "?", "?", "unreadable: " + ckpt.EscapeName(e.Error), "", "", output.Int(e.Bytes)})
			continue
		}
		shape := make([]int64, len(e.DeviceShape))
		for i, d := range e.DeviceShape {
			shape[i] = int64(d)
		}
		g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Name), e.DType, e.Layout, output.Shape(shape), e.PlacementText, fmt.Sprint(e.Shards), e.MemoryText,
			output.Int(e.Bytes)})
	}
	if err := g.Render(w, format); err != nil {
		return err
	}
	if format != output.CSV {
		unfinished := ""
		switch n := len(res.Unfinished); {
		case n == 1:
			unfinished = " (UNFINISHED build: no manifest)"
		case n > 1:
			unfinished = fmt.Sprintf(" (%d UNFINISHED builds: no manifest)", n)
		}
		fmt.Fprintf(w, "%d files, %s%s\n", len(res.Files), output.Bytes(res.Bytes()), unfinished)
	}
	return nil
}

// ignoredTensors is "N tensor(s): a, b, ..." (at most 8 names).
func ignoredTensors(names []string) string {
	if len(names) == 0 {
		return "no tensor"
	}
	q := make([]string, 0, min(len(names), 8))
	for _, n := range names[:min(len(names), 8)] {
		q = append(q, ckpt.EscapeName(n))
	}
	s := fmt.Sprintf("%d tensor(s): %s", len(names), strings.Join(q, ", "))
	if len(names) > 8 {
		s += fmt.Sprintf(", ... (%d more)", len(names)-8)
	}
	return s
}

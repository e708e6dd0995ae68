package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
)

// printProfiles renders the built-in profiles: JSON (and JSON Lines, one
// profile a line), or text for people and tools alike.
func printProfiles(w io.Writer, format string, l *mapping.ProfileList) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, l)
	case output.JSONL:
		return output.WriteJSONL(w, "profile", l.Profiles, l.Summary())
	}
	for i, p := range l.Profiles {
		if i > 0 {
			fmt.Fprintln(w)
		}
		name := p.Name
		if p.Default {
			name += " (default)"
		}
		if len(p.FormerNames) > 0 {
			name += " (formerly " + strings.Join(p.FormerNames, ", ") + ")"
		}
		fmt.Fprintf(w, "%s\n  %s\n", name, p.Description)
		printPins(w, "  ", p.Pinned)
		for _, v := range p.Variables {
			fixed := ""
			if v.Unsupported != "" {
				fixed = " (fixed: " + v.Unsupported + ")"
			}
			fmt.Fprintf(w, "  variable %s=%v%s: %s\n", v.Name, v.Default, fixed, v.Doc)
		}
	}
	fmt.Fprintf(w, "\ndefault: %s: %s\n", l.Default, l.DefaultReason)
	return nil
}

// printPins writes a profile's upstream pins, one file a line, under
// indent.
func printPins(w io.Writer, indent string, p *mapping.Pinned) {
	if p == nil {
		fmt.Fprintf(w, "%sno upstream pin\n", indent)
		return
	}
	fmt.Fprintf(w, "%spinned: %s@%s %s\n", indent, p.Repo, p.Commit, p.Path)
	if p.Note != "" {
		fmt.Fprintf(w, "%s  (%s)\n", indent, p.Note)
	}
	files := make([]string, 0, len(p.Files))
	for f := range p.Files {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "%s  %s@%s\n", indent, f, p.Files[f])
	}
	if len(p.NotAtLine) > 0 {
		fmt.Fprintf(w, "%snot read at the line (%d of %d files): %s\n", indent, len(p.NotAtLine), len(p.Files), strings.Join(p.NotAtLine, ", "))
	}
	for _, o := range p.Open {
		fmt.Fprintf(w, "%sopen: %s\n", indent, o)
	}
}

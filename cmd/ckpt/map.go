package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
)

type mapOptions struct {
	Source string
	// planFlags: --profile, --rules, --mesh, --device, --tag and --set
	// (the NAME=VALUE overrides of profile variables).
	planFlags
	Format  string
	Dump    bool
	List    bool
	Summary bool
	// AgainstCache holds the plan against an existing cache instead of
	// printing it.
	AgainstCache string
	// Match and Exclude select the source tensors whose targets are
	// listed.
	Match, Exclude []string
	// DeviceDRAM is the DRAM of one device (--device-dram).
	DeviceDRAM string
}

// mapValues are what map's flags with a syntax parsed into, as they were
// set (their text stays in mapOptions).
type mapValues struct {
	plan           planValues
	match, exclude globsValue
	deviceDRAM     sizeValue
}

func (a *App) newMapCmd() *cobra.Command {
	o, v := &mapOptions{}, &mapValues{}
	var opt mapping.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use: "map SRC",
		Short: "Show the weight-mapping plan onto a 1xN Tenstorrent mesh: every source tensor → cache file, transform, placement, dtype; " +
			"fails on tensors no rule covers",
		Example: `  ckpt map ./Qwen3.5-27B-FP8 --mesh 1x2 --summary
  ckpt map ./Qwen3.5-27B-FP8 --set proj_1d_decode=false
  ckpt map ./Qwen3.5-27B-FP8 --match 'mtp.**'
  ckpt map --list-profiles
  ckpt map ./Qwen3.5-27B-FP8 --profile qwen36@main-2026-10
  ckpt map --dump > my-profile.json && ckpt map ./Qwen3.5-27B-FP8 --rules my-profile.json
  ckpt map ./Qwen3.5-27B-FP8 --mesh 1x2 --against-cache $TT_CACHE_PATH`,
		Args: func(cmd *cobra.Command, args []string) error {
			if (o.Dump || o.List) && len(args) == 0 {
				return nil
			}
			return exactArgs(1)(cmd, args)
		},
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.Source = args[0]
			}
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runMap(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	enumFlag(f, &o.Profile, "profile", mapping.BuiltinName, profileEnum(), "built-in mapping profile ({})")
	f.StringVar(&o.Rules, "rules", "", "load the mapping profile from this JSON file (the format --dump prints) instead of a built-in one")
	meshFlag(f, &v.plan.mesh, &o.Mesh, "device mesh, 1xN")
	f.StringVar(&o.Device, "device", "",
		"device folder of the cache root (default: $MESH_DEVICE, else upstream's name for the mesh: P150, P300, P150x4, P150x8 on Blackhole)")
	f.StringVar(&o.Tag, "tag", "", "cache tag of tensor_cache_<tag>_mesh1xN (default: the profile's, e.g. bfp8)")
	enumFlag(f, &o.Format, "format", output.Auto, formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown),
		"output format: {} (auto: table on a terminal, text otherwise; jsonl and csv: the target rows)")
	f.BoolVar(&o.Dump, "dump", false, "print the profile as JSON (a starting point for --rules) and exit; SRC is not needed")
	f.BoolVar(&o.List, "list-profiles", false,
		"list the built-in profiles (one per upstream line of the serving stack) with their upstream pins and variables, and exit; SRC is not needed")
	f.BoolVar(&o.Summary, "summary", false, "print only the summary, ignored tensors, warnings and problems (table/text/markdown)")
	addSetFlag(f, &v.plan.set, &o.Set)
	addVariantFlag(f, &o.Variant)
	globsFlag(f, &v.match, &o.Match, "match", "list only the targets of source tensors matching this glob "+
		"(`*` within a dotted segment, `**` across; problems and the exit status still concern the whole plan); repeatable")
	globsFlag(f, &v.exclude, &o.Exclude, "exclude", "do not list the targets of source tensors matching this glob "+
		"(the plan, its problems and the exit status stay the whole plan's: to leave a tensor out of the plan, --ignore); repeatable")
	globsFlag(f, &v.plan.ignore, &o.Ignore, "ignore", ignoreUsage)
	addDeviceDRAMFlag(f, &v.deviceDRAM, &o.DeviceDRAM)
	f.StringVar(&o.AgainstCache, "against-cache", "", "hold the plan against an existing cache (its root or its tensor_cache_* directory): "+
		"planned files missing there, files there the plan does not produce, every differing header field; reads headers only; exit 1 on any difference")
	return cmd
}

// check holds map's rules of the command line, in their order; the first
// broken one is the error. The plan flags' own errors (--mesh, --set,
// --ignore) come last, after the profile's, and only where a plan is made
// (not with --list-profiles or --dump).
func (o *mapOptions) check(v *mapValues, po mapping.PlanOptions) error {
	if _, err := selection(&v.match, &v.exclude); err != nil {
		return err
	}
	if _, err := deviceDRAM(&v.deviceDRAM); err != nil {
		return err
	}
	selecting := len(o.Match) > 0 || len(o.Exclude) > 0
	if selecting && (o.Dump || o.AgainstCache != "") {
		return &ckpt.UsageError{Reason: "--match and --exclude select the targets map lists; they do not apply to --dump or --against-cache"}
	}
	if len(o.Ignore) > 0 && (o.Dump || o.List) {
		return &ckpt.UsageError{Reason: "--ignore leaves tensors out of the plan of SRC; it does not apply to --dump or --list-profiles"}
	}
	if o.List {
		if o.Dump || o.AgainstCache != "" || selecting || o.Source != "" {
			return &ckpt.UsageError{Reason: "--list-profiles takes no SRC, --dump, --against-cache, --match or --exclude"}
		}
		return nil
	}
	if o.Dump {
		return nil
	}
	return v.plan.err(po)
}

// options checks the command line (check) and is the workflow's options.
func (o *mapOptions) options(a *App, v *mapValues) (mapping.Options, error) {
	po := o.planOptions(a.Getenv, &v.plan)
	if err := o.check(v, po); err != nil {
		return mapping.Options{}, err
	}
	var sel *ckpt.Matcher
	if len(o.Match) > 0 || len(o.Exclude) > 0 {
		sel, _ = selection(&v.match, &v.exclude) // checked
	}
	dram, _ := deviceDRAM(&v.deviceDRAM) // checked
	return mapping.Options{Source: o.Source, Plan: po, Openers: a.Openers, Dump: o.Dump, List: o.List,
		AgainstCache: o.AgainstCache, Select: sel, DeviceDRAM: dram}, nil
}

func (a *App) runMap(ctx context.Context, o *mapOptions, opt mapping.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	res, err := mapping.Run(ctx, opt)
	if res != nil {
		a.warn(res.Warnings...)
	}
	if err != nil {
		return err
	}
	switch {
	case res.Profiles != nil:
		return printProfiles(a.Out, format, res.Profiles)
	case res.Profile != nil:
		b, err := res.Profile.JSON()
		if err != nil {
			return err
		}
		_, err = a.Out.Write(b)
		return err
	case o.AgainstCache != "":
		if pe := res.Problems; pe != nil {
			esc := output.EscapeFor(format)
			printProblems(a.Out, pe.Problems, esc)
			fmt.Fprintf(a.Out, "the %s plan of %s on mesh %s has %d problem(s); not compared with %s\n",
				esc(res.Plan.Profile.Name), esc(ckpt.Redact(o.Source)), res.Plan.Mesh, len(pe.Problems), esc(o.AgainstCache))
			return silentExit(exitFailed)
		}
		reps, err := check.PlanModel(res.Plan, o.AgainstCache)
		if err != nil {
			return err
		}
		return renderPlanCompare(a.Out, format, reps)
	}
	if pe := res.Problems; pe != nil && refused(pe) && format != output.JSON && format != output.JSONL {
		// No rule was applied: the plan is empty, and its tables would say nothing.
		printProblems(a.Out, pe.Problems, output.EscapeFor(format))
		return silentExit(exitFailed)
	}
	doc := res.Doc
	// Warnings are not the result: stderr, prefixed (-q drops them); the
	// JSON document keeps them in warnings.
	a.warn(doc.EntryWarnings...)
	a.warn(doc.PlanWarnings...)
	if err := printMap(a.Out, format, doc, o.Summary); err != nil {
		return err
	}
	if res.Problems != nil {
		return silentExit(exitFailed)
	}
	return nil
}

func printMap(w io.Writer, format string, res *mapping.Document, summaryOnly bool) error {
	switch format {
	case output.JSON:
		return output.WriteJSON(w, res)
	case output.JSONL:
		entries := res.Entries
		if res.Vision != nil {
			entries = append(append([]mapping.DocumentEntry(nil), entries...), res.Vision.Entries...)
		}
		return output.WriteJSONL(w, "target", entries, res.Record())
	}
	if format == output.CSV { // one table: the vision targets are named visual.*
		entries := res.Entries
		if res.Vision != nil {
			entries = append(append([]mapping.DocumentEntry(nil), entries...), res.Vision.Entries...)
		}
		return printTargets(w, format, "", entries)
	}
	if !summaryOnly {
		if err := printTargets(w, format, "", res.Entries); err != nil {
			return err
		}
		fmt.Fprintln(w)
		if v := res.Vision; v != nil {
			if err := printTargets(w, format, "vision part: "+ckpt.EscapeName(v.CacheDir), v.Entries); err != nil {
				return err
			}
			fmt.Fprintln(w)
		}
	}
	if err := printIgnored(w, format, res.Ignored); err != nil {
		return err
	}
	if res.Vision != nil && len(res.Vision.Ignored) > 0 {
		if err := printIgnored(w, format, res.Vision.Ignored); err != nil {
			return err
		}
	}
	return printMapTail(w, format, res)
}

// printTargets prints the targets table of a plan (or its vision part,
// under a title).
func printTargets(w io.Writer, format, title string, entries []mapping.DocumentEntry) error {
	{ // the table
		g := &output.Grid{Title: title, Header: []string{"target", "dtype", "layout", "placement", "shape", "per device", "memory", "sources"}}
		tableForPeople(g, map[string]int{"per device": 1, "placement": 2, "dtype": 3, "shape": 4, "layout": 5, "memory": 6})
		g.GroupAlso = map[int]bool{7: true}
		for _, e := range entries {
			pl := "replicate"
			if e.Placement.Dim != nil {
				pl = fmt.Sprintf("shard %d", *e.Placement.Dim)
				if len(e.Placement.MeshAxes) > 0 {
					pl += " (2-D: " + strings.Join(e.Placement.MeshAxes, ", ") + ")"
				}
			}
			mem := "dram"
			if e.MemoryConfig.Kind == mapping.DRAMWidthSharded {
				mem = "dram width-sharded " + output.Shape(e.MemoryConfig.ShardShape)
			}
			g.Rows = append(g.Rows, []string{
				ckpt.EscapeName(e.Target), e.DType, e.Layout, pl, output.Shape(e.Shape), output.Shape(e.DeviceShape), mem, sourceList(e.Sources),
			})
		}
		return g.Render(w, format)
	}
}

// printIgnored prints the ignored tensors by reason.
func printIgnored(w io.Writer, format string, ignored []mapping.Ignored) error {
	if len(ignored) > 0 {
		reasons := map[string]int{}
		var order []string
		for _, ig := range ignored {
			if reasons[ig.Reason] == 0 {
				order = append(order, ig.Reason)
			}
			reasons[ig.Reason]++
		}
		g := &output.Grid{Title: "ignored", Header: []string{"tensors", "reason"}, Right: map[int]bool{0: true}}
		for _, r := range order {
			g.Rows = append(g.Rows, []string{output.Int(int64(reasons[r])), r})
		}
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// printMapTail prints the memory table, the problems and the summary
// lines of a map document.
func printMapTail(w io.Writer, format string, res *mapping.Document) error {
	if res.Memory != nil {
		if err := printMemory(w, format, deviceOf(res.CacheDir), res.Memory, res.PerDevice); err != nil {
			return err
		}
	}
	esc := output.EscapeFor(format) // the prose lines' copied text, escaped for the format
	printProblems(w, res.Problems, esc)
	pin := ""
	if res.Pinned != nil {
		c := res.Pinned.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		pin = " (" + esc(fmt.Sprintf("%s@%s %s", res.Pinned.Repo, c, res.Pinned.Path)) + ")"
	}
	s := res.Summary
	if wh := res.Whole; wh != nil {
		fmt.Fprintf(w, "selected (--match/--exclude): %d of %d targets, %d of %d source tensors, %d of %d ignored, %d of %d unmapped\n",
			s.Targets, wh.Targets, s.Sources, wh.Sources, s.Ignored, wh.Ignored, s.Unmapped, wh.Unmapped)
	}
	// complete: every source tensor is in an entry or ignored (each with its
	// reason above), and the plan has no problem.
	verdict := "complete"
	switch {
	case s.Problems > 0 && res.Whole != nil:
		// The selection narrows the listing, not the plan: say whose problems these are.
		verdict = fmt.Sprintf("%d problem(s) in the whole plan "+
			"(%d unmapped there; --match/--exclude narrow what map lists, not the plan: --ignore GLOB leaves a tensor out of it)",
			s.Problems, res.Whole.Unmapped)
	case s.Problems > 0:
		verdict = fmt.Sprintf("%d problem(s)", s.Problems)
	}
	fmt.Fprintf(w, "%s%s on mesh %s (%s): %d targets in %s from %d source tensors (+%d scales), %d ignored, %d unmapped: %s\n",
		esc(res.Profile), pin, res.Mesh, esc(fmt.Sprint(res.Settings)), s.Targets, esc(res.CacheDir), s.Sources, s.Scales, s.Ignored, s.Unmapped, verdict)
	if v := res.Vision; v != nil {
		vs := v.Summary
		fmt.Fprintf(w, "vision part %s (%s): %d targets in %s from %d source tensors (+%d scales), %d ignored, %d unmapped, %d problem(s)\n",
			esc(v.Profile), esc(fmt.Sprint(v.Settings)), vs.Targets, esc(v.CacheDir), vs.Sources, vs.Scales, vs.Ignored, vs.Unmapped, vs.Problems)
	}
	return nil
}

// deviceOf is the device folder of a plan's cache dir (<device>/tensor_cache_...).
func deviceOf(cacheDir string) string {
	if i := strings.IndexByte(cacheDir, '/'); i >= 0 {
		return cacheDir[:i]
	}
	return cacheDir
}

// addSetFlag registers the repeatable --set NAME=VALUE flag of map and
// cache build, its text in dst, its settings in v.
func addSetFlag(f interface {
	StringArrayVar(*[]string, string, []string, string)
}, v *settingsValue, dst *[]string) {
	settingsFlag(f, v, dst, "override a profile variable, NAME=true|false (repeatable; ckpt map --dump lists them with their defaults)")
}

// refused reports whether the plan was refused before any rule (the
// profile serves another architecture).
func refused(pe *mapping.PlanError) bool {
	for _, p := range pe.Problems {
		if p.ID == mapping.ProblemArchitecture {
			return true
		}
	}
	return false
}

// printProblems prints a plan's problems, those of one cause on one line
// (groupProblems), their messages and names escaped by esc (the output
// format's escaping).
func printProblems(w io.Writer, problems []ckpt.Finding, esc func(string) string) {
	for _, g := range groupProblems(problems) {
		p := g.first
		line := fmt.Sprintf("problem (%s): %s", p.ID, esc(p.Message))
		if n := len(g.targets) - 1; n > 0 {
			ex := g.targets[1:min(len(g.targets), 4)]
			for i := range ex {
				ex[i] = esc(ex[i])
			}
			more := ""
			if n > len(ex) {
				more = fmt.Sprintf(" and %d more", n-len(ex))
			}
			line += fmt.Sprintf("; the same for %d more target(s): %s%s", n, strings.Join(ex, ", "), more)
		} else if g.count > 1 {
			line += fmt.Sprintf(" (%d times)", g.count)
		}
		fmt.Fprintln(w, line)
	}
}

// problemGroup is the problems of one cause: the first of them, the
// targets they name (in order), how many there are.
type problemGroup struct {
	first   ckpt.Finding
	targets []string
	count   int
}

// problemTarget matches the "target NAME: " a plan problem of one target
// starts with.
var problemTarget = regexp.MustCompile(`^target (\S+): `)

// groupProblems folds the problems of one cause into one group, in the
// order of their first: the same id and the same message once the target
// it starts with and the tensors it names are left out (42 targets that a
// mesh cannot divide for the same reason are one line with a count and
// examples; the JSON document keeps every problem).
func groupProblems(problems []ckpt.Finding) []*problemGroup {
	var out []*problemGroup
	byKey := map[string]*problemGroup{}
	for _, p := range problems {
		msg, target := p.Message, ""
		if m := problemTarget.FindStringSubmatch(msg); m != nil {
			target, msg = m[1], msg[len(m[0]):]
		}
		for _, t := range p.Tensors {
			msg = strings.ReplaceAll(msg, t, "\x00")
		}
		key := string(p.ID) + "\x00" + msg
		g := byKey[key]
		if g == nil {
			g = &problemGroup{first: p}
			byKey[key] = g
			out = append(out, g)
		}
		g.count++
		if target != "" {
			g.targets = append(g.targets, target)
		}
	}
	return out
}

// sourceList shows source names without their scales, shortening the
// common text-model prefix.
func sourceList(names []string) string {
	var out []string
	scales := 0
	for _, n := range names {
		if strings.HasSuffix(n, ckpt.ScaleSuffix) {
			scales++
			continue
		}
		out = append(out, ckpt.EscapeName(n))
	}
	s := strings.Join(out, " + ")
	if scales > 0 {
		s += fmt.Sprintf(" (+%d scales)", scales)
	}
	return s
}

// renderPlanCompare renders map --against-cache's reports: the text
// folder's, then the vision folder's. JSON is one document, the vision
// report under vision; JSON Lines one stream of both folders' differences
// and one summary; the tables give each report in turn.
// The exit code covers both.
func renderPlanCompare(w io.Writer, format string, reps []*compare.Report) error {
	if len(reps) == 1 {
		return renderCompare(w, format, reps[0], "plan", "cache")
	}
	if format == output.JSON {
		doc, v := reps[0].Document(), reps[1].Document()
		doc.Vision = &v
		doc.Same, doc.Unreadable = doc.Same && v.Same, doc.Unreadable || v.Unreadable
		if err := output.WriteJSON(w, doc); err != nil {
			return err
		}
		return compareExit(doc.Same, doc.Unreadable)
	}
	if format == output.JSONL {
		// One stream, one summary: the vision folder's differences name
		// their files from the text folder (../tensor_cache_bfp8/...), and
		// the summary counts both folders.
		m := *reps[0]
		m.Diffs = append([]compare.Difference{}, reps[0].Diffs...)
		v := reps[1]
		up := "../" + path.Base(filepath.ToSlash(v.B)) + "/"
		for _, d := range v.Diffs {
			d.File = up + d.File
			m.Diffs = append(m.Diffs, d)
		}
		m.FilesA, m.FilesB, m.Common, m.Identical = m.FilesA+v.FilesA, m.FilesB+v.FilesB, m.Common+v.Common, m.Identical+v.Identical
		return renderCompare(w, format, &m, "plan", "cache")
	}
	var worst *exitError
	for i, rep := range reps {
		if i > 0 && format != output.JSONL && format != output.CSV {
			fmt.Fprintln(w)
		}
		err := renderCompare(w, format, rep, "plan", "cache")
		var ee *exitError
		switch {
		case errors.As(err, &ee) && ee.err == nil:
			if worst == nil || ee.code > worst.code {
				worst = ee
			}
		case err != nil:
			return err
		}
	}
	if worst != nil {
		return worst
	}
	return nil
}

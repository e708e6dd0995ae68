package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
)

type mapOptions struct {
	Source  string
	Profile string
	Rules   string
	Mesh    string
	Device  string
	Tag     string
	Format  string
	Dump    bool
	Summary bool
}

func (a *App) newMapCmd() *cobra.Command {
	o := &mapOptions{}
	cmd := &cobra.Command{
		Use:   "map SRC",
		Short: "Show the weight-mapping plan onto a 1xN Tenstorrent mesh: every source tensor → cache file, transform, placement, dtype; fails on tensors no rule covers",
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Dump && len(args) == 0 {
				return nil
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.Source = args[0]
			}
			return a.runMap(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Profile, "profile", mapping.BuiltinName, "built-in mapping profile ("+strings.Join(mapping.BuiltinNames(), ", ")+")")
	f.StringVar(&o.Rules, "rules", "", "load the mapping profile from this JSON file (the format --dump prints) instead of a built-in one")
	f.StringVar(&o.Mesh, "mesh", "1x2", "device mesh, 1xN")
	f.StringVar(&o.Device, "device", "", "device directory of the cache root (default: the profile's, e.g. P300)")
	f.StringVar(&o.Tag, "tag", "", "cache tag of tensor_cache_<tag>_mesh1xN (default: the profile's, e.g. bfp8)")
	f.StringVar(&o.Format, "format", "auto", "output format: table, text, json, markdown (auto: table on a terminal, text otherwise)")
	f.BoolVar(&o.Dump, "dump", false, "print the profile as JSON (a starting point for --rules) and exit; SRC is not needed")
	f.BoolVar(&o.Summary, "summary", false, "print only the summary, ignored tensors, warnings and problems (table/text/markdown)")
	return cmd
}

// MapPlacement is the placement of a target in the map JSON.
type MapPlacement struct {
	Kind    string `json:"kind"`
	Dim     *int   `json:"dim,omitempty"`
	Devices int    `json:"devices"`
}

// MapEntry is one target of the map JSON.
type MapEntry struct {
	Target       string               `json:"target"`
	File         string               `json:"file"`
	Rule         string               `json:"rule"`
	Sources      []string             `json:"sources"`
	Transform    []string             `json:"transform"`
	Placement    MapPlacement         `json:"placement"`
	DType        string               `json:"dtype"`
	Layout       string               `json:"layout"`
	Shape        []int64              `json:"shape"`
	DeviceShape  []int64              `json:"device_shape"`
	Shards       int                  `json:"shards"`
	MemoryConfig mapping.MemoryConfig `json:"memory_config"`
	Warnings     []string             `json:"warnings,omitempty"`
}

// MapSummary counts the plan.
type MapSummary struct {
	Targets  int `json:"targets"`
	Sources  int `json:"sources"`
	Scales   int `json:"scales"`
	Ignored  int `json:"ignored"`
	Unmapped int `json:"unmapped"`
	Problems int `json:"problems"`
	Warnings int `json:"warnings"`
}

// MapResult is the map JSON document.
type MapResult struct {
	Profile  string            `json:"profile"`
	Pinned   *mapping.Pinned   `json:"pinned,omitempty"`
	Mesh     string            `json:"mesh"`
	Source   string            `json:"source"`
	CacheDir string            `json:"cache_dir"`
	Entries  []MapEntry        `json:"entries"`
	Ignored  []mapping.Ignored `json:"ignored"`
	Unmapped []string          `json:"unmapped"`
	Problems []mapping.Problem `json:"problems"`
	Warnings []string          `json:"warnings"`
	Summary  MapSummary        `json:"summary"`
}

func (a *App) loadProfile(o *mapOptions) (*mapping.Profile, error) {
	if o.Rules == "" {
		p, err := mapping.Builtin(o.Profile)
		if err != nil {
			return nil, usageError("%v", err)
		}
		return p, nil
	}
	f, err := os.Open(o.Rules)
	if err != nil {
		return nil, inputError(fmt.Errorf("opening rules: %w", err))
	}
	defer f.Close()
	p, err := mapping.LoadProfile(f, o.Rules)
	if err != nil {
		return nil, inputError(err)
	}
	return p, nil
}

func (a *App) runMap(ctx context.Context, o *mapOptions) error {
	format, err := output.Resolve(o.Format, a.Terminal, output.Table, output.Text, output.JSON, output.Markdown)
	if err != nil {
		return usageError("%v", err)
	}
	prof, err := a.loadProfile(o)
	if err != nil {
		return err
	}
	if o.Dump {
		b, err := prof.JSON()
		if err != nil {
			return err
		}
		_, err = a.Out.Write(b)
		return err
	}
	mesh, err := mapping.ParseMesh(o.Mesh)
	if err != nil {
		return usageError("%v", err)
	}
	if mesh.Rows != 1 {
		return usageError("mesh %s: only 1xN meshes are supported", mesh)
	}
	p := *prof
	if o.Device != "" {
		p.Device = o.Device
	}
	if o.Tag != "" {
		p.Tag = o.Tag
	}
	c, err := a.open(ctx, o.Source, ckpt.Options{})
	if err != nil {
		return inputError(err)
	}
	defer c.Close()
	plan, err := mapping.Build(c, &p, mesh)
	var pe *mapping.PlanError
	if err != nil && !errors.As(err, &pe) {
		return inputError(err)
	}
	res := mapResult(plan)
	if err := printMap(a.Out, format, &res, o.Summary); err != nil {
		return err
	}
	if pe != nil {
		return silentExit(1)
	}
	return nil
}

func mapResult(pl *mapping.Plan) MapResult {
	res := MapResult{Profile: pl.Profile.Name, Pinned: pl.Profile.Pinned, Mesh: pl.Mesh.String(), Source: pl.Source, CacheDir: pl.CacheDir,
		Entries: []MapEntry{}, Ignored: pl.Ignored, Unmapped: pl.Unmapped, Problems: pl.Problems, Warnings: pl.Warnings}
	sources := map[string]bool{}
	scales := map[string]bool{}
	for _, e := range pl.Entries {
		me := MapEntry{Target: e.Target, File: e.File, Rule: e.Rule, Transform: e.Describe(), DType: e.DType, Layout: e.Layout,
			Shape: e.Shape, DeviceShape: e.DeviceShape, Shards: len(e.Shards), MemoryConfig: e.Memory, Warnings: e.Warnings,
			Placement: MapPlacement{Kind: e.Placement.Kind, Devices: e.Devices}}
		if e.Placement.Kind == "shard" {
			d := e.Placement.Dim
			me.Placement.Dim = &d
		}
		for _, s := range e.Sources {
			me.Sources = append(me.Sources, s.Name)
			sources[s.Name] = true
			if s.Scale != nil {
				me.Sources = append(me.Sources, s.Scale.Name)
				scales[s.Scale.Name] = true
			}
		}
		res.Entries = append(res.Entries, me)
		for _, w := range e.Warnings {
			res.Warnings = append(res.Warnings, e.Target+": "+w)
		}
	}
	if res.Ignored == nil {
		res.Ignored = []mapping.Ignored{}
	}
	if res.Unmapped == nil {
		res.Unmapped = []string{}
	}
	if res.Problems == nil {
		res.Problems = []mapping.Problem{}
	}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	res.Summary = MapSummary{Targets: len(res.Entries), Sources: len(sources), Scales: len(scales), Ignored: len(res.Ignored),
		Unmapped: len(res.Unmapped), Problems: len(res.Problems), Warnings: len(res.Warnings)}
	return res
}

func printMap(w io.Writer, format string, res *MapResult, summaryOnly bool) error {
	if format == output.JSON {
		return output.WriteJSON(w, res)
	}
	if !summaryOnly {
		g := &output.Grid{Header: []string{"target", "dtype", "layout", "placement", "shape", "per device", "memory", "sources"}}
		for _, e := range res.Entries {
			pl := "replicate"
			if e.Placement.Dim != nil {
				pl = fmt.Sprintf("shard %d", *e.Placement.Dim)
			}
			mem := "dram"
			if e.MemoryConfig.Kind == mapping.DRAMWidthSharded {
				mem = "dram width-sharded " + output.Shape(e.MemoryConfig.ShardShape)
			}
			g.Rows = append(g.Rows, []string{ckpt.EscapeName(e.Target), e.DType, e.Layout, pl, output.Shape(e.Shape), output.Shape(e.DeviceShape), mem, sourceList(e.Sources)})
		}
		if err := g.Render(w, format); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(res.Ignored) > 0 {
		reasons := map[string]int{}
		var order []string
		for _, ig := range res.Ignored {
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
	for _, line := range groupWarnings(res.Entries) {
		fmt.Fprintf(w, "warning: %s\n", line)
	}
	for _, wn := range res.Warnings {
		if !strings.Contains(wn, "(TILE pads it)") {
			fmt.Fprintf(w, "warning: %s\n", ckpt.EscapeName(wn))
		}
	}
	for _, p := range res.Problems {
		fmt.Fprintf(w, "problem (%s): %s\n", p.Kind, ckpt.EscapeName(p.Message))
	}
	pin := ""
	if res.Pinned != nil {
		c := res.Pinned.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		pin = fmt.Sprintf(" (%s@%s %s)", res.Pinned.Repo, c, res.Pinned.Path)
	}
	s := res.Summary
	verdict := "complete"
	if s.Problems > 0 {
		verdict = fmt.Sprintf("%d problem(s)", s.Problems)
	}
	fmt.Fprintf(w, "%s%s on mesh %s: %d targets in %s from %d source tensors (+%d scales), %d ignored, %d unmapped: %s\n",
		res.Profile, pin, res.Mesh, s.Targets, ckpt.EscapeName(res.CacheDir), s.Sources, s.Scales, s.Ignored, s.Unmapped, verdict)
	return nil
}

// groupWarnings collapses per-entry warnings by rule and message.
func groupWarnings(entries []MapEntry) []string {
	type key struct{ rule, msg string }
	count := map[key]int{}
	var order []key
	for _, e := range entries {
		for _, w := range e.Warnings {
			k := key{e.Rule, w}
			if count[k] == 0 {
				order = append(order, k)
			}
			count[k]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].rule < order[j].rule })
	var out []string
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s (%d targets): %s", k.rule, count[k], k.msg))
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

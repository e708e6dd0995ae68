package mapping

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// DocumentPlacement is the placement of a target in the map JSON.
// MeshAxes is set for a 2-D mesh mapper (ShardTensor2dMesh): one placement
// per mesh axis, rows then columns.
type DocumentPlacement struct {
	Kind     string   `json:"kind"`
	Dim      *int     `json:"dim,omitempty"`
	MeshAxes []string `json:"mesh_axes,omitempty"`
	Devices  int      `json:"devices"`
}

// DocumentEntry is one target of the map JSON.
type DocumentEntry struct {
	Target       string            `json:"target"`
	File         string            `json:"file"`
	Rule         string            `json:"rule"`
	Sources      []string          `json:"sources"`
	Transform    []string          `json:"transform"`
	Placement    DocumentPlacement `json:"placement"`
	DType        string            `json:"dtype"`
	Layout       string            `json:"layout"`
	Shape        []int64           `json:"shape"`
	DeviceShape  []int64           `json:"device_shape"`
	Shards       int               `json:"shards"`
	MemoryConfig MemoryConfig      `json:"memory_config"`
	Warnings     []string          `json:"warnings,omitempty"`
}

// SummaryRecord counts the plan.
type SummaryRecord struct {
	Targets  int `json:"targets"`
	Sources  int `json:"sources"`
	Scales   int `json:"scales"`
	Ignored  int `json:"ignored"`
	Unmapped int `json:"unmapped"`
	Problems int `json:"problems"`
	Warnings int `json:"warnings"`
}

// Document is the map JSON document (docs/cli.md): the plan as `ckpt map`
// reports it.
type Document struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema   ckpt.Schema     `json:"schema_version"`
	Profile  string          `json:"profile"`
	Pinned   *Pinned         `json:"pinned,omitempty"`
	Mesh     string          `json:"mesh"`
	Settings Settings        `json:"settings"`
	Source   string          `json:"source"`
	CacheDir string          `json:"cache_dir"`
	Entries  []DocumentEntry `json:"entries"`
	Ignored  []Ignored       `json:"ignored"`
	Unmapped []string        `json:"unmapped"`
	Problems []ckpt.Finding  `json:"problems"`
	Warnings []string        `json:"warnings"`
	Summary  SummaryRecord   `json:"summary"`
	// Whole is the summary of the whole plan when the document is a
	// selection (Select); Summary then counts the selection.
	Whole *SummaryRecord `json:"whole,omitempty"`
	// PerDevice and Memory are the DRAM each device holds under the whole
	// plan and whether it fits (Plan.Memory; set by the caller, which
	// knows the device DRAM).
	PerDevice []DeviceBytes `json:"per_device,omitempty"`
	Memory    *Memory       `json:"memory,omitempty"`
	// Vision is the document of the plan's vision part (Plan.Vision), its
	// own cache folder; its problems are this document's too.
	Vision *Document `json:"vision,omitempty"`
	// PlanWarnings are the warnings about the plan as a whole and
	// EntryWarnings the per-target warnings grouped by rule
	// (Plan.GroupedWarnings); Warnings holds both, per target.
	PlanWarnings  []string `json:"-"`
	EntryWarnings []string `json:"-"`
}

// Document returns the plan as the map JSON document.
func (pl *Plan) Document() Document {
	res := Document{Profile: pl.Profile.Name, Pinned: pl.Profile.Pinned, Mesh: pl.Mesh.String(), Settings: pl.Settings, Source: pl.Source, CacheDir: pl.CacheDir,
		Entries: []DocumentEntry{}, Ignored: pl.Ignored, Unmapped: pl.Unmapped, Problems: pl.Problems,
		Warnings: append([]string(nil), pl.Warnings...), PlanWarnings: pl.Warnings, EntryWarnings: pl.GroupedWarnings()}
	sources := map[string]bool{}
	scales := map[string]bool{}
	for _, e := range pl.Entries {
		me := DocumentEntry{Target: e.Target, File: e.File, Rule: e.Rule, Transform: e.Describe(), DType: e.DType, Layout: e.Layout,
			Shape: e.Shape, DeviceShape: e.DeviceShape, Shards: len(e.Shards), MemoryConfig: e.Memory, Warnings: e.Warnings,
			Placement: DocumentPlacement{Kind: e.Placement.Kind, MeshAxes: e.Placement.MeshAxes, Devices: e.Devices}}
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
		res.Ignored = []Ignored{}
	}
	if res.Unmapped == nil {
		res.Unmapped = []string{}
	}
	if res.Problems == nil {
		res.Problems = []ckpt.Finding{}
	}
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	res.Summary = SummaryRecord{Targets: len(res.Entries), Sources: len(sources), Scales: len(scales), Ignored: len(res.Ignored),
		Unmapped: len(res.Unmapped), Problems: len(res.Problems), Warnings: len(res.Warnings)}
	if pl.Vision != nil {
		v := pl.Vision.Document()
		res.Vision = &v
	}
	return res
}

// selectBy returns the part of the document whose source tensors m selects
// (ckpt map --match): the entries with a selected source, the ignored and
// unmapped tensors m selects, their warnings, and the summary of those.
// Problems concern the plan as a whole and are all kept.
func (r Document) selectBy(m *ckpt.Matcher) Document {
	out := r
	whole := r.Summary
	if r.Whole != nil {
		whole = *r.Whole
	}
	out.Whole = &whole
	out.Entries, out.Ignored, out.Unmapped = []DocumentEntry{}, []Ignored{}, []string{}
	out.Warnings = append([]string{}, r.PlanWarnings...)
	sources, scales := map[string]bool{}, map[string]bool{}
	var rules []string
	var warns [][]string
	for _, e := range r.Entries {
		sel := false
		for _, s := range e.Sources {
			sel = sel || m.Match(s)
		}
		if !sel {
			continue
		}
		out.Entries = append(out.Entries, e)
		for _, s := range e.Sources {
			if strings.HasSuffix(s, ckpt.ScaleSuffix) {
				scales[s] = true
			} else {
				sources[s] = true
			}
		}
		for _, w := range e.Warnings {
			out.Warnings = append(out.Warnings, e.Target+": "+w)
		}
		rules, warns = append(rules, e.Rule), append(warns, e.Warnings)
	}
	out.EntryWarnings = groupWarnings(rules, warns)
	for _, ig := range r.Ignored {
		if m.Match(ig.Name) {
			out.Ignored = append(out.Ignored, ig)
		}
	}
	for _, u := range r.Unmapped {
		if m.Match(u) {
			out.Unmapped = append(out.Unmapped, u)
		}
	}
	out.Summary = SummaryRecord{Targets: len(out.Entries), Sources: len(sources), Scales: len(scales), Ignored: len(out.Ignored),
		Unmapped: len(out.Unmapped), Problems: len(out.Problems), Warnings: len(out.Warnings)}
	if r.Vision != nil {
		v := r.Vision.selectBy(m)
		out.Vision = &v
	}
	return out
}

// GroupedWarnings collapses the plan's per-entry warnings by rule and
// message: "RULE (N targets): MESSAGE", in rule order.
func (pl *Plan) GroupedWarnings() []string {
	rules := make([]string, len(pl.Entries))
	warns := make([][]string, len(pl.Entries))
	for i, e := range pl.Entries {
		rules[i], warns[i] = e.Rule, e.Warnings
	}
	return groupWarnings(rules, warns)
}

// groupWarnings collapses per-entry warnings (warns[i] of an entry of rule
// rules[i]) by rule and message.
func groupWarnings(rules []string, warns [][]string) []string {
	type key struct{ rule, msg string }
	count := map[key]int{}
	var order []key
	for i, rule := range rules {
		for _, w := range warns[i] {
			k := key{rule, w}
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

// DocumentRecord is the closing JSON Lines record of the map document: its
// summary with the profile, mesh and source.
type DocumentRecord struct {
	Profile string         `json:"profile"`
	Mesh    string         `json:"mesh"`
	Source  string         `json:"source"`
	Whole   *SummaryRecord `json:"whole,omitempty"`
	SummaryRecord
}

// Record is the document's closing JSON Lines record.
func (r *Document) Record() DocumentRecord {
	return DocumentRecord{Profile: r.Profile, Mesh: r.Mesh, Source: r.Source, Whole: r.Whole, SummaryRecord: r.Summary}
}

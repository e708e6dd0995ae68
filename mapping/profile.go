package mapping

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Profile is a declarative mapping from checkpoint tensors to the files of
// a serving stack's tensor cache. It is plain data: it round-trips through
// JSON (ckpt map --dump prints the built-in one, --rules loads a user one).
type Profile struct {
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Pinned      *Pinned `json:"pinned,omitempty"`
	// Device and Tag name the cache root <Device>/tensor_cache_<Tag>_mesh<R>x<C>.
	Device string   `json:"device"`
	Tag    string   `json:"tag"`
	Notes  []string `json:"notes,omitempty"`
	Rules  []Rule   `json:"rules"`
	Ignore []Ignore `json:"ignore,omitempty"`
}

// Pinned records the upstream revision a profile transcribes.
type Pinned struct {
	Repo   string `json:"repo"`
	Commit string `json:"commit"`
	Path   string `json:"path"`
	// Files maps each file read to the stored revision it was read at,
	// where that differs from Commit.
	Files map[string]string `json:"files,omitempty"`
}

// Rule produces one cache target per binding of its captures.
//
// Sources are name templates: a segment written {X} captures that whole
// dotted segment (e.g. model.language_model.layers.{L}.mlp.down_proj.weight);
// every source of one binding must agree on the captured values, and Target
// substitutes them (layers.{L}/mlp.down_proj.weight.tp). A source's FP8
// block scale (<name>_scale_inv) is consumed implicitly when present.
type Rule struct {
	ID      string   `json:"id"`
	Target  string   `json:"target"`
	Sources []string `json:"sources"`
	// LayerType restricts {L} to decoder layers of that type
	// (config layer_types: "linear_attention", "full_attention", or "any"
	// for every decoder layer). With Required, every such layer must
	// produce the target.
	LayerType string `json:"layer_type,omitempty"`
	// When makes the rule conditional on the config; a rule whose
	// condition is false maps nothing.
	When *Condition `json:"when,omitempty"`
	// Required: when the rule applies, matching nothing is an error.
	Required bool `json:"required,omitempty"`
	// Assert lists "lhs == rhs" checks over config variables that must
	// hold for the rule to be valid (e.g. the conv kernel size it spells out).
	Assert    []string  `json:"assert,omitempty"`
	Transform []Step    `json:"transform,omitempty"`
	Placement Placement `json:"placement"`
	DType     string    `json:"dtype"`
	Layout    string    `json:"layout"`
	Memory    string    `json:"memory"`
	Note      string    `json:"note,omitempty"`
}

// Step is one transform of a rule's chain. Ops:
//
//   - "round" (DType "BF16"): round every value to that dtype, nearest-even,
//     as torch's .to(torch.bfloat16) does. FP8 sources are dequantised first
//     (code × block scale, in float32) — implicitly, before any step.
//   - "add" (Value): add a constant in float32 (the unit offset of
//     zero-centred norms). Put a "round" after it when the serving code
//     adds in bf16.
//   - "select_cols" (Start, Count): keep columns [Start, Start+Count) of
//     every source's matrix view (shape[0] × product of the rest).
//   - "fuse" (Parts, Interleave): build the row order of the result from
//     parts of the sources, per device (see Part).
//   - "transpose": the [out, in] matrix becomes [in, out].
//   - "reshape" (Shape): give the row-major result this shape; the
//     expressions may use rows and cols of the (transposed) matrix.
//
// Value steps (round, add) are elementwise and apply in their listed order;
// layout steps must appear in the order select_cols, fuse, transpose,
// reshape. The two kinds commute, so their interleaving is cosmetic.
type Step struct {
	Op         string   `json:"op"`
	DType      string   `json:"dtype,omitempty"`
	Value      *float64 `json:"value,omitempty"`
	Start      string   `json:"start,omitempty"`
	Count      string   `json:"count,omitempty"`
	Parts      []Part   `json:"parts,omitempty"`
	Interleave bool     `json:"interleave,omitempty"`
	Shape      []string `json:"shape,omitempty"`
	Note       string   `json:"note,omitempty"`
}

// Part is a run of row units of one source. Unit u (0 ≤ u < Units) covers
// source rows [Offset + u·Stride, Offset + u·Stride + UnitRows). When the
// placement splits rows, each part's units are split into N equal
// contiguous ranges (Units must divide by N: that is the heads / tiles
// check) and device d's block is the concatenation, in part order, of each
// part's range d — or, with Interleave, unit by unit across the parts
// (part0 u0, part1 u0, part0 u1, ...). Empty Units means all rows of the
// source as units of UnitRows.
type Part struct {
	Source   int    `json:"source"`
	Label    string `json:"label"`
	Offset   string `json:"offset,omitempty"`
	Units    string `json:"units,omitempty"`
	UnitRows string `json:"unit_rows,omitempty"`
	Stride   string `json:"stride,omitempty"`
}

// Placement says how a target is laid over a 1×N mesh.
type Placement struct {
	// Kind is "shard" (ShardTensorToMesh along Dim) or "replicate"
	// (cached unsharded: one stored shard, loaded onto every device).
	Kind string `json:"kind"`
	// Dim is the target dimension that is split (negative counts from the end).
	Dim int `json:"dim,omitempty"`
	// Split names the source axis that Dim corresponds to: "rows" (the
	// fused parts' units, i.e. HF out features) or "cols" (HF in features).
	Split string `json:"split,omitempty"`
}

// Condition tests a config setting: Key is looked up in the text settings,
// then at the top level. Op: "gt", "eq", "ne" (numbers or booleans) or
// "true" / "false" (a missing key is false).
type Condition struct {
	Key   string `json:"key"`
	Op    string `json:"op"`
	Value any    `json:"value,omitempty"`
}

// Ignore leaves tensors out of the plan on purpose, with a reason. Either
// Template (a source template with captures) or Prefix (a literal name
// prefix, e.g. "model.visual.") selects them.
type Ignore struct {
	Template string `json:"template,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Reason   string `json:"reason"`
}

// AnyLayer is the LayerType of rules that apply to every decoder layer.
const AnyLayer = "any"

// Device dtypes and layouts of targets.
const (
	BFloat16 = "BFLOAT16"
	BFloat8B = "BFLOAT8_B"
	BFloat4B = "BFLOAT4_B"
	Float32  = "FLOAT32"
	Tile     = "TILE"
	RowMajor = "ROW_MAJOR"
	// DRAMInterleaved and DRAMWidthSharded are the memory-config tags a
	// target file records.
	DRAMInterleaved  = "dram_interleaved"
	DRAMWidthSharded = "dram_width_sharded"
)

// LoadProfile reads a JSON profile and validates it. Unknown fields are
// errors, so that a misspelt key does not silently change a mapping.
func LoadProfile(r io.Reader, name string) (*Profile, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading profile %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Profile{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("parsing profile %s: %w", name, err)
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return p, nil
}

// JSON returns the profile as indented JSON.
func (p *Profile) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Validate checks a profile's structure: names, templates, expressions,
// step order, dtypes, layouts, placements and memory tags. It does not
// need a checkpoint.
func (p *Profile) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("profile has no name")
	}
	if len(p.Rules) == 0 {
		return fmt.Errorf("profile has no rules")
	}
	ids := map[string]bool{}
	targets := map[string]string{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.ID == "" {
			return fmt.Errorf("rule %d has no id", i)
		}
		if ids[r.ID] {
			return fmt.Errorf("rule id %q is used twice", r.ID)
		}
		ids[r.ID] = true
		if err := r.validate(); err != nil {
			return fmt.Errorf("rule %q: %w", r.ID, err)
		}
		key := r.Target + "|" + r.DType + "|" + r.Layout
		if r.When != nil {
			continue // conditional rules may share a target; Build checks the files it produces
		}
		if other, ok := targets[key]; ok {
			return fmt.Errorf("rules %q and %q write the same target %s", other, r.ID, r.Target)
		}
		targets[key] = r.ID
	}
	for i, ig := range p.Ignore {
		if ig.Reason == "" {
			return fmt.Errorf("ignore rule %d has no reason", i)
		}
		if (ig.Template == "") == (ig.Prefix == "") {
			return fmt.Errorf("ignore rule %d needs exactly one of template and prefix", i)
		}
		if ig.Template != "" {
			if _, err := parseTemplate(ig.Template); err != nil {
				return fmt.Errorf("ignore rule %d: %w", i, err)
			}
		}
	}
	return nil
}

func (r *Rule) validate() error {
	if r.Target == "" {
		return fmt.Errorf("no target")
	}
	if len(r.Sources) == 0 {
		return fmt.Errorf("no sources")
	}
	caps := map[string]bool{}
	for i, s := range r.Sources {
		t, err := parseTemplate(s)
		if err != nil {
			return err
		}
		names := t.captureNames()
		if i == 0 {
			for _, n := range names {
				caps[n] = true
			}
		} else if !sameSet(caps, names) {
			return fmt.Errorf("source %q captures %v, the first source captures %v", s, names, keys(caps))
		}
	}
	if err := checkTargetName(r.Target, caps); err != nil {
		return err
	}
	if r.LayerType != "" && !caps["L"] {
		return fmt.Errorf("layer_type %q needs an {L} capture", r.LayerType)
	}
	for _, a := range r.Assert {
		if err := checkAssertSyntax(a); err != nil {
			return err
		}
	}
	if r.When != nil {
		switch r.When.Op {
		case "gt", "eq", "ne", "true", "false":
		default:
			return fmt.Errorf("condition op %q: want gt, eq, ne, true or false", r.When.Op)
		}
		if r.When.Key == "" {
			return fmt.Errorf("condition has no key")
		}
	}
	if err := r.validateSteps(); err != nil {
		return err
	}
	switch r.Placement.Kind {
	case "replicate":
	case "shard":
		if r.Placement.Split != "rows" && r.Placement.Split != "cols" {
			return fmt.Errorf("shard placement needs split \"rows\" or \"cols\", got %q", r.Placement.Split)
		}
	default:
		return fmt.Errorf("placement kind %q: want shard or replicate", r.Placement.Kind)
	}
	switch r.DType {
	case BFloat16, BFloat8B, BFloat4B, Float32:
	default:
		return fmt.Errorf("dtype %q: want BFLOAT16, BFLOAT8_B, BFLOAT4_B or FLOAT32", r.DType)
	}
	switch r.Layout {
	case Tile, RowMajor:
	default:
		return fmt.Errorf("layout %q: want TILE or ROW_MAJOR", r.Layout)
	}
	if (r.DType == BFloat8B || r.DType == BFloat4B) && r.Layout != Tile {
		return fmt.Errorf("%s needs TILE layout", r.DType)
	}
	switch r.Memory {
	case DRAMInterleaved, DRAMWidthSharded:
	default:
		return fmt.Errorf("memory %q: want %s or %s", r.Memory, DRAMInterleaved, DRAMWidthSharded)
	}
	return nil
}

var layoutOrder = map[string]int{"select_cols": 1, "fuse": 2, "transpose": 3, "reshape": 4}

func (r *Rule) validateSteps() error {
	last := 0
	for i, s := range r.Transform {
		switch s.Op {
		case "round":
			if s.DType != "BF16" {
				return fmt.Errorf("step %d: round supports dtype BF16, got %q", i, s.DType)
			}
			continue
		case "add":
			if s.Value == nil {
				return fmt.Errorf("step %d: add needs a value", i)
			}
			continue
		case "select_cols":
			for _, e := range []string{s.Start, s.Count} {
				if err := checkSyntax(e); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
		case "fuse":
			if len(s.Parts) == 0 {
				return fmt.Errorf("step %d: fuse needs parts", i)
			}
			for j, pt := range s.Parts {
				if pt.Source < 0 || pt.Source >= len(r.Sources) {
					return fmt.Errorf("step %d: part %d names source %d of %d", i, j, pt.Source, len(r.Sources))
				}
				if pt.Label == "" {
					return fmt.Errorf("step %d: part %d has no label", i, j)
				}
				for _, e := range []string{pt.Offset, pt.Units, pt.UnitRows, pt.Stride} {
					if e == "" {
						continue
					}
					if err := checkSyntax(e); err != nil {
						return fmt.Errorf("step %d part %q: %w", i, pt.Label, err)
					}
				}
			}
		case "transpose":
		case "reshape":
			if len(s.Shape) == 0 {
				return fmt.Errorf("step %d: reshape needs a shape", i)
			}
			for _, e := range s.Shape {
				if err := checkSyntax(e); err != nil {
					return fmt.Errorf("step %d: %w", i, err)
				}
			}
		default:
			return fmt.Errorf("step %d: unknown op %q (want round, add, select_cols, fuse, transpose, reshape)", i, s.Op)
		}
		o := layoutOrder[s.Op]
		if o <= last {
			return fmt.Errorf("step %d: %s is repeated or out of order (layout steps go select_cols, fuse, transpose, reshape)", i, s.Op)
		}
		last = o
	}
	return nil
}

// checkTargetName checks that a target's captures are those of its sources
// and that it stays inside the cache root.
func checkTargetName(target string, caps map[string]bool) error {
	if strings.HasPrefix(target, "/") || strings.Contains(target, "\\") {
		return fmt.Errorf("target %q must be a relative path", target)
	}
	for _, seg := range strings.Split(target, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("target %q has an empty, . or .. path element", target)
		}
	}
	rest := target
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("target %q: unclosed {", target)
		}
		name := rest[i+1 : i+j]
		if !caps[name] {
			return fmt.Errorf("target %q uses {%s}, which no source captures", target, name)
		}
		rest = rest[i+j+1:]
	}
	return nil
}

func sameSet(m map[string]bool, names []string) bool {
	if len(m) != len(names) {
		return false
	}
	for _, n := range names {
		if !m[n] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

package mapping

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
)

// Plan is the resolved mapping of one checkpoint onto a mesh: one Entry per
// cache file, the tensors left out on purpose, and what could not be mapped.
type Plan struct {
	Profile *Profile
	Mesh    Mesh
	Source  string
	// Settings holds the value of every profile variable the plan was
	// built with (defaults for the mesh, then overrides).
	Settings Settings
	// Device is the device folder of the cache (Profile.deviceFor, or the
	// --device / MESH_DEVICE override); CacheDir the cache directory
	// relative to the cache root (<device>/tensor_cache_<tag>_mesh<R>x<C>);
	// every Entry.File is under it.
	Device   string
	CacheDir string
	Entries  []*Entry // in natural order of target
	// Vision is the plan of the profile's vision part (Profile.Vision),
	// into its own cache folder, when the checkpoint has a vision tower;
	// its problems are also the plan's.
	Vision *Plan
	// Part is "" for a model's main plan and PartVision for its vision
	// part; Companion is the other folder of the same model (the vision
	// folder of a main plan that has one, the main folder of a vision
	// part). Cache manifests record both.
	Part, Companion string
	// MainProfile is, in a vision part, the name of the main profile it
	// belongs to (what its manifest records: plans are made from it).
	MainProfile string
	Ignored     []Ignored
	// Unmapped lists source tensors that no applicable rule or ignore rule
	// matches (scales count with their weight). Tensors of targets that
	// failed (indivisible, incomplete...) are named by those problems instead.
	Unmapped []string
	Problems []ckpt.Finding // why the plan cannot be executed (ids Problem*)
	Warnings []string
	// Ignore are the --ignore globs the plan was made with
	// (PlanOptions.ignoreGlobs; Resolve sets it): the Glob of the Ignored
	// tensors they left out.
	Ignore []string
	// Variant is the variant of a directory source the plan was made from
	// (PlanOptions.Variant; Resolve sets it), "" for the default.
	Variant string
	// words are the caller's names of its options (PlanOptions.Words;
	// Resolve sets them): Memory names the DRAM figure's option by them.
	words ckpt.Words
}

// Ignored is a tensor left out with the reason of its ignore rule; Glob is
// the glob of a Glob ignore rule (an --ignore GLOB) that matched it.
type Ignored struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
	Glob   string `json:"glob,omitempty"`
}

// The ids of plan problems: the ckpt.Finding of a problem has one of these
// ids and status fail. "unmapped": source tensors that no rule or ignore
// rule matches; "missing": a required rule or layer matched nothing;
// "incomplete": a fused target lacks some of its sources; "indivisible": a
// sharded dimension does not divide by the mesh; "shape": the checkpoint's
// shapes disagree with the config; "config": a rule's expressions or
// assertions fail on this config; "duplicate": two entries write the same
// file; "scale": a source is a quantised weight whose scale is missing or
// of a scheme ckpt does not read (ckpt.QuantScheme), so its values cannot
// be made. The message names the rule and the target.
const (
	ProblemUnmapped    ckpt.FindingID = "unmapped"
	ProblemMissing     ckpt.FindingID = "missing"
	ProblemIncomplete  ckpt.FindingID = "incomplete"
	ProblemIndivisible ckpt.FindingID = "indivisible"
	ProblemShape       ckpt.FindingID = "shape"
	ProblemConfig      ckpt.FindingID = "config"
	ProblemDuplicate   ckpt.FindingID = "duplicate"
	ProblemDevice      ckpt.FindingID = "device" // the mesh has no device folder upstream and none was given
	ProblemScale       ckpt.FindingID = "scale"
	// ProblemArchitecture: the config's model_type is not one the
	// profile serves (Profile.ModelTypes); no rule is applied.
	ProblemArchitecture ckpt.FindingID = "architecture"
	// ProblemUnaccounted: tensors the plan would otherwise lose (Plan.Unaccounted).
	ProblemUnaccounted ckpt.FindingID = "unaccounted"
)

// servesModelType says why p does not serve the config's architecture
// ("" when it does: p lists no model types, or the config's); w names
// the option of a profile file (PlanOptions.Rules).
func servesModelType(p *Profile, cfg *ckpt.Config, w ckpt.Words) string {
	mt := cfg.ModelType()
	if len(p.ModelTypes) == 0 || slices.Contains(p.ModelTypes, mt) || mt == "" && arch.Is(cfg) {
		return ""
	}
	var serve []string
	for _, n := range BuiltinNames() {
		if bp, err := Builtin(n); err == nil {
			serve = append(serve, fmt.Sprintf("%s (model_type %s)", n, strings.Join(bp.ModelTypes, ", ")))
		}
	}
	what := fmt.Sprintf("model_type %s", ckpt.Quote(mt))
	if mt == "" {
		what = "a config without model_type"
	}
	if as := cfg.Architectures(); len(as) > 0 {
		what += fmt.Sprintf(" (architectures %s)", strings.Join(as, ", "))
	}
	return fmt.Sprintf("profile %s serves model_type %s, not %s: no mapping profile serves this architecture (built-in: %s; a profile of your own: %s FILE)",
		p.Name, strings.Join(p.ModelTypes, ", "), what, strings.Join(serve, "; "), w.Of("Rules"))
}

// PlanError is returned with a plan that has problems.
type PlanError struct{ Problems []ckpt.Finding }

// Error is the message of the PlanError: its one problem, or the count of problems and the first.
func (e *PlanError) Error() string {
	if len(e.Problems) == 1 {
		return "mapping plan: " + e.Problems[0].Message
	}
	return fmt.Sprintf("mapping plan: %d problems, first: %s", len(e.Problems), e.Problems[0].Message)
}

// Source is one input tensor of an entry, with its FP8 block scale when it
// has one (values are then code × scale, dequantised in float32).
type Source struct {
	Name   string
	Tensor *ckpt.Tensor
	Scale  *ckpt.Tensor
}

// Piece is a rectangle of a source's matrix view (shape[0] rows × product
// of the other dimensions): rows [Row, Row+Rows), columns [Col, Col+Cols);
// or, when Zero is set, Rows × Cols zeros (padding: Source, Row and Col
// are 0 and no value op applies to it).
//
// The pieces of a shard fill the block in bands of rows, top to bottom: a
// piece with At = 0 starts a band, and each following piece with At > 0
// lies beside the one before it in the same band (same Rows, At = the
// previous piece's At + Cols). Every band is MatrixCols wide; a band of one
// piece is a piece of the full width, which is all most entries have.
type Piece struct {
	Source int   `json:"source"`
	Row    int64 `json:"row"`
	Rows   int64 `json:"rows"`
	Col    int64 `json:"col"`
	Cols   int64 `json:"cols"`
	At     int64 `json:"at,omitempty"`
	Zero   bool  `json:"zero,omitempty"`
}

// Placed is a piece with the block row and column it lands at.
type Placed struct {
	Piece
	BlockRow int64
}

// PlaceBands places the pieces of one shard of a block cols wide (see
// Piece): each with its block row, in order. It returns the block's rows,
// or an error when the pieces do not form bands of that width.
func PlaceBands(pieces []Piece, cols int64) ([]Placed, int64, error) {
	out := make([]Placed, 0, len(pieces))
	var row, bandRows, next int64
	for i, p := range pieces {
		if p.Rows < 0 || p.Cols < 0 || p.At < 0 {
			return nil, 0, fmt.Errorf("piece %d %+v has negative extents", i, p)
		}
		if p.At == 0 {
			if next != 0 && next != cols {
				return nil, 0, fmt.Errorf("piece %d starts a band after a band %d columns wide, want %d", i, next, cols)
			}
			row += bandRows
			bandRows, next = p.Rows, 0
		} else if p.At != next || p.Rows != bandRows {
			return nil, 0, fmt.Errorf("piece %d %+v does not continue its band (at column %d, %d rows)", i, p, next, bandRows)
		}
		if p.At+p.Cols > cols {
			return nil, 0, fmt.Errorf("piece %d %+v overruns the block width %d", i, p, cols)
		}
		next = p.At + p.Cols
		out = append(out, Placed{Piece: p, BlockRow: row})
	}
	if len(pieces) > 0 && next != cols {
		return nil, 0, fmt.Errorf("the last band is %d columns wide, want %d", next, cols)
	}
	return out, row + bandRows, nil
}

// ValueOp is an elementwise operation on float32 values: OpRound to DType
// (nearest-even), OpAdd Value (in float32) or OpNegExp (−exp in float32);
// Elementwise interprets it.
type ValueOp struct {
	Op    Op      `json:"op"`
	DType string  `json:"dtype,omitempty"`
	Value float64 `json:"value,omitempty"`
}

// MemoryConfig is what the target file records as its memory config.
// For DRAM width sharding, ShardShape is [k, roundup(n, 256)/8] of the
// per-device [k, n] matrix over the 8 DRAM banks, cores (0,0)..(7,0),
// row-major orientation.
type MemoryConfig struct {
	Kind        string  `json:"kind"`
	ShardShape  []int64 `json:"shard_shape,omitempty"`
	Grid        [][]int `json:"grid,omitempty"`
	Orientation string  `json:"orientation,omitempty"`
}

// Entry says exactly how to produce one cache file.
//
// For each stored shard s (Shards[s]; N shards for a sharded target in mesh
// order, 1 for a replicated target, which the serving stack caches
// unsharded and loads onto every device):
//
//  1. Read each Piece of the source matrices as float32 values — an FP8
//     source is dequantised, code × block scale in float32 — and stack the
//     pieces vertically, in order: a MatrixRows × MatrixCols block (all
//     pieces have MatrixCols columns).
//  2. Apply Values elementwise, in order.
//  3. If Transpose, transpose the block (it becomes MatrixCols × MatrixRows).
//  4. The row-major result is the shard's logical tensor of DeviceShape,
//     to be stored as DType in Layout (TILE pads the last two dimensions to
//     multiples of 32) with Memory as its recorded memory config.
//
// Shape is the full logical tensor the serving code hands to
// ttnn.as_tensor: the shards concatenated along Placement.Dim.
type Entry struct {
	Rule        string
	Target      string
	File        string
	Sources     []Source
	Steps       []Step
	Values      []ValueOp
	Transpose   bool
	Placement   Placement
	Devices     int
	DType       string
	Layout      string
	Memory      MemoryConfig
	Shape       []int64
	DeviceShape []int64
	MatrixRows  int64
	MatrixCols  int64
	// Flat: the sources' matrix view is shape[0] × the product of the rest
	// (ckpt.Matrix, Rule.Flat), not the stacked view.
	Flat bool
	// BatchRows, when set, splits the block into runs of that many rows,
	// each transposed on its own (step 3 applies per run) and stacked in
	// order: a batched matmul weight (Rule.Batch).
	BatchRows int64
	Shards    [][]Piece
	Warnings  []string
}

// Settings are values of profile variables, by name.
type Settings map[string]bool

// String is "a=true, b=false" in name order, or "none".
func (s Settings) String() string {
	if len(s) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, s[k]))
	}
	return strings.Join(parts, ", ")
}

// ParseSettings parses NAME=VALUE assignments (ckpt map --set); VALUE is
// true/false, 1/0, on/off or yes/no. A name given twice is an error.
func ParseSettings(assign []string) (Settings, error) {
	out := Settings{}
	for _, a := range assign {
		name, val, ok := strings.Cut(a, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("setting %q: want NAME=VALUE", a)
		}
		var v bool
		switch strings.ToLower(strings.TrimSpace(val)) {
		case "true", "1", "on", "yes":
			v = true
		case "false", "0", "off", "no":
		default:
			return nil, fmt.Errorf("setting %q: value %q is not a boolean (true/false)", a, val)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("setting %q is given twice", name)
		}
		out[name] = v
	}
	return out, nil
}

// Resolve returns the value of every variable of p on mesh m: its default
// for the mesh, overridden by set. Naming an unknown variable, or changing
// one the profile cannot plan otherwise, is an error.
func (p *Profile) Resolve(m Mesh, set Settings) (Settings, error) {
	out := Settings{}
	for i := range p.Variables {
		out[p.Variables[i].Name] = p.Variables[i].DefaultFor(m)
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := p.variable(k)
		if v == nil {
			var known []string
			for _, x := range p.Variables {
				known = append(known, x.Name)
			}
			return nil, fmt.Errorf("profile %s has no variable %q (it has: %s)", p.Name, k, strings.Join(known, ", "))
		}
		if v.Unsupported != "" && set[k] != v.DefaultFor(m) {
			return nil, fmt.Errorf("variable %s=%v cannot be planned: %s", k, set[k], v.Unsupported)
		}
		out[k] = set[k]
	}
	return out, nil
}

// BuildWith maps a checkpoint with a profile onto a mesh, with the profile
// variables in set overriding their defaults. It returns the plan and,
// when the plan has problems (unmapped tensors, missing required targets,
// sharded dimensions that do not divide by the mesh...), a *PlanError
// listing them together with the plan, so that callers can show what was
// mapped. Other errors (invalid profile or settings, no config, a mesh
// that is not 1×N) come with a nil plan. w are the caller's words for the
// options the problems mention ("Device" and "Rules" of PlanOptions; nil
// names them "Options.Device", "Options.Rules").
func BuildWith(c *ckpt.Checkpoint, p *Profile, mesh Mesh, set Settings, w ckpt.Words) (*Plan, error) {
	if p == nil {
		return nil, fmt.Errorf("no profile")
	}
	mainSet, visionSet := p.splitSettings(set)
	plan, err := buildOne(c, p, mesh, mainSet, w)
	if plan == nil || p.Vision == nil || c.Config == nil || c.Config.Raw[p.Vision.Config] == nil {
		return plan, err
	}
	if len(plan.Problems) > 0 && plan.Problems[0].ID == ProblemArchitecture {
		return plan, err
	}
	// The vision folder is in the text folder's device folder: the same
	// device and architecture.
	vprof := *p.Vision
	vprof.Arch, vprof.Device = p.Arch, p.Device
	vp, verr := buildOne(c, &vprof, mesh, visionSet, w)
	if vp == nil {
		return nil, fmt.Errorf("vision part: %w", verr)
	}
	plan.Vision = vp
	vp.Part, vp.Companion, vp.MainProfile, plan.Companion = PartVision, plan.CacheDir, p.Name, vp.CacheDir
	plan.Problems = append(plan.Problems, vp.Problems...)
	if len(plan.Problems) > 0 {
		return plan, &PlanError{Problems: plan.Problems}
	}
	return plan, nil
}

// splitSettings gives each of p and its vision part the settings of the
// variables it declares; a name neither declares stays with p (which
// refuses it).
func (p *Profile) splitSettings(set Settings) (main, vision Settings) {
	main, vision = Settings{}, Settings{}
	for k, v := range set {
		if p.Vision != nil && p.variable(k) == nil && p.Vision.variable(k) != nil {
			vision[k] = v
		} else {
			main[k] = v
		}
	}
	return main, vision
}

// resolveAll is Resolve for p and its vision part: each takes the settings
// of the variables it declares.
func (p *Profile) resolveAll(m Mesh, set Settings) error {
	main, vision := p.splitSettings(set)
	if _, err := p.Resolve(m, main); err != nil {
		return err
	}
	if p.Vision != nil {
		if _, err := p.Vision.Resolve(m, vision); err != nil {
			return err
		}
	}
	return nil
}

// FolderFor is the cache folder of the profile's plans (relative to the
// cache root) for a device folder, mesh and settings: CacheDir, or
// <device>/tensor_cache_<tag> for an unmeshed profile; the tag is the
// TagSwitch's when its variable is set.
func (p *Profile) FolderFor(device string, m Mesh, set Settings) string {
	tag := p.Tag
	if ts := p.TagSwitch; ts != nil && set[ts.Var] {
		tag = ts.Tag
	}
	if p.Folder == FolderUnmeshed {
		return UnmeshedCacheDir(device, tag)
	}
	return CacheDir(device, tag, m)
}

// Unaccounted lists the tensors of c that the plan does not account for:
// in no entry (as a source or its scale), not ignored, not unmapped and
// named by no problem. It is the plan's invariant, checked in this one
// place: BuildWith never returns a plan it built for which it is not empty
// (such tensors become unmapped, with a ProblemUnaccounted); a refused
// architecture (ProblemArchitecture) is planned not at all.
func (p *Plan) Unaccounted(c *ckpt.Checkpoint) []string {
	in := map[string]bool{}
	for _, e := range p.Entries {
		for _, s := range e.Sources {
			in[s.Name] = true
			if s.Scale != nil {
				in[s.Scale.Name] = true
			}
		}
	}
	for _, ig := range p.Ignored {
		in[ig.Name] = true
	}
	for _, n := range p.Unmapped {
		in[n] = true
	}
	for _, f := range p.Problems {
		for _, n := range f.Tensors {
			in[n] = true
		}
	}
	var out []string
	for _, t := range c.Tensors {
		if !in[t.Name] && p.Profile.inScope(t.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

// allEntries lists the plan's entries, then its vision part's.
func (p *Plan) allEntries() []*Entry {
	if p.Vision == nil {
		return p.Entries
	}
	return append(append([]*Entry(nil), p.Entries...), p.Vision.Entries...)
}

// inScope reports whether the profile plans the tensor (Profile.Scope).
func (p *Profile) inScope(name string) bool {
	return p == nil || p.Scope == "" || strings.HasPrefix(name, p.Scope)
}

package mapping

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
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
	// Device is the device folder of the cache (Profile.DeviceFor, or the
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
	// (PlanOptions.Ignores; Resolve sets it): the Glob of the Ignored
	// tensors they left out.
	Ignore []string
	// Variant is the variant of a directory source the plan was made from
	// (PlanOptions.Variant; Resolve sets it), "" for the default.
	Variant string
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
// ("" when it does: p lists no model types, or the config's).
func servesModelType(p *Profile, cfg *ckpt.Config) string {
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
	return fmt.Sprintf("profile %s serves model_type %s, not %s: no mapping profile serves this architecture (built-in: %s; a profile of your own: --rules FILE)",
		p.Name, strings.Join(p.ModelTypes, ", "), what, strings.Join(serve, "; "))
}

// PlanError is returned with a plan that has problems.
type PlanError struct{ Problems []ckpt.Finding }

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
		v := p.Variable(k)
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
// that is not 1×N) come with a nil plan.
func BuildWith(c *ckpt.Checkpoint, p *Profile, mesh Mesh, set Settings) (*Plan, error) {
	if p == nil {
		return nil, fmt.Errorf("no profile")
	}
	mainSet, visionSet := p.splitSettings(set)
	plan, err := buildOne(c, p, mesh, mainSet)
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
	vp, verr := buildOne(c, &vprof, mesh, visionSet)
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
		if p.Vision != nil && p.Variable(k) == nil && p.Vision.Variable(k) != nil {
			vision[k] = v
		} else {
			main[k] = v
		}
	}
	return main, vision
}

// ResolveAll is Resolve for p and its vision part: each takes the settings
// of the variables it declares.
func (p *Profile) ResolveAll(m Mesh, set Settings) error {
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

// buildOne plans one profile (not its vision part).
func buildOne(c *ckpt.Checkpoint, p *Profile, mesh Mesh, set Settings) (*Plan, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if mesh.Rows != 1 || mesh.Cols < 1 {
		return nil, fmt.Errorf("mesh %s: only 1xN meshes are supported", mesh)
	}
	settings, err := p.Resolve(mesh, set)
	if err != nil {
		return nil, err
	}
	if c.Config == nil {
		return nil, fmt.Errorf("%s has no config.json: the %s profile derives shapes and layer types from it", c.Source, p.Name)
	}
	if err := servesModelType(p, c.Config); err != "" {
		plan := &Plan{Profile: p, Mesh: mesh, Source: c.Source, Settings: settings, Device: "NONE"}
		plan.Problems = []ckpt.Finding{{ID: ProblemArchitecture, Status: ckpt.Fail, Tensors: []string{}, Message: err}}
		return plan, &PlanError{Problems: plan.Problems}
	}
	device, devErr := p.DeviceFor(mesh)
	if devErr != nil {
		device = "NONE" // the plan is not executable: see the device problem
	}
	b := &builder{c: c, p: p, mesh: mesh, n: int64(mesh.Devices())}
	b.plan = &Plan{Profile: p, Mesh: mesh, Source: c.Source, Settings: settings, Device: device, CacheDir: p.FolderFor(device, mesh, settings)}
	if devErr != nil {
		b.problem(ProblemDevice, "", "", devErr.Error())
	}
	for _, msg := range deviceProblems(p, device, mesh) {
		b.problem(ProblemDevice, "", "", msg)
	}
	b.readConfig()
	if err := b.compile(); err != nil {
		return nil, err
	}
	b.run()
	if len(b.plan.Problems) > 0 {
		return b.plan, &PlanError{Problems: b.plan.Problems}
	}
	return b.plan, nil
}

type builder struct {
	c          *ckpt.Checkpoint
	p          *Profile
	mesh       Mesh
	n          int64
	plan       *Plan
	vars       Vars
	layerTypes []string
	// q is the config as the qwen3_5 architecture reads it (nil for
	// another architecture): it says which layers are MoE (Rule.MLP).
	q       *arch.Qwen35
	rules   *trie
	ignores *trie
	// globs are the compiled Glob ignore rules, by index in p.Ignore.
	globs   map[int]*ckpt.Matcher
	applies []bool
	// ignoreApplies says, by index in p.Ignore, whether an ignore rule's
	// When holds.
	ignoreApplies []bool
	// viaAlias counts the tensors matched through a profile alias.
	viaAlias int
}

func (b *builder) problem(kind ckpt.FindingID, rule, target, msg string, tensors ...string) {
	b.plan.Problems = append(b.plan.Problems, ckpt.Finding{ID: kind, Status: ckpt.Fail, Tensors: tensors, Message: msg})
}

func (b *builder) readConfig() {
	b.vars = Vars{}
	for k, v := range b.c.Config.Raw {
		if n, ok := jsonval.Int(v); ok {
			b.vars[k] = n
		}
	}
	if b.p.Config != "" {
		// A section of its own (the vision tower's): its settings, and
		// its blocks as the layers {L} ranges over.
		sec, _ := b.c.Config.Raw[b.p.Config].(map[string]any)
		for k, v := range sec {
			if n, ok := jsonval.Int(v); ok {
				b.vars[k] = n
			}
		}
		b.vars["N"], b.vars[NumDevices] = b.n, b.n
		depth, ok := jsonval.Int(sec["depth"])
		if !ok {
			depth, _ = jsonval.Int(sec["num_hidden_layers"])
		}
		b.layerTypes = make([]string, max(0, min(depth, MaxNamedLayers)))
		for i := range b.layerTypes {
			b.layerTypes[i] = "block"
		}
		return
	}
	for k, v := range b.c.Config.Text() {
		if n, ok := jsonval.Int(v); ok {
			b.vars[k] = n
		}
	}
	b.vars["N"] = b.n
	// num_devices: the mesh's device count as upstream names it (the
	// tp of moe/weights.py's _ep_swiglu{tp}), usable in target names.
	b.vars[NumDevices] = b.n
	b.layerTypes = jsonval.Strings(b.c.Config.Text()["layer_types"])
	if arch.Is(b.c.Config) {
		if q, err := arch.ParseQwen35(b.c.Config); err == nil {
			b.q = q
			b.layerTypes = q.LayerTypes
			if _, ok := b.vars["head_dim"]; !ok && q.HeadDim > 0 {
				b.vars["head_dim"] = q.HeadDim
			}
		}
	}
	// first_full_attention_layer: the decoder layer the qwen36 MTP head is
	// built as (its cache files carry that layer's names).
	for i, t := range b.layerTypes {
		if t == "full_attention" {
			b.vars[FirstFullAttentionLayer] = int64(i)
			break
		}
	}
}

// NumDevices is the derived config variable holding the mesh's device
// count, e.g. moe.experts.down_proj_ep_swiglu{num_devices}.
const NumDevices = "num_devices"

// FirstFullAttentionLayer is the derived config variable holding the index
// of the first "full_attention" entry of layer_types (absent when there is
// none). Rule targets may use it, e.g. mtp/layers.{first_full_attention_layer}/tp/wo.
const FirstFullAttentionLayer = "first_full_attention_layer"

// target expands a rule's target for a binding: captures first, then
// placeholders that are expressions over config variables.
func (b *builder) target(r *Rule, bind binding) (string, error) {
	t := bind.expand(r.Target)
	var sb strings.Builder
	rest := t
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			sb.WriteString(rest)
			return sb.String(), nil
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return t, fmt.Errorf("target %q: unclosed {", t)
		}
		v, err := Eval(rest[i+1:i+j], b.vars)
		if err != nil {
			return t, fmt.Errorf("target %s: %w", r.Target, err)
		}
		sb.WriteString(rest[:i])
		sb.WriteString(strconv.FormatInt(v, 10))
		rest = rest[i+j+1:]
	}
}

func (b *builder) compile() error {
	b.rules, b.ignores = newTrie(), newTrie()
	b.applies = make([]bool, len(b.p.Rules))
	for i := range b.p.Rules {
		r := &b.p.Rules[i]
		ok := true
		for _, c := range r.When {
			holds, err := b.condition(c)
			if err != nil {
				return fmt.Errorf("rule %q: %w", r.ID, err)
			}
			ok = ok && holds
		}
		if r.MLP != "" && r.MLPLayer != "" && ok {
			l, err := Eval(r.MLPLayer, b.vars)
			ok = err == nil && b.mlpKind(l) == r.MLP
		}
		b.applies[i] = ok
		for j, s := range r.Sources {
			t, err := parseTemplate(s)
			if err != nil {
				return err
			}
			b.rules.add(t, leaf{rule: i, src: j, ignore: -1})
		}
	}
	b.ignoreApplies = make([]bool, len(b.p.Ignore))
	for i, ig := range b.p.Ignore {
		ok := true
		for _, c := range ig.When {
			holds, err := b.condition(c)
			if err != nil {
				return fmt.Errorf("ignore rule %d: %w", i, err)
			}
			ok = ok && holds
		}
		b.ignoreApplies[i] = ok
	}
	b.globs = map[int]*ckpt.Matcher{}
	for i, ig := range b.p.Ignore {
		if ig.Glob != "" {
			m, err := ckpt.CompileGlob("ignore", ig.Glob)
			if err != nil {
				return err
			}
			b.globs[i] = m
		}
		if ig.Template == "" {
			continue
		}
		t, err := parseTemplate(ig.Template)
		if err != nil {
			return err
		}
		b.ignores.add(t, leaf{rule: -1, ignore: i})
	}
	return nil
}

// configValue is a config setting a condition tests: from the profile's
// config section (a vision part's vision_config) when it names one, else the
// text model's (text_config first, then the top level), but
// tie_word_embeddings as transformers reads it (ckpt.Config.TieWordEmbeddings:
// the top level of a composite config decides).
func (b *builder) configValue(key string) (any, bool) {
	if b.p.Config != "" {
		if sec, ok := b.c.Config.Raw[b.p.Config].(map[string]any); ok {
			if v, ok := sec[key]; ok {
				return v, true
			}
		}
	} else {
		if key == "tie_word_embeddings" {
			if tie, ok := b.c.Config.TieWordEmbeddings(); ok {
				return tie, true
			}
		}
		if v, ok := b.c.Config.Text()[key]; ok {
			return v, true
		}
	}
	v, ok := b.c.Config.Raw[key]
	return v, ok
}

func (b *builder) condition(c Condition) (bool, error) {
	var v any
	var present bool
	switch {
	case c.Var != "":
		v, present = b.plan.Settings[c.Var]
	case c.Expr != "":
		n, err := Eval(c.Expr, b.vars)
		if err != nil {
			return false, fmt.Errorf("condition %s: %w", c, err)
		}
		v, present = n, true
	default:
		v, present = b.configValue(c.Key)
	}
	truthy := func(x any) bool {
		switch t := x.(type) {
		case bool:
			return t
		case nil:
			return false
		}
		n, ok := jsonval.Int(x)
		return ok && n != 0
	}
	switch c.Op {
	case "true":
		return present && truthy(v), nil
	case "false":
		return !present || !truthy(v), nil
	case "gt", "eq", "ne":
		if bv, ok := c.Value.(bool); ok {
			eq := present && truthy(v) == bv
			if c.Op == "gt" {
				return false, fmt.Errorf("condition on %s: gt needs a number", c.Key)
			}
			return eq == (c.Op == "eq"), nil
		}
		want, ok := jsonval.Int(c.Value)
		if !ok {
			return false, fmt.Errorf("condition on %s: value %v is not an integer or boolean", c.Key, c.Value)
		}
		got, ok := jsonval.Int(v)
		if !present || !ok {
			got = 0
		}
		switch c.Op {
		case "gt":
			return got > want, nil
		case "eq":
			return got == want, nil
		default:
			return got != want, nil
		}
	}
	return false, fmt.Errorf("condition op %q", c.Op)
}

type group struct {
	rule int
	bind binding
	srcs []*ckpt.Tensor
	// stacked holds, for a rule with a Stack, the sources of each index
	// of the stacked capture (srcs is then made from it).
	stacked map[string][]*ckpt.Tensor
}

// mlpKind is the kind of decoder layer l's MLP (Rule.MLP).
func (b *builder) mlpKind(l int64) string {
	if b.q != nil && b.q.MoELayer(l) {
		return MLPMoE
	}
	return MLPDense
}

func (b *builder) run() {
	groups := map[string]*group{}
	var order []string
	ignoredBy := map[string]int{}
	attempted := map[string]bool{} // in a group whose target failed, or a duplicate: its problem names them
	for _, t := range b.c.Tensors {
		if !b.p.inScope(t.Name) {
			continue // the main profile's
		}
		if w, ok := strings.CutSuffix(t.Name, ckpt.ScaleSuffix); ok {
			if _, has := b.c.Lookup(w); has {
				continue // consumed with its weight
			}
		}
		name := t.Name
		ms, ig := b.rules.lookup(name), b.ignoreOf(name)
		if len(ms) == 0 && ig < 0 {
			if alt, ok := b.p.alias(name); ok {
				name, ms, ig = alt, b.rules.lookup(alt), b.ignoreOf(alt)
				if len(ms) > 0 || ig >= 0 {
					b.viaAlias++
				}
			}
		}
		for _, m := range ms {
			r := &b.p.Rules[m.rule]
			if !b.applies[m.rule] || !b.layerOK(r, m.bind) {
				continue
			}
			bind, srcs := m.bind, (*[]*ckpt.Tensor)(nil)
			var x string
			if r.Stack != nil {
				bind = binding{}
				for k, v := range m.bind {
					if k != r.Stack.Capture {
						bind[k] = v
					}
				}
				x = m.bind[r.Stack.Capture]
			}
			k := strconv.Itoa(m.rule) + "|" + bind.key()
			g := groups[k]
			if g == nil {
				g = &group{rule: m.rule, bind: bind, srcs: make([]*ckpt.Tensor, len(r.Sources))}
				if r.Stack != nil {
					g.srcs, g.stacked = nil, map[string][]*ckpt.Tensor{}
				}
				groups[k] = g
				order = append(order, k)
			}
			srcs = &g.srcs
			if r.Stack != nil {
				if g.stacked[x] == nil {
					g.stacked[x] = make([]*ckpt.Tensor, len(r.Sources))
				}
				sl := g.stacked[x]
				srcs = &sl
			}
			if prev := (*srcs)[m.src]; prev != nil && prev != t {
				b.problem(ProblemDuplicate, r.ID, "", fmt.Sprintf("source tensors %s and %s are both read as %s (rule %s): the serving stack strips their prefixes alike, and which one it keeps depends on their order",
					prev.Name, t.Name, name, r.ID), prev.Name, t.Name)
				attempted[t.Name] = true
				for _, sc := range b.c.ScaleCompanions(t) {
					attempted[sc.Name] = true
				}
				continue
			}
			(*srcs)[m.src] = t
		}
		if ig >= 0 {
			ignoredBy[t.Name] = ig
		}
	}
	mapped := map[string]bool{}
	var orphans []string // weight_scale_inv of mapped weights that are not FP8
	produced := make([]map[string]bool, len(b.p.Rules))
	for _, k := range order {
		g := groups[k]
		r := &b.p.Rules[g.rule]
		if produced[g.rule] == nil {
			produced[g.rule] = map[string]bool{}
		}
		var missing []string
		var stackN int64
		if r.Stack != nil {
			var serr error
			if g.srcs, missing, stackN, serr = b.stack(r, g); serr != nil {
				target, _ := b.target(r, g.bind)
				var names []string
				for _, sl := range g.stacked {
					for _, t := range sl {
						if t != nil {
							names = append(names, t.Name)
							attempted[t.Name] = true
						}
					}
				}
				sort.Strings(names)
				produced[g.rule][g.bind["L"]] = true
				b.problem(ProblemConfig, r.ID, target, fmt.Sprintf("target %s (rule %s): %v", target, r.ID, serr), names...)
				continue
			}
		}
		for i, s := range g.srcs {
			if s == nil && r.Stack == nil {
				missing = append(missing, b.spell(g.bind.expand(r.Sources[i])))
			}
		}
		target, terr := b.target(r, g.bind)
		for _, s := range g.srcs {
			if s != nil {
				attempted[s.Name] = true
				for _, sc := range b.c.ScaleCompanions(s) {
					attempted[sc.Name] = true
				}
			}
		}
		if terr != nil {
			produced[g.rule][g.bind["L"]] = true
			b.problem(ProblemConfig, r.ID, target, fmt.Sprintf("rule %s: %v", r.ID, terr), b.sourceNames(g.srcs)...)
			continue
		}
		if len(missing) > 0 {
			produced[g.rule][g.bind["L"]] = true // reported here, not again as missing
			b.problem(ProblemIncomplete, r.ID, target, fmt.Sprintf("target %s (rule %s) lacks %s", target, r.ID, strings.Join(missing, ", ")), append(missing, b.sourceNames(g.srcs)...)...)
			continue
		}
		e := b.entry(r, g.bind, g.srcs, stackN)
		produced[g.rule][g.bind["L"]] = true
		if e == nil {
			continue
		}
		for _, s := range e.Sources {
			mapped[s.Name] = true
			if s.Scale != nil {
				mapped[s.Scale.Name] = true
			}
		}
		b.plan.Entries = append(b.plan.Entries, e)
	}
	b.checkRequired(produced)
	b.checkDuplicates()
	sort.SliceStable(b.plan.Entries, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Entries[i].Target, b.plan.Entries[j].Target) })
	for _, t := range b.c.Tensors {
		if mapped[t.Name] || !b.p.inScope(t.Name) {
			continue
		}
		name := t.Name
		w, isScale := strings.CutSuffix(name, ckpt.ScaleSuffix)
		if isScale {
			if _, has := b.c.Lookup(w); has {
				name = w // a scale follows its weight
			} else {
				isScale = false
			}
		}
		if i, ok := ignoredBy[name]; ok {
			reason := b.p.Ignore[i].Reason
			if name != t.Name {
				reason = "block scale of an ignored weight: " + reason
			}
			b.plan.Ignored = append(b.plan.Ignored, Ignored{Name: t.Name, Reason: reason, Glob: b.p.Ignore[i].Glob})
			continue
		}
		if isScale && mapped[w] {
			// The weight is mapped without this scale: it is not an FP8
			// weight (transformers writes the weight_scale_inv of a Linear
			// it could not quantise beside the weight left as it was).
			wt, _ := b.c.Lookup(w)
			b.plan.Ignored = append(b.plan.Ignored, Ignored{Name: t.Name, Reason: fmt.Sprintf("weight_scale_inv of a weight that is %s, not F8_E4M3: not applied, the weight is mapped as it is (%s)", wt.DType, orphanScaleReason)})
			orphans = append(orphans, t.Name)
			continue
		}
		if !attempted[t.Name] {
			b.plan.Unmapped = append(b.plan.Unmapped, t.Name)
		}
	}
	sort.SliceStable(b.plan.Ignored, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Ignored[i].Name, b.plan.Ignored[j].Name) })
	sort.SliceStable(b.plan.Unmapped, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Unmapped[i], b.plan.Unmapped[j]) })
	if len(b.plan.Unmapped) > 0 {
		b.problem(ProblemUnmapped, "", "", fmt.Sprintf("%d source tensor(s) are neither mapped nor ignored: %s", len(b.plan.Unmapped),
			abbreviate(b.plan.Unmapped, 5)), b.plan.Unmapped...)
	}
	if len(orphans) > 0 {
		b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf("%d weight_scale_inv beside weights that are not F8_E4M3 are left out, their weights mapped unscaled (verify fails them as fp8.scale_orphan): %s",
			len(orphans), abbreviate(orphans, 3)))
	}
	b.checkAccounted()
	globMapped := map[int][]string{}
	for name, i := range ignoredBy {
		if mapped[name] {
			if b.p.Ignore[i].Glob != "" {
				globMapped[i] = append(globMapped[i], name)
				continue
			}
			b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf("%s is both mapped and matched by ignore rule %d (%s); it stays mapped", name, i,
				b.p.Ignore[i].Reason))
		}
	}
	// A glob (--ignore) says once how many mapped tensors it matched.
	for i, names := range globMapped {
		sort.Slice(names, func(a, c int) bool { return ckpt.NaturalLess(names[a], names[c]) })
		b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf("%s matches %d mapped tensor(s), which stay mapped: %s (an ignore leaves out only tensors no rule maps)",
			b.p.Ignore[i].Reason, len(names), abbreviate(names, 5)))
	}
	// The declared-dtype rule, as verify applies it (arch.DTypeRule): once,
	// in the main plan (a scoped part's plan would repeat it).
	for _, f := range b.dtypeFindings() {
		b.plan.Warnings = append(b.plan.Warnings, f.Message)
	}
	sort.Strings(b.plan.Warnings)
}

// dtypeFindings are the declared-dtype rule's findings of the checkpoint,
// for the main plan only.
func (b *builder) dtypeFindings() []ckpt.Finding {
	if b.p.Scope != "" {
		return nil
	}
	return arch.DTypeRuleOf(b.c).Findings(b.c)
}

// orphanScaleReason is why a weight_scale_inv beside a weight that is not
// F8_E4M3 is left out of the plan.
const orphanScaleReason = "the serving stack's weight_mapping.load_qwen36_state_dict_fp8 skips every weight_scale_inv and dequantises only float8_e4m3fn weights"

// sourceNames lists the sources found of a group and their scale
// companions: the tensors a failed target's problem names.
func (b *builder) sourceNames(srcs []*ckpt.Tensor) []string {
	var out []string
	for _, s := range srcs {
		if s == nil {
			continue
		}
		out = append(out, s.Name)
		for _, sc := range b.c.ScaleCompanions(s) {
			out = append(out, sc.Name)
		}
	}
	return out
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

// AllEntries lists the plan's entries, then its vision part's.
func (p *Plan) AllEntries() []*Entry {
	if p.Vision == nil {
		return p.Entries
	}
	return append(append([]*Entry(nil), p.Entries...), p.Vision.Entries...)
}

// Parts lists the plan and its vision part (each a plan of one cache
// folder), in that order.
func (p *Plan) Parts() []*Plan {
	if p.Vision == nil {
		return []*Plan{p}
	}
	return []*Plan{p, p.Vision}
}

// inScope reports whether the profile plans the tensor (Profile.Scope).
func (p *Profile) inScope(name string) bool {
	return p == nil || p.Scope == "" || strings.HasPrefix(name, p.Scope)
}

// checkAccounted holds the plan to its invariant (Unaccounted).
func (b *builder) checkAccounted() {
	lost := b.plan.Unaccounted(b.c)
	if len(lost) == 0 {
		return
	}
	b.plan.Unmapped = append(b.plan.Unmapped, lost...)
	sort.SliceStable(b.plan.Unmapped, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Unmapped[i], b.plan.Unmapped[j]) })
	b.problem(ProblemUnaccounted, "", "", fmt.Sprintf("%d source tensor(s) are in no entry, ignore list, unmapped list or problem of the plan (a defect of the profile or of ckpt): %s",
		len(lost), abbreviate(lost, 5)), lost...)
}

// stack orders a stacking group's sources by index of the stacked
// capture: source j of index x is srcs[x*len(Sources)+j], for x in [0,
// Count). It returns the names of the tensors missing within that range;
// an index that is not a number in it is an error.
func (b *builder) stack(r *Rule, g *group) (srcs []*ckpt.Tensor, missing []string, n int64, err error) {
	n, err = Eval(r.Stack.Count, b.vars)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("stack count %s: %v", r.Stack.Count, err)
	}
	if n <= 0 {
		return nil, nil, 0, fmt.Errorf("stack count %s is %d", r.Stack.Count, n)
	}
	var bad []string
	for x := range g.stacked {
		i, perr := strconv.ParseInt(x, 10, 64)
		if perr != nil || i < 0 || i >= n || strconv.FormatInt(i, 10) != x {
			bad = append(bad, x)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return nil, nil, 0, fmt.Errorf("{%s} = %s is not an index below %s = %d", r.Stack.Capture, strings.Join(bad, ", "), r.Stack.Count, n)
	}
	J := len(r.Sources)
	srcs = make([]*ckpt.Tensor, n*int64(J))
	for x := int64(0); x < n; x++ {
		sl := g.stacked[strconv.FormatInt(x, 10)]
		for j := 0; j < J; j++ {
			if sl != nil && sl[j] != nil {
				srcs[x*int64(J)+int64(j)] = sl[j]
				continue
			}
			bind := binding{r.Stack.Capture: strconv.FormatInt(x, 10)}
			for k, v := range g.bind {
				bind[k] = v
			}
			missing = append(missing, b.spell(bind.expand(r.Sources[j])))
		}
	}
	return srcs, missing, n, nil
}

// ignoreOf is the ignore rule that matches a name (its template, else its
// prefix), -1 for none.
func (b *builder) ignoreOf(name string) int {
	for _, m := range b.ignores.lookup(name) {
		if b.ignoreApplies[m.ignore] {
			return m.ignore
		}
	}
	for i, ig := range b.p.Ignore {
		if ig.Prefix != "" && strings.HasPrefix(name, ig.Prefix) && b.ignoreApplies[i] {
			return i
		}
	}
	for i := range b.p.Ignore {
		if m := b.globs[i]; m != nil && m.Match(name) && b.ignoreApplies[i] {
			return i
		}
	}
	return -1
}

// spell is a source name of the rules as this checkpoint stores it: under
// the alias prefix when every tensor matched through an alias did so.
func (b *builder) spell(name string) string {
	if b.viaAlias == 0 {
		return name
	}
	for _, a := range b.p.Aliases {
		if rest, ok := strings.CutPrefix(name, a.As); ok {
			for _, t := range b.c.Tensors {
				if strings.HasPrefix(t.Name, a.As) {
					return name // the checkpoint has tensors under the rules' own prefix too
				}
			}
			return a.Prefix + rest
		}
	}
	return name
}

func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(", ... (%d more)", len(names)-n)
}

// layerOK reports whether a match's {L} is a decoder layer of the rule's
// layer type.
func (b *builder) layerOK(r *Rule, bind binding) bool {
	if r.LayerType == "" {
		return true
	}
	l, err := strconv.Atoi(bind["L"])
	if err != nil || l < 0 || l >= len(b.layerTypes) {
		return false
	}
	if r.MLP != "" && b.mlpKind(int64(l)) != r.MLP {
		return false
	}
	return r.LayerType == AnyLayer || b.layerTypes[l] == r.LayerType
}

func (b *builder) checkRequired(produced []map[string]bool) {
	// Rules that write the same target are alternatives (a stacked and a
	// fused layout of the same tensors): one of them producing it is
	// enough, and a target none produces is reported once.
	byTarget := map[string][]int{}
	for i := range b.p.Rules {
		if b.applies[i] {
			byTarget[b.p.Rules[i].Target] = append(byTarget[b.p.Rules[i].Target], i)
		}
	}
	reported := map[string]bool{}
	for i := range b.p.Rules {
		r := &b.p.Rules[i]
		if !r.Required || !b.applies[i] || reported[r.Target] {
			continue
		}
		alts := byTarget[r.Target]
		made := func(l string) bool {
			for _, a := range alts {
				if produced[a][l] {
					return true
				}
			}
			return false
		}
		if r.LayerType != "" {
			var lost []string
			for l, typ := range b.layerTypes {
				if (typ == r.LayerType || r.LayerType == AnyLayer) && (r.MLP == "" || b.mlpKind(int64(l)) == r.MLP) && !made(strconv.Itoa(l)) {
					lost = append(lost, strconv.Itoa(l))
				}
			}
			if len(lost) > 0 {
				reported[r.Target] = true
			}
			if len(lost) > 0 {
				bind := binding{"L": lost[0]}
				var names []string
				for _, s := range r.Sources {
					names = append(names, b.spell(bind.expand(s)))
				}
				b.problem(ProblemMissing, r.ID, r.Target, fmt.Sprintf("rule %s (%s) is required for every %s layer but matched nothing for layer(s) %s; expected e.g. %s",
					r.ID, r.Target, r.LayerType, strings.Join(lost, ", "), strings.Join(names, ", ")), names...)
			}
			continue
		}
		any := false
		for _, a := range alts {
			any = any || len(produced[a]) > 0
		}
		if !any {
			reported[r.Target] = true
			why := ""
			if len(r.When) > 0 {
				var cs []string
				for _, c := range r.When {
					cs = append(cs, c.String())
				}
				why = fmt.Sprintf(" (it applies because %s)", strings.Join(cs, " and "))
			}
			var names []string
			for _, s := range r.Sources {
				names = append(names, b.spell(s))
			}
			b.problem(ProblemMissing, r.ID, r.Target, fmt.Sprintf("required rule %s (%s) matched nothing%s; expected %s", r.ID, r.Target, why,
				strings.Join(names, ", ")), names...)
		}
	}
}

func (b *builder) checkDuplicates() {
	seen := map[string]string{}
	for _, e := range b.plan.Entries {
		if other, ok := seen[e.File]; ok {
			b.problem(ProblemDuplicate, e.Rule, e.Target, fmt.Sprintf("rules %s and %s both write %s", other, e.Rule, e.File))
		}
		seen[e.File] = e.Rule
	}
}

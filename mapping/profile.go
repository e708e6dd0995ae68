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
	// An empty Device is upstream's name for the mesh (deviceFor): P150,
	// P300, P150x4... on Blackhole; Arch says which table ("" is Blackhole).
	Device string `json:"device,omitempty"`
	Arch   string `json:"arch,omitempty"`
	Tag    string `json:"tag"`
	// Config names the section of config.json whose integer settings the
	// rules' expressions use (e.g. "vision_config"); empty: the text
	// settings (text_config, else the top level). Top-level settings are
	// visible either way, under the section's.
	Config string `json:"config,omitempty"`
	// Folder is how the cache folder under the device folder is named:
	// "" for tensor_cache_<tag>_mesh<R>x<C> (the qwen36 text model), or
	// FolderUnmeshed for tensor_cache_<tag> (tt_transformers'
	// ModelArgs.weight_cache_path, as the vision tower caches).
	Folder string `json:"folder,omitempty"`
	// TagSwitch, when set, makes the folder's tag another when a profile
	// variable is true (the vision tower's instruct folder).
	TagSwitch *TagSwitch `json:"tag_switch,omitempty"`
	// Scope, when set, is the name prefix of the tensors the profile plans
	// (the vision part: model.visual.); the others are the main profile's.
	Scope string `json:"scope,omitempty"`
	// Vision is the profile's vision part: a second profile, planned into
	// its own cache folder when the checkpoint has a vision tower
	// (config.json vision_config); Plan.Vision is its plan.
	Vision *Profile `json:"vision,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Variables are the serving stack's configuration switches that change
	// a file's name, dtype, layout or memory config. Rules test them with
	// a Condition on Var; BuildWith takes overrides (ckpt map --set).
	Variables []Variable `json:"variables,omitempty"`
	// ModelTypes are the config model_types (the top-level model_type of
	// config.json) the profile serves: a checkpoint of another is refused
	// before any rule is applied (ProblemArchitecture). Empty: any.
	ModelTypes []string `json:"model_types,omitempty"`
	// Aliases are the other name prefixes under which the serving stack
	// reads a source prefix the rules are written with (Alias).
	Aliases []Alias  `json:"aliases,omitempty"`
	Rules   []Rule   `json:"rules"`
	Ignore  []Ignore `json:"ignore,omitempty"`
}

// FolderUnmeshed is the Profile.Folder of a cache folder named without a
// mesh suffix: <device>/tensor_cache_<tag>.
const FolderUnmeshed = "unmeshed"

// TagSwitch replaces a profile's tag by Tag when the variable Var is true.
type TagSwitch struct {
	Var string `json:"var"`
	Tag string `json:"tag"`
}

// Alias is a prefix the serving stack strips like another: a source tensor
// named Prefix+rest that no rule or ignore rule matches under its own name
// (and whose name does not start with As) is matched as As+rest. The plan
// keeps the stored name, so the cache files are those of the same tensors
// stored under As. Two tensors that meet under one name are a problem
// (ProblemDuplicate).
type Alias struct {
	Prefix string `json:"prefix"`
	As     string `json:"as"`
	// Note says where the serving stack does this (file@commit).
	Note string `json:"note,omitempty"`
}

// alias is the name n is matched as under the first alias that applies.
func (p *Profile) alias(n string) (string, bool) {
	for _, a := range p.Aliases {
		if rest, ok := strings.CutPrefix(n, a.Prefix); ok && !strings.HasPrefix(n, a.As) {
			return a.As + rest, true
		}
	}
	return "", false
}

// Pinned records the upstream revision a profile transcribes.
type Pinned struct {
	Repo string `json:"repo"`
	// Commit is the revision the profile stands for (e.g. the head of the
	// branch the serving stack runs).
	Commit string `json:"commit"`
	Path   string `json:"path"`
	// Files maps every upstream file the profile transcribes to the
	// revision it was actually read at.
	Files map[string]string `json:"files,omitempty"`
	// Note says how coherent the pins are: which line they stand for and
	// what could not be read at a commit of it.
	Note string `json:"note,omitempty"`
	// NotAtLine lists, in name order, the files of Files that were not
	// read at Commit (the line itself) but at another revision.
	NotAtLine []string `json:"not_at_line,omitempty"`
	// Open lists what remains unverified about the line: what no stored
	// version shows, and what was inferred instead of read.
	Open []string `json:"open,omitempty"`
}

// Variable is a boolean switch of the serving stack, named after the
// upstream setting (e.g. proj_1d_decode of the qwen36 model config).
type Variable struct {
	Name string `json:"name"`
	// Default is the value the upstream config gives the switch on a mesh
	// of more than one device; SingleDevice its value on one device
	// (multi-device switches are usually unset there, i.e. false).
	Default      bool `json:"default"`
	SingleDevice bool `json:"single_device,omitempty"`
	// Doc says what the switch changes, and Upstream where it is set
	// (file@commit).
	Doc      string `json:"doc"`
	Upstream string `json:"upstream,omitempty"`
	// Unsupported, when set, says why only the default can be planned:
	// overriding the switch is then an error with this reason.
	Unsupported string `json:"unsupported,omitempty"`
}

// DefaultFor is the variable's value on a mesh when nothing overrides it.
func (v *Variable) DefaultFor(m Mesh) bool {
	if m.devices() > 1 {
		return v.Default
	}
	return v.SingleDevice
}

// Rule produces one cache target per binding of its captures.
//
// Sources are name templates: a segment written {X} captures that whole
// dotted segment (e.g. model.language_model.layers.{L}.mlp.down_proj.weight);
// every source of one binding must agree on the captured values, and Target
// substitutes them (layers.{L}/mlp.down_proj.weight.tp). A source's FP8
// block scale (<name>_scale_inv) is consumed implicitly (ckpt.QuantScheme);
// a quantised source without a scale ckpt can apply is a plan problem
// (ProblemScale).
type Rule struct {
	ID      string   `json:"id"`
	Target  string   `json:"target"`
	Sources []string `json:"sources"`
	// LayerType restricts {L} to decoder layers of that type
	// (config layer_types: "linear_attention", "full_attention", or "any"
	// for every decoder layer). With Required, every such layer must
	// produce the target.
	LayerType string `json:"layer_type,omitempty"`
	// When makes the rule conditional on the config or on profile
	// variables; a rule whose conditions are not all true maps nothing.
	When Conditions `json:"when,omitempty"`
	// Required: when the rule applies, matching nothing is an error.
	Required bool `json:"required,omitempty"`
	// Assert lists "lhs == rhs" checks over config variables that must
	// hold for the rule to be valid (e.g. the conv kernel size it spells out).
	Assert []string `json:"assert,omitempty"`
	// MLP restricts the rule to decoder layers whose feed-forward block is
	// of that kind: "dense" (a SwiGLU MLP) or "moe" (a sparse mixture of
	// experts), by the Qwen3-Next / Qwen3.5-MoE rule (arch.Qwen35.MoELayer:
	// the config has experts, the layer is not in mlp_only_layers and falls
	// on the decoder_sparse_step cadence). A rule with an {L} capture tests
	// layer {L}; one without names its layer in MLPLayer, an expression
	// over config variables (e.g. first_full_attention_layer). Empty: any.
	MLP      string `json:"mlp,omitempty"`
	MLPLayer string `json:"mlp_layer,omitempty"`
	// Stack gathers the sources of many tensors into one target: the
	// sources capture Stack.Capture (e.g. the expert index of
	// mlp.experts.{X}.gate_proj.weight), and the tensors of indices 0 ...
	// Count-1 are stacked, in index order, into one source per template
	// (their rows one after the other), which the transform then reads
	// like any source. Rules with a Stack may share their target with
	// another rule (the same tensors stored fused): the plan reports a
	// checkpoint that has both.
	Stack *Stack `json:"stack,omitempty"`
	// Batch, an expression, splits the per-device block into runs of that
	// many rows, each transposed on its own (batched matmul weights:
	// [experts, in, out]); it needs a transpose step. The reshape's rows
	// and cols are then those of the transposed runs stacked: (block rows
	// / Batch · block cols) × Batch.
	Batch string `json:"batch,omitempty"`
	// Flat reads the sources as shape[0] × the product of the other
	// dimensions (ckpt.Matrix: a Conv3d weight [out, in, t, h, w] as
	// [out, in·t·h·w]) instead of the stacked view of tensors of rank 3
	// and more (ckpt.StackedMatrix: every dimension but the last as rows).
	Flat      bool      `json:"flat,omitempty"`
	Transform []Step    `json:"transform,omitempty"`
	Placement Placement `json:"placement"`
	DType     string    `json:"dtype"`
	Layout    string    `json:"layout"`
	Memory    string    `json:"memory"`
	Note      string    `json:"note,omitempty"`
}

// Stack is how a rule stacks many tensors into one source (Rule.Stack).
type Stack struct {
	Capture string `json:"capture"`
	Count   string `json:"count"`
}

// MLP kinds of Rule.MLP.
const (
	MLPDense = "dense"
	MLPMoE   = "moe"
)

// Step is one transform of a rule's chain. Ops (the table ops says what
// each takes and is the one place that interprets it):
//
//   - "round" (DType "BF16"): round every value to that dtype, nearest-even,
//     as torch's .to(torch.bfloat16) does (a NaN it produces gets the bits
//     of the serving host: cache build --nan; a bf16 source is left as it
//     is, NaN bits included). FP8 sources are dequantised first
//     (code × block scale, in float32) — implicitly, before any step.
//   - "add" (Value): add a constant in float32 (the unit offset of
//     zero-centred norms). Put a "round" after it when the serving code
//     adds in bf16.
//   - "select_cols" (Start, Count; Unit, Pad, Repeat): keep columns
//     [Start, Start+Count) of every source's matrix view (shape[0] ×
//     product of the rest). With Unit, the window is taken in units of
//     Unit columns, each followed by Pad zero columns (heads padded to
//     whole tiles); with Repeat, the window (its units and padding) is
//     taken Repeat times side by side (a vector broadcast to a tile of
//     rows). The block's columns are then these, and a placement that
//     splits columns splits them into N contiguous ranges.
//   - "fuse" (Parts, Interleave): build the row order of the result from
//     parts of the sources, per device (see Part).
//   - "pad" (Rows, Cols): zero rows and columns at the end of the block
//     up to Rows rows and Cols columns (either may be empty: no padding
//     there), before the split over the devices: a placement that splits
//     a padded axis splits the padded block into N contiguous ranges (so
//     the zeros land on the last devices), not part by part.
//   - "transpose": the [out, in] matrix becomes [in, out].
//   - "reshape" (Shape): give the row-major result this shape; the
//     expressions may use rows and cols of the (transposed) matrix.
//
// Value steps (round, add) are elementwise and apply in their listed order;
// layout steps must appear in the order select_cols, fuse, pad,
// transpose, reshape. Zero rows and columns (Part.Pad, select_cols' Pad,
// pad) are padding: the value ops do not apply to them, they stay zero. The two kinds commute, so their interleaving is cosmetic.
type Step struct {
	Op         Op       `json:"op"`
	DType      string   `json:"dtype,omitempty"`
	Value      *float64 `json:"value,omitempty"`
	Start      string   `json:"start,omitempty"`
	Count      string   `json:"count,omitempty"`
	Parts      []Part   `json:"parts,omitempty"`
	Interleave bool     `json:"interleave,omitempty"`
	// Unit, Pad and Repeat refine select_cols (see Step).
	Unit   string `json:"unit,omitempty"`
	Pad    string `json:"pad,omitempty"`
	Repeat string `json:"repeat,omitempty"`
	// Rows and Cols are the padded block's size (pad).
	Rows  string   `json:"rows,omitempty"`
	Cols  string   `json:"cols,omitempty"`
	Shape []string `json:"shape,omitempty"`
	Note  string   `json:"note,omitempty"`
}

// Part is a run of row units of one source. Unit u (0 ≤ u < Units) covers
// source rows [Offset + u·Stride, Offset + u·Stride + UnitRows). When the
// placement splits rows, each part's units are split into N equal
// contiguous ranges (Units must divide by N: that is the heads / tiles
// check) and device d's block is the concatenation, in part order, of each
// part's range d — or, with Interleave, unit by unit across the parts
// (part0 u0, part1 u0, part0 u1, ...). Empty Units means all rows of the
// source as units of UnitRows.
//
// Pad adds that many zero rows after each unit (a head of head_dim rows
// padded to a whole number of tiles); they count as rows of the unit
// wherever the unit goes. Order reorders the rows inside each unit:
// OrderInterleaveHalves makes row 2i of a unit its row i and row 2i+1 its
// row i + UnitRows/2 (tt_transformers' reverse_permute: the q/k rows of a
// rotate-half head in the interleaved order of Meta's RoPE).
type Part struct {
	Source   int    `json:"source"`
	Label    string `json:"label"`
	Offset   string `json:"offset,omitempty"`
	Units    string `json:"units,omitempty"`
	UnitRows string `json:"unit_rows,omitempty"`
	Stride   string `json:"stride,omitempty"`
	// Replicate: when the placement splits rows over more devices than
	// the part has units, device d takes unit floor(d·units/N) whole
	// instead of a fraction of one (tp_common.replicate_kv_weight: a KV
	// head per device, shared by the devices of its query group). With
	// as many units as devices or more, the units are split as usual.
	Replicate bool   `json:"replicate,omitempty"`
	Pad       string `json:"pad,omitempty"`
	Order     string `json:"order,omitempty"`
}

// OrderInterleaveHalves is the Part.Order that interleaves the two halves
// of every unit (see Part).
const OrderInterleaveHalves = "interleave_halves"

// Placement says how a target is laid over a 1×N mesh.
type Placement struct {
	// Kind is "shard" (split along Dim over the devices) or "replicate"
	// (cached unsharded: one stored shard, loaded onto every device).
	Kind string `json:"kind"`
	// Dim is the target dimension that is split (negative counts from the end).
	Dim int `json:"dim,omitempty"`
	// Split names the source axis that Dim corresponds to: "rows" (the
	// fused parts' units, i.e. HF out features) or "cols" (HF in features).
	Split string `json:"split,omitempty"`
	// MeshAxes, when set, makes a sharded target's mapper a 2-D one
	// (ttnn ShardTensor2dMesh): one placement per mesh axis (rows,
	// columns), "replicate" or "shard" (the sharded axis splits Dim). The
	// file then records a [rows, cols] distribution shape and one
	// placement per axis. Empty: the 1-D ShardTensorToMesh (distribution
	// [N], placements [Shard(Dim)]).
	MeshAxes []string `json:"mesh_axes,omitempty"`
}

// Mesh-axis placements of a 2-D mapper.
const (
	AxisReplicate = "replicate"
	AxisShard     = "shard"
)

// Is2D reports whether the placement is a 2-D mesh mapper.
func (p Placement) Is2D() bool { return len(p.MeshAxes) > 0 }

// String is "shard(dim=-1)", "shard2d(dim=2, mesh=[replicate, shard])"
// for a 2-D mesh mapper, or "replicate".
func (p Placement) String() string {
	if p.Kind == "shard" {
		if p.Is2D() {
			return fmt.Sprintf("shard2d(dim=%d, mesh=[%s])", p.Dim, strings.Join(p.MeshAxes, ", "))
		}
		return fmt.Sprintf("shard(dim=%d)", p.Dim)
	}
	return p.Kind
}

// Condition tests a config setting, a profile variable or an integer
// expression over the config variables. Key is looked up in the text
// settings (the profile's Config section), then at the top level; Var
// names a profile variable; Expr is evaluated as rule expressions are
// (exactly one of the three). Op: "gt", "eq", "ne" (numbers or booleans)
// or "true" / "false" (a missing key is false; an expression is true when
// it is not 0).
type Condition struct {
	Key   string `json:"key,omitempty"`
	Var   string `json:"var,omitempty"`
	Expr  string `json:"expr,omitempty"`
	Op    string `json:"op"`
	Value any    `json:"value,omitempty"`
}

// String is e.g. "mtp_num_hidden_layers gt 0" or "proj_1d_decode true".
func (c Condition) String() string {
	name := c.Key
	if c.Var != "" {
		name = c.Var
	}
	if c.Expr != "" {
		name = "(" + c.Expr + ")"
	}
	if c.Op == "true" || c.Op == "false" {
		return name + " " + c.Op
	}
	return fmt.Sprintf("%s %s %v", name, c.Op, c.Value)
}

// Conditions must all hold. In JSON it is one condition object or an
// array of them.
type Conditions []Condition

// UnmarshalJSON accepts one condition object or an array.
func (cs *Conditions) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '{' {
		var c Condition
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return err
		}
		*cs = Conditions{c}
		return nil
	}
	var list []Condition
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		return err
	}
	*cs = list
	return nil
}

// MarshalJSON writes a single condition as an object, several as an array.
func (cs Conditions) MarshalJSON() ([]byte, error) {
	if len(cs) == 1 {
		return json.Marshal(cs[0])
	}
	return json.Marshal([]Condition(cs))
}

// Ignore leaves tensors out of the plan on purpose, with a reason. One of
// Template (a source template with captures), Prefix (a literal name
// prefix, e.g. "model.visual.") or Glob (a glob of the --match syntax:
// `*` inside one dotted segment, `**` across; `--ignore GLOB` adds one)
// selects them. An ignore rule leaves out only tensors no rule maps: a
// mapped tensor it matches stays mapped, with a warning.
type Ignore struct {
	Template string `json:"template,omitempty"`
	Prefix   string `json:"prefix,omitempty"`
	Glob     string `json:"glob,omitempty"`
	Reason   string `json:"reason"`
	// When, if set, makes the rule apply only where its conditions hold
	// (as a Rule's When): tensors a switch turns out of the cache are
	// ignored with the switch's reason only when it is on.
	When Conditions `json:"when,omitempty"`
}

// ignoreReason is the reason of the ignore rule `--ignore GLOB` adds.
func ignoreReason(glob string) string { return "--ignore " + glob }

// WithIgnores returns a copy of p with one Glob ignore rule per glob (the
// --ignore globs of the command line), after the profile's own ignore
// rules, each with the reason ignoreReason(glob).
func (p *Profile) WithIgnores(globs []string) *Profile {
	if len(globs) == 0 {
		return p
	}
	cp := *p
	cp.Ignore = append(append([]Ignore(nil), p.Ignore...), make([]Ignore, 0, len(globs))...)
	for _, g := range globs {
		cp.Ignore = append(cp.Ignore, Ignore{Glob: g, Reason: ignoreReason(g)})
	}
	return &cp
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

// variable returns the profile variable of that name, or nil.
func (p *Profile) variable(name string) *Variable {
	for i := range p.Variables {
		if p.Variables[i].Name == name {
			return &p.Variables[i]
		}
	}
	return nil
}

package ckpt

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// CompanionSpec describes one companion tensor of a scheme's weight.
type CompanionSpec struct {
	// Role is what the companion is: "scale" (multiplies the codes),
	// "global_scale" (a per-tensor multiplier) or "input_scale" (the
	// activations' scale).
	Role string
	// Suffix names the companion: the weight's module + "." + Suffix
	// ("weight_scale"), or for MXFP4 the weight's base name + Suffix
	// ("_scales"), or the weight's name + Suffix for block FP8
	// ("_scale_inv").
	Suffix string
	// DTypes are the dtypes the companion may have.
	DTypes []numfmt.DType
	// Shape says in words which shape the companion has.
	Shape string
	// Optional companions may be absent (input_scale: the activations'
	// scale, not part of the weight's values).
	Optional bool
}

// SchemeSpec is the one description of a quantisation scheme: how the
// config declares it, how its weights and their companions are named,
// their dtypes, shapes, block sizes and the config key of its ignore list.
// Every command that needs to know a scheme reads it from here (SpecOf).
type SchemeSpec struct {
	Scheme Scheme
	// Title names the scheme for people ("MXFP4 (gpt-oss)").
	Title string
	// Declared says how a config declares the scheme.
	Declared string
	// WeightName and WeightDTypes: how the stored codes are named and
	// typed; WeightShape their shape in words.
	WeightName   string
	WeightDTypes []numfmt.DType
	WeightShape  string
	// ValuesPerElement is the number of values one stored element holds
	// (2 for packed E2M1 in U8, else 1): parameters count the values.
	ValuesPerElement int64
	// Block says which elements one scale covers.
	Block      string
	Companions []CompanionSpec
	// IgnoreKeys are the config keys of the modules left unquantised.
	IgnoreKeys []string
}

var floatScale = []numfmt.DType{numfmt.F32, numfmt.BF16, numfmt.F16}

// blockScale are the dtypes of a block-FP8 weight_scale_inv
// (IsBlockScaleDType).
var blockScale = []numfmt.DType{numfmt.F32, numfmt.BF16, numfmt.F16, numfmt.F8E8M0}

// schemeSpecs: the upstream facts behind each entry are cited where they
// are used (numfmt for the element formats and layouts).
//   - block FP8: deepseek-ai/DeepSeek-V3 README_WEIGHTS.md, transformers
//     FineGrainedFP8Config (weight_block_size, modules_to_not_convert).
//   - MXFP4: huggingface/transformers:src/transformers/integrations/
//     mxfp4.py@93a1c40 (gate_up_proj_blocks [E, 2I, H/32, 16] U8,
//     gate_up_proj_scales [E, 2I, H/32] U8; modules_to_not_convert).
//   - NVFP4: vllm-project/vllm:vllm/model_executor/layers/quantization/
//     modelopt.py@c9a5990 (hf_quant_config.json {"quantization":
//     {"quant_algo", "group_size", "exclude_modules"}}, or config.json
//     quantization_config {"quant_method": "modelopt", "quant_algo",
//     "ignore"}; ModelOptNvFp4LinearMethod.create_weights: weight U8
//     [N, K/2], weight_scale F8_E4M3 [N, K/group_size], weight_scale_2 and
//     input_scale F32 per tensor; exclude_modules are fnmatch wildcards).
//   - compressed-tensors FP8: vllm-project/compressed-tensors:src/
//     compressed_tensors/quantization/quant_args.py@dc235db
//     (QuantizationStrategy tensor/channel/block, block_structure [rows,
//     cols], FP8 = num_bits 8, type float); ignore entries are module
//     names or "re:" regexes.
var schemeSpecs = []*SchemeSpec{
	{Scheme: BlockFP8, Title: "block FP8 (DeepSeek/Qwen style)", Declared: `quantization_config.quant_method "fp8" (weight_block_size, default [128, 128])`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "[bm, bn] = weight_block_size",
		Companions: []CompanionSpec{{Role: "scale", Suffix: ScaleSuffix, DTypes: blockScale, Shape: "[ceil(N/bm), ceil(K/bn)]"}},
		IgnoreKeys: []string{"modules_to_not_convert", "ignored_layers"}},
	{Scheme: MXFP4, Title: "MXFP4 (gpt-oss)", Declared: `quantization_config.quant_method "mxfp4"`,
		WeightName: "<x>_blocks", WeightDTypes: []numfmt.DType{numfmt.U8}, WeightShape: "[..., G, 16] (32 packed E2M1 codes per block, low nibble first)", ValuesPerElement: 2, Block: "32 elements of the last dimension",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "_scales", DTypes: []numfmt.DType{numfmt.U8}, Shape: "[..., G] (E8M0 exponents, bias 127, 0xFF NaN)"}},
		IgnoreKeys: []string{"modules_to_not_convert"}},
	{Scheme: NVFP4, Title: "NVFP4 (NVIDIA ModelOpt)", Declared: `quantization_config.quant_method "modelopt" with quant_algo "NVFP4", or hf_quant_config.json quantization.quant_algo "NVFP4"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.U8}, WeightShape: "[N, K/2] (two E2M1 codes per byte, low nibble first)", ValuesPerElement: 2, Block: "16 elements of a row",
		Companions: []CompanionSpec{
			{Role: "scale", Suffix: "weight_scale", DTypes: []numfmt.DType{numfmt.F8E4M3}, Shape: "[N, K/16]"},
			{Role: "global_scale", Suffix: "weight_scale_2", DTypes: []numfmt.DType{numfmt.F32}, Shape: "a scalar ([] or [1])"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: []numfmt.DType{numfmt.F32}, Shape: "a scalar ([] or [1])", Optional: true},
		},
		IgnoreKeys: []string{"exclude_modules", "ignore"}},
	{Scheme: FP8Tensor, Title: "FP8 per tensor (compressed-tensors)", Declared: `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "tensor"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "the whole tensor",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
	{Scheme: FP8Channel, Title: "FP8 per channel (compressed-tensors)", Declared: `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "channel"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "one output row",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "[N, 1]"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
	{Scheme: FP8Block, Title: "FP8 per block (compressed-tensors)", Declared: `quantization_config.quant_method "compressed-tensors", format "float-quantized", weights strategy "block"`,
		WeightName: "<module>.weight", WeightDTypes: []numfmt.DType{numfmt.F8E4M3}, WeightShape: "[N, K]", ValuesPerElement: 1, Block: "[bm, bn] = block_structure",
		Companions: []CompanionSpec{{Role: "scale", Suffix: "weight_scale", DTypes: floatScale, Shape: "[ceil(N/bm), ceil(K/bn)]"},
			{Role: "input_scale", Suffix: "input_scale", DTypes: floatScale, Shape: "a scalar ([] or [1])", Optional: true}},
		IgnoreKeys: []string{"ignore"}},
}

// SpecOf returns the description of scheme s, nil for Plain or an unknown
// scheme.
func SpecOf(s Scheme) *SchemeSpec {
	for _, sp := range schemeSpecs {
		if sp.Scheme == s {
			return sp
		}
	}
	return nil
}

// QuantRecipe is a checkpoint's quantisation as its config declares it.
type QuantRecipe struct {
	// Scheme is the scheme of the checkpoint's quantised weights (for
	// compressed-tensors, that of its first config group; see SchemeFor).
	Scheme Scheme
	// File is the config file that declares it, Path the JSON path of the
	// declaration in it ("quantization_config", "quantization").
	File, Path string
	Method     string   // quant_method ("fp8", "mxfp4", "modelopt", "compressed-tensors")
	Algo       string   // ModelOpt quant_algo ("NVFP4")
	Format     string   // compressed-tensors format ("float-quantized")
	Block      [2]int64 // block FP8 / FP8Block block size
	Group      int64    // elements per scale of MXFP4 (32) / NVFP4 (16)
	// Ignore are the modules left unquantised, IgnoreKey the config path of
	// that list (for messages).
	Ignore    []string
	IgnoreKey string
	// notConvert is Ignore read as transformers reads a
	// modules_to_not_convert (block FP8, MXFP4); nil for the other lists.
	notConvert *NotConvertList
	// Groups are compressed-tensors' config groups, by name.
	Groups []QuantGroup
}

// QuantGroup is one compressed-tensors config group.
type QuantGroup struct {
	Name     string
	Targets  []string
	Scheme   Scheme
	Block    [2]int64
	Strategy string
}

// Spec is the description of the recipe's scheme.
func (r *QuantRecipe) Spec() *SchemeSpec { return SpecOf(r.Scheme) }

// RecipeError says a config declares a quantisation ckpt does not know (or
// declares one of its schemes with values it cannot use).
type RecipeError struct {
	File, Path string
	Reason     string
}

func (e *RecipeError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Reason)
}

// hfQuantConfigFile is ModelOpt's quantisation config beside config.json.
const hfQuantConfigFile = "hf_quant_config.json"

// readHFQuantConfig reads ModelOpt's hf_quant_config.json when config.json
// declares no quantisation but the tensors look quantised (a U8 tensor, or
// a weight_scale / weight_scale_2 / input_scale companion): other
// checkpoints cost no extra request to a remote store.
func (c *Checkpoint) readHFQuantConfig(ctx context.Context) error {
	if c.Config.Quantization() != nil || !looksQuantised(c.Tensors) {
		return nil
	}
	data, err := readSmallFile(ctx, c.Store, hfQuantConfigFile, MaxConfigSize)
	switch {
	case isNotExist(err):
		return nil
	case err != nil:
		return err
	}
	cfg, err := ParseConfig(data, c.Store.Location(hfQuantConfigFile))
	if err != nil {
		return err
	}
	c.HFQuantConfig = cfg
	return nil
}

func looksQuantised(ts []*Tensor) bool {
	for _, t := range ts {
		if t.DType == numfmt.U8 {
			return true
		}
		switch t.Name[strings.LastIndexByte(t.Name, '.')+1:] {
		case "weight_scale", "weight_scale_2", "input_scale":
			return true
		}
	}
	return false
}

// QuantRecipe returns the checkpoint's quantisation as declared by
// config.json's quantization_config (top level, else text_config) or,
// when that has none, by ModelOpt's hf_quant_config.json. It returns nil,
// nil when neither declares one, and a *RecipeError when the declaration
// is not one of the schemes (SpecOf) or not usable as one.
func (c *Checkpoint) QuantRecipe() (*QuantRecipe, error) {
	r, err := c.quantRecipe()
	if err != nil {
		return nil, err // never a half-read recipe (its Scheme unset)
	}
	return r, nil
}

func (c *Checkpoint) quantRecipe() (*QuantRecipe, error) {
	if q := c.Config.Quantization(); q != nil {
		return recipeFromConfig(c.Config.File, q)
	}
	if c.HFQuantConfig == nil {
		return nil, nil
	}
	file := c.HFQuantConfig.File
	qm, ok := c.HFQuantConfig.Raw["quantization"].(map[string]any)
	if !ok {
		return nil, &RecipeError{File: file, Path: "quantization", Reason: "no \"quantization\" object (ModelOpt writes {\"quantization\": {\"quant_algo\": ...}})"}
	}
	r := &QuantRecipe{File: file, Path: "quantization", Method: "modelopt", IgnoreKey: "quantization.exclude_modules"}
	r.Ignore = AsStrings(qm["exclude_modules"])
	return r, r.modelopt(qm)
}

func recipeFromConfig(file string, q *QuantConfig) (*QuantRecipe, error) {
	r := &QuantRecipe{File: file, Path: q.Path, Method: q.Method}
	fail := func(format string, a ...any) (*QuantRecipe, error) {
		return nil, &RecipeError{File: file, Path: q.Path, Reason: fmt.Sprintf(format, a...)}
	}
	switch strings.ToLower(q.Method) {
	case "fp8":
		r.Scheme, r.Block = BlockFP8, DefaultBlockSize
		if q.BlockSize != nil {
			if !q.IsBlockFP8() {
				return fail("weight_block_size %v is not a block size [bm, bn]", q.BlockSize)
			}
			r.Block = [2]int64{q.BlockSize[0], q.BlockSize[1]}
		}
		r.Ignore, r.IgnoreKey = q.ModulesToNotConvert, q.Path+".modules_to_not_convert"
		r.notConvert = NewNotConvertList(r.Ignore)
		return r, nil
	case "mxfp4":
		r.Scheme, r.Group = MXFP4, numfmt.MXFP4BlockSize
		r.Ignore, r.IgnoreKey = q.ModulesToNotConvert, q.Path+".modules_to_not_convert"
		r.notConvert = NewNotConvertList(r.Ignore)
		return r, nil
	case "modelopt":
		r.Ignore, r.IgnoreKey = AsStrings(q.Raw["ignore"]), q.Path+".ignore"
		if qm, ok := q.Raw["quantization"].(map[string]any); ok { // the hf_quant_config.json form inside config.json
			r.Ignore, r.IgnoreKey = AsStrings(qm["exclude_modules"]), q.Path+".quantization.exclude_modules"
			return r, r.modelopt(qm)
		}
		return r, r.modelopt(q.Raw)
	case "compressed-tensors":
		return r, r.compressedTensors(q)
	}
	return fail("quant_method %s is not a scheme ckpt knows (fp8, mxfp4, modelopt NVFP4, compressed-tensors FP8)", Quote(q.Method))
}

// modelopt reads a ModelOpt quantisation block (quant_algo, group_size).
func (r *QuantRecipe) modelopt(m map[string]any) error {
	r.Algo, _ = m["quant_algo"].(string)
	if !strings.EqualFold(r.Algo, "NVFP4") {
		return &RecipeError{File: r.File, Path: r.Path, Reason: fmt.Sprintf("quant_algo %s is not a ModelOpt scheme ckpt knows (NVFP4)", Quote(r.Algo))}
	}
	r.Scheme, r.Group = NVFP4, numfmt.NVFP4BlockSize
	if v, ok := m["group_size"]; ok {
		if n, ok := AsInt(v); !ok || n != numfmt.NVFP4BlockSize {
			return &RecipeError{File: r.File, Path: r.Path, Reason: fmt.Sprintf("group_size %v, but NVFP4 scales blocks of %d", v, numfmt.NVFP4BlockSize)}
		}
	}
	return nil
}

// compressedTensors reads a compressed-tensors float-quantized FP8 config.
func (r *QuantRecipe) compressedTensors(q *QuantConfig) error {
	fail := func(format string, a ...any) error {
		return &RecipeError{File: r.File, Path: q.Path, Reason: fmt.Sprintf(format, a...)}
	}
	r.Format, _ = q.Raw["format"].(string)
	r.Ignore, r.IgnoreKey = AsStrings(q.Raw["ignore"]), q.Path+".ignore"
	groups, _ := q.Raw["config_groups"].(map[string]any)
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g, _ := groups[n].(map[string]any)
		w, _ := g["weights"].(map[string]any)
		if w == nil {
			continue // activations only
		}
		format := r.Format
		if f, ok := g["format"].(string); ok && f != "" {
			format = f
		}
		bits, _ := AsInt(w["num_bits"])
		typ, _ := w["type"].(string)
		if format != "float-quantized" || bits != 8 || typ != "float" {
			return fail("config_groups.%s is format %s with %v-bit %s weights; ckpt knows float-quantized FP8 (num_bits 8, type float)", n, Quote(format), w["num_bits"], Quote(typ))
		}
		qg := QuantGroup{Name: n, Targets: AsStrings(g["targets"])}
		qg.Strategy, _ = w["strategy"].(string)
		switch strings.ToLower(qg.Strategy) {
		case "tensor", "":
			qg.Scheme = FP8Tensor
		case "channel":
			qg.Scheme = FP8Channel
		case "block":
			bs, _ := w["block_structure"].([]any)
			var b []int64
			for _, v := range bs {
				if x, ok := AsInt(v); ok && x > 0 {
					b = append(b, x)
				}
			}
			if len(b) != 2 || len(bs) != 2 {
				return fail("config_groups.%s.weights.block_structure %v is not [rows, cols]", n, w["block_structure"])
			}
			qg.Scheme, qg.Block = FP8Block, [2]int64{b[0], b[1]}
		default:
			return fail("config_groups.%s.weights.strategy %s is not one ckpt knows for FP8 (tensor, channel, block)", n, Quote(qg.Strategy))
		}
		r.Groups = append(r.Groups, qg)
	}
	if len(r.Groups) == 0 {
		return fail("no config_groups with weights")
	}
	r.Scheme, r.Block = r.Groups[0].Scheme, r.Groups[0].Block
	return nil
}

// group returns the compressed-tensors group whose targets name module
// (exactly or by a "re:" regex); else the first group that targets a
// layer class (a capitalised name such as "Linear"), which names cannot
// resolve.
func (r *QuantRecipe) group(module string) *QuantGroup {
	var byClass *QuantGroup
	for i := range r.Groups {
		g := &r.Groups[i]
		for _, t := range g.Targets {
			if rx, ok := strings.CutPrefix(t, "re:"); ok {
				if matchRegexp(rx, module) {
					return g
				}
			} else if t == module {
				return g
			} else if byClass == nil && t != "" && t[0] >= 'A' && t[0] <= 'Z' && !strings.Contains(t, ".") {
				byClass = g // a layer class ("Linear")
			}
		}
	}
	return byClass
}

// matchRegexp is Python's re.match: rx anchored at the start of s. An
// invalid expression matches nothing.
func matchRegexp(rx, s string) bool {
	re, err := regexp.Compile(`^(?:` + rx + `)`)
	return err == nil && re.MatchString(s)
}

// wildMatch matches s against pattern, where `*` stands for any run of
// characters (dots included), like fnmatch without character classes.
func wildMatch(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) || !strings.HasSuffix(s[len(parts[0]):], parts[len(parts)-1]) {
		return false
	}
	rest := s[len(parts[0]) : len(s)-len(parts[len(parts)-1])]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}

// Ignored returns the ignore-list entry that leaves module unquantised,
// or "" for none. A modules_to_not_convert (block FP8, MXFP4) is read as
// transformers reads it (NotConvertList). The other lists match on whole
// dotted segments: an entry names a module or a parent of it ("lm_head",
// "model.layers.0.mlp"), `*` stands for any run of characters (ModelOpt's
// exclude_modules are fnmatch wildcards), and compressed-tensors' "re:"
// entries are regexes matched from the start of the module's name.
func (r *QuantRecipe) Ignored(module string) string {
	if r == nil {
		return ""
	}
	if r.notConvert != nil {
		e, _ := r.notConvert.Match(module)
		return e
	}
	for _, e := range r.Ignore {
		if rx, ok := strings.CutPrefix(e, "re:"); ok {
			if matchRegexp(rx, module) {
				return e
			}
			continue
		}
		if e != "" && (wildMatch(e, module) || wildMatch(e+".*", module)) {
			return e
		}
	}
	return ""
}

// QuantWeight is one quantised weight of a recipe and its companions as
// the scheme wants them.
type QuantWeight struct {
	Scheme Scheme
	// Weight is the tensor of the stored codes; Name the name of the
	// weight's values (X for an MXFP4 X_blocks, else Weight.Name); Module
	// the module it belongs to (matched against the ignore list).
	Weight       *Tensor
	Name, Module string
	// Shape is the shape of the weight's values, nil when the stored shape
	// is not one the scheme allows (ShapeProblem says why).
	Shape        []int64
	ShapeProblem string
	Companions   []Companion
	// Block is an FP8Block weight's block_structure [bm, bn].
	Block [2]int64
}

// Companion is one companion a quantised weight needs, and what was found.
type Companion struct {
	CompanionSpec
	Name string
	// Tensor is the companion found, nil when absent.
	Tensor *Tensor
	// Want are the shapes the companion may have (several for a scalar:
	// [] and [1]); nil when the weight's shape allows no expectation.
	Want [][]int64
}

// ShapeOK reports whether the companion found has one of the shapes it
// may have (true when there is no expectation).
func (p *Companion) ShapeOK() bool {
	if p.Tensor == nil || p.Want == nil {
		return true
	}
	for _, w := range p.Want {
		if equalShape(p.Tensor.Shape, w) {
			return true
		}
	}
	return false
}

// DTypeOK reports whether the companion found has a dtype it may have.
func (p *Companion) DTypeOK() bool {
	if p.Tensor == nil {
		return true
	}
	for _, d := range p.DTypes {
		if p.Tensor.DType == d {
			return true
		}
	}
	return false
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

var scalarShapes = [][]int64{{}, {1}}

// QuantWeight returns t's place in the recipe when t holds the codes of a
// quantised weight of it (an MXFP4 X_blocks U8, an NVFP4 U8 or an FP8
// F8_E4M3 <module>.weight), with its companions looked up by name. It
// reads no data. A nil recipe has no quantised weights.
func (r *QuantRecipe) QuantWeight(c *Checkpoint, t *Tensor) (*QuantWeight, bool) {
	if r == nil {
		return nil, false
	}
	var w *QuantWeight
	module, isWeight := strings.CutSuffix(t.Name, ".weight")
	switch {
	case r.Scheme == MXFP4:
		base, ok := strings.CutSuffix(t.Name, "_blocks")
		if !ok || t.DType != numfmt.U8 {
			return nil, false
		}
		w = &QuantWeight{Scheme: MXFP4, Weight: t, Name: base, Module: base}
		if i := strings.LastIndexByte(base, '.'); i >= 0 {
			w.Module = base[:i]
		}
		sc := Companion{CompanionSpec: SpecOf(MXFP4).Companions[0], Name: base + "_scales"}
		if v, ok := numfmt.MXFP4Shape(t.Shape); ok {
			s, _ := numfmt.MXFP4ScaleShape(t.Shape)
			w.Shape, sc.Want = v, [][]int64{s}
		} else {
			w.ShapeProblem = "expected [..., G, 16] (16 bytes = 32 codes per block)"
		}
		w.Companions = []Companion{sc}
	case r.Scheme == NVFP4:
		if !isWeight || t.DType != numfmt.U8 {
			return nil, false
		}
		w = &QuantWeight{Scheme: NVFP4, Weight: t, Name: t.Name, Module: module}
		sp := SpecOf(NVFP4)
		sc := Companion{CompanionSpec: sp.Companions[0], Name: module + ".weight_scale"}
		if s, ok := numfmt.NVFP4ScaleShape(t.Shape); ok {
			w.Shape, sc.Want = []int64{t.Shape[0], 2 * t.Shape[1]}, [][]int64{s}
		} else {
			w.ShapeProblem = "expected [N, K/2] with K a multiple of 16"
		}
		w.Companions = []Companion{sc,
			{CompanionSpec: sp.Companions[1], Name: module + ".weight_scale_2", Want: scalarShapes},
			{CompanionSpec: sp.Companions[2], Name: module + ".input_scale", Want: scalarShapes}}
	case r.Scheme == BlockFP8:
		if t.DType != numfmt.F8E4M3 {
			return nil, false
		}
		w = &QuantWeight{Scheme: BlockFP8, Weight: t, Name: t.Name, Module: module, Shape: t.Shape}
		sc := Companion{CompanionSpec: SpecOf(BlockFP8).Companions[0], Name: ScaleName(t.Name)}
		if len(t.Shape) == 2 {
			sc.Want = [][]int64{{ceilDiv(t.Shape[0], r.Block[0]), ceilDiv(t.Shape[1], r.Block[1])}}
		} else {
			w.Shape, w.ShapeProblem = nil, "expected a 2-D weight [N, K]"
		}
		w.Companions = []Companion{sc}
	default: // compressed-tensors FP8
		if !isWeight || t.DType != numfmt.F8E4M3 {
			return nil, false
		}
		g := r.group(module)
		if g == nil {
			return nil, false
		}
		sp := SpecOf(g.Scheme)
		w = &QuantWeight{Scheme: g.Scheme, Weight: t, Name: t.Name, Module: module, Shape: t.Shape, Block: g.Block}
		sc := Companion{CompanionSpec: sp.Companions[0], Name: module + ".weight_scale"}
		switch {
		case g.Scheme == FP8Tensor:
			sc.Want = scalarShapes
		case len(t.Shape) != 2:
			w.Shape, w.ShapeProblem = nil, "expected a 2-D weight [N, K]"
		case g.Scheme == FP8Channel:
			sc.Want = [][]int64{{t.Shape[0], 1}}
		default:
			sc.Want = [][]int64{{ceilDiv(t.Shape[0], g.Block[0]), ceilDiv(t.Shape[1], g.Block[1])}}
		}
		w.Companions = []Companion{sc, {CompanionSpec: sp.Companions[1], Name: module + ".input_scale", Want: scalarShapes}}
	}
	for i := range w.Companions {
		if s, ok := c.Lookup(w.Companions[i].Name); ok {
			w.Companions[i].Tensor = s
		}
	}
	return w, true
}

// QuantWeights returns every quantised weight of the recipe in c, in
// the checkpoint's order.
func (r *QuantRecipe) QuantWeights(c *Checkpoint) []*QuantWeight {
	var out []*QuantWeight
	for _, t := range c.Tensors {
		if w, ok := r.QuantWeight(c, t); ok {
			out = append(out, w)
		}
	}
	return out
}

// CountParameters counts t's parameters as the Hugging Face Hub does
// (CountsAsParameter; quantized says whether the checkpoint declares a
// quantisation), with the recipe's packing: the packed E2M1 codes of an
// MXFP4 X_blocks or an NVFP4 weight count two per byte, and MXFP4's U8
// X_scales are bookkeeping (huggingface/huggingface.js:packages/hub/src/
// lib/parse-safetensors-metadata.ts, getQuantizationMultiplier and
// shouldSkipTensor: mxfp4 _blocks ×2, _scales skipped). r may be nil. The
// bool is false when t is no parameter at all.
func CountParameters(c *Checkpoint, r *QuantRecipe, t *Tensor, quantized bool) (int64, bool) {
	if !CountsAsParameter(&t.TensorInfo, quantized) {
		return 0, false
	}
	n := int64(t.Numel())
	if r == nil {
		return n, true
	}
	switch r.Scheme {
	case MXFP4:
		if t.DType == numfmt.U8 && strings.HasSuffix(t.Name, "_scales") {
			return 0, false
		}
	case BlockFP8, FP8Tensor, FP8Channel, FP8Block:
		return n, true
	}
	if w, ok := r.QuantWeight(c, t); ok && r.Ignored(w.Module) == "" {
		return n * SpecOf(w.Scheme).ValuesPerElement, true
	}
	return n, true
}

package quant

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Recipe is a checkpoint's quantisation as its config declares it.
type Recipe struct {
	// Scheme is the scheme of the checkpoint's quantised weights (for
	// compressed-tensors, that of its first config group; see GroupFor).
	Scheme Scheme
	// File is the config file that declares it, Path the JSON path of the
	// declaration in it ("quantization_config", "quantization").
	File, Path string
	Method     string   // quant_method ("fp8", "mxfp4", "modelopt", "compressed-tensors")
	Algo       string   // ModelOpt quant_algo ("NVFP4")
	Format     string   // compressed-tensors format ("float-quantized")
	Block      [2]int64 // block FP8 / FP8PerBlock block size
	GroupSize  int64    // elements per scale of MXFP4 (32) / NVFP4 (16)
	// Ignore are the modules left unquantised, IgnoreKey the config path of
	// that list (for messages).
	Ignore    []string
	IgnoreKey string
	// notConvert is Ignore read as transformers reads a
	// modules_to_not_convert (block FP8, MXFP4); nil for the other lists.
	notConvert *NotConvertList
	// Groups are compressed-tensors' config groups, by name.
	Groups []Group
}

// Group is one compressed-tensors config group.
type Group struct {
	Name     string
	Targets  []string
	Scheme   Scheme
	Block    [2]int64
	Strategy string
}

// Spec is the description of the recipe's scheme.
func (r *Recipe) Spec() *Spec { return SpecOf(r.Scheme) }

// RecipeError says a config declares a quantisation ckpt does not know (or
// declares one of its schemes with values it cannot use).
type RecipeError struct {
	File, Path string
	Reason     string
}

// Error says which declaration of which file is not usable, and why.
func (e *RecipeError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Reason)
}

// FromConfig reads the recipe that config.json's quantization_config q
// declares (file is config.json's location, for messages). It fails with a
// *RecipeError when q does not declare one of the schemes (SpecOf), or
// declares one with values it cannot use; it never returns a half-read
// recipe.
func FromConfig(file string, q *Config) (*Recipe, error) {
	return whole(recipeFromConfig(file, q))
}

// FromHFQuantConfig reads the recipe of ModelOpt's hf_quant_config.json,
// whose top-level object is raw and whose location is file. It fails as
// FromConfig does.
func FromHFQuantConfig(file string, raw map[string]any) (*Recipe, error) {
	qm, ok := raw["quantization"].(map[string]any)
	if !ok {
		return nil, &RecipeError{File: file, Path: "quantization", Reason: "no \"quantization\" object (ModelOpt writes {\"quantization\": {\"quant_algo\": ...}})"}
	}
	r := &Recipe{File: file, Path: "quantization", Method: "modelopt", IgnoreKey: "quantization.exclude_modules"}
	r.Ignore = jsonval.Strings(qm["exclude_modules"])
	return whole(r, r.modelopt(qm))
}

// whole is r, or nil when err says r is half read.
func whole(r *Recipe, err error) (*Recipe, error) {
	if err != nil {
		return nil, err
	}
	return r, nil
}

func recipeFromConfig(file string, q *Config) (*Recipe, error) {
	r := &Recipe{File: file, Path: q.Path, Method: q.Method}
	fail := func(format string, a ...any) (*Recipe, error) {
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
		r.Scheme, r.GroupSize = MXFP4, numfmt.MXFP4BlockSize
		r.Ignore, r.IgnoreKey = q.ModulesToNotConvert, q.Path+".modules_to_not_convert"
		r.notConvert = NewNotConvertList(r.Ignore)
		return r, nil
	case "modelopt":
		r.Ignore, r.IgnoreKey = jsonval.Strings(q.Raw["ignore"]), q.Path+".ignore"
		if qm, ok := q.Raw["quantization"].(map[string]any); ok { // the hf_quant_config.json form inside config.json
			r.Ignore, r.IgnoreKey = jsonval.Strings(qm["exclude_modules"]), q.Path+".quantization.exclude_modules"
			return r, r.modelopt(qm)
		}
		return r, r.modelopt(q.Raw)
	case "compressed-tensors":
		return r, r.compressedTensors(q)
	}
	return fail("quant_method %q is not a scheme ckpt knows (fp8, mxfp4, modelopt NVFP4, compressed-tensors FP8)", q.Method)
}

// modelopt reads a ModelOpt quantisation block (quant_algo, group_size).
func (r *Recipe) modelopt(m map[string]any) error {
	r.Algo, _ = m["quant_algo"].(string)
	if !strings.EqualFold(r.Algo, "NVFP4") {
		return &RecipeError{File: r.File, Path: r.Path, Reason: fmt.Sprintf("quant_algo %q is not a ModelOpt scheme ckpt knows (NVFP4)", r.Algo)}
	}
	r.Scheme, r.GroupSize = NVFP4, numfmt.NVFP4BlockSize
	if v, ok := m["group_size"]; ok {
		if n, ok := jsonval.Int(v); !ok || n != numfmt.NVFP4BlockSize {
			return &RecipeError{File: r.File, Path: r.Path, Reason: fmt.Sprintf("group_size %v, but NVFP4 scales blocks of %d", v, numfmt.NVFP4BlockSize)}
		}
	}
	return nil
}

// compressedTensors reads a compressed-tensors float-quantized FP8 config.
func (r *Recipe) compressedTensors(q *Config) error {
	fail := func(format string, a ...any) error {
		return &RecipeError{File: r.File, Path: q.Path, Reason: fmt.Sprintf(format, a...)}
	}
	r.Format, _ = q.Raw["format"].(string)
	r.Ignore, r.IgnoreKey = jsonval.Strings(q.Raw["ignore"]), q.Path+".ignore"
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
		bits, _ := jsonval.Int(w["num_bits"])
		typ, _ := w["type"].(string)
		if format != "float-quantized" || bits != 8 || typ != "float" {
			return fail("config_groups.%s is format %q with %v-bit %q weights; ckpt knows float-quantized FP8 (num_bits 8, type float)", n, format, w["num_bits"], typ)
		}
		qg := Group{Name: n, Targets: jsonval.Strings(g["targets"])}
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
				if x, ok := jsonval.Int(v); ok && x > 0 {
					b = append(b, x)
				}
			}
			if len(b) != 2 || len(bs) != 2 {
				return fail("config_groups.%s.weights.block_structure %v is not [rows, cols]", n, w["block_structure"])
			}
			qg.Scheme, qg.Block = FP8PerBlock, [2]int64{b[0], b[1]}
		default:
			return fail("config_groups.%s.weights.strategy %q is not one ckpt knows for FP8 (tensor, channel, block)", n, qg.Strategy)
		}
		r.Groups = append(r.Groups, qg)
	}
	if len(r.Groups) == 0 {
		return fail("no config_groups with weights")
	}
	r.Scheme, r.Block = r.Groups[0].Scheme, r.Groups[0].Block
	return nil
}

// GroupFor returns the compressed-tensors group whose targets name module
// (exactly or by a "re:" regex); else the first group that targets a
// layer class (a capitalised name such as "Linear"), which names cannot
// resolve.
func (r *Recipe) GroupFor(module string) *Group {
	var byClass *Group
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
func (r *Recipe) Ignored(module string) string {
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

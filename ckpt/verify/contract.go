package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// ContractVersion is the version of the contract JSON this package writes.
const ContractVersion = 1

// Contract is the structural contract of a checkpoint: what a later
// checkpoint (a fine-tune, a re-upload) must keep to be a drop-in
// replacement. Write it with WriteContract, read it with ReadContract and
// hold a checkpoint against it with Compare.
type Contract struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema     `json:"schema_version"`
	Version int             `json:"contract_version"`
	Source  string          `json:"source"`
	Config  []ConfigField   `json:"config"`
	FP8     *Scheme         `json:"fp8"`
	Tensors []ContractEntry `json:"tensors"`
}

// ConfigField is one architecture-relevant config value, by JSON path.
type ConfigField struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Scheme is the FP8 scheme: the quantization_config parameters, the scale
// dtypes found and which tensors are FP8.
type Scheme struct {
	Method              string   `json:"method"`
	Fmt                 string   `json:"fmt"`
	ActivationScheme    string   `json:"activation_scheme"`
	BlockSize           []int64  `json:"weight_block_size"`
	ScaleDTypes         []string `json:"scale_dtypes"`
	ModulesToNotConvert []string `json:"modules_to_not_convert"`
	Tensors             []string `json:"fp8_tensors"`
}

// ContractEntry is one tensor of the contract.
type ContractEntry struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	XXH3  string  `json:"xxh3,omitempty"`
}

// textConfigKeys and visionConfigKeys are the config fields the contract
// keeps (when present).
var (
	topConfigKeys    = []string{"model_type", "architectures", "tie_word_embeddings"}
	textConfigKeys   = []string{"model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "layer_types", "full_attention_interval", "num_attention_heads", "num_key_value_heads", "head_dim", "attn_output_gate", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim", "vocab_size", "mtp_num_hidden_layers", "tie_word_embeddings"}
	visionConfigKeys = []string{"depth", "hidden_size", "intermediate_size", "num_heads", "in_channels", "patch_size", "temporal_patch_size", "spatial_merge_size", "num_position_embeddings", "out_hidden_size"}
)

// ContractOf is the workflow of `ckpt contract`: the contract of c, with
// the xxh3 of every tensor when opt.ReadData is set (read as Hashes does).
func ContractOf(ctx context.Context, c *ckpt.Checkpoint, opt Options) (*Contract, error) {
	var hashes map[string]string
	if opt.ReadData {
		var err error
		if hashes, err = Hashes(ctx, c, opt); err != nil {
			return nil, err
		}
	}
	return NewContract(c, hashes), nil
}

// NewContract builds the contract of an opened checkpoint. hashes (tensor
// name → xxh3, from Report.Hashes) may be nil.
func NewContract(c *ckpt.Checkpoint, hashes map[string]string) *Contract {
	k := &Contract{Version: ContractVersion, Source: c.Source, Config: []ConfigField{}, Tensors: []ContractEntry{}}
	if cfg := c.Config; cfg != nil {
		var paths []string
		for _, key := range topConfigKeys {
			paths = append(paths, key)
		}
		if tp := cfg.TextPath(); tp != "" {
			for _, key := range textConfigKeys {
				paths = append(paths, tp+key)
			}
		} else {
			for _, key := range textConfigKeys {
				if key != "model_type" && key != "tie_word_embeddings" {
					paths = append(paths, key)
				}
			}
		}
		for _, key := range visionConfigKeys {
			paths = append(paths, "vision_config."+key)
		}
		for _, p := range paths {
			if v, ok := cfg.Get(p); ok {
				k.Config = append(k.Config, ConfigField{Path: p, Value: v})
			}
		}
	}
	for _, t := range c.Tensors {
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		k.Tensors = append(k.Tensors, ContractEntry{Name: t.Name, DType: string(t.DType), Shape: shape, XXH3: hashes[t.Name]})
	}
	in := newInventory(c)
	f := in.fp8Facts()
	if q := in.quant; q != nil || len(f.weights) > 0 {
		s := &Scheme{ScaleDTypes: []string{}, ModulesToNotConvert: []string{}, Tensors: []string{}}
		if q != nil {
			s.Method, s.Fmt, s.ActivationScheme, s.BlockSize = q.Method, q.Fmt, q.ActivationScheme, q.BlockSize
			s.ModulesToNotConvert = append(s.ModulesToNotConvert, q.ModulesToNotConvert...)
			sort.Strings(s.ModulesToNotConvert)
		}
		seen := map[string]bool{}
		for _, sc := range f.scales {
			if !seen[string(sc.DType)] {
				seen[string(sc.DType)] = true
				s.ScaleDTypes = append(s.ScaleDTypes, string(sc.DType))
			}
		}
		sort.Strings(s.ScaleDTypes)
		for _, w := range f.weights {
			s.Tensors = append(s.Tensors, w.Name)
		}
		k.FP8 = s
	}
	return k
}

// WriteContract writes k as indented JSON.
func WriteContract(w io.Writer, k *Contract) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(k)
}

// ReadContract reads a contract written by WriteContract.
func ReadContract(r io.Reader, name string) (*Contract, error) {
	b, err := readContractBytes(r, name)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var k Contract
	if err := dec.Decode(&k); err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", name, err)
	}
	if k.Version != ContractVersion {
		return nil, fmt.Errorf("reading contract %s: contract_version is %d, this tool reads %d", name, k.Version, ContractVersion)
	}
	if k.Tensors == nil {
		return nil, fmt.Errorf("reading contract %s: no tensors list", name)
	}
	return &k, nil
}

// GroupDiff summarises the comparison of one group of tensors.
type GroupDiff struct {
	Group         string         `json:"group"`
	ContractKeys  int            `json:"contract_keys"`
	Keys          int            `json:"keys"`
	Identical     int            `json:"identical"`
	Added         int            `json:"added"`
	Removed       int            `json:"removed"`
	RemovedScales int            `json:"removed_scales"`
	AddedScales   int            `json:"added_scales"`
	DTypeChanged  int            `json:"dtype_changed"`
	ShapeChanged  int            `json:"shape_changed"`
	HashChanged   int            `json:"hash_changed"`
	DTypeChanges  map[string]int `json:"dtype_changes,omitempty"` // "F8_E4M3 -> BF16": n
}

// Comparison is the result of Compare.
type Comparison struct {
	// Contract names the contract file (set by the caller); Source is the
	// source the contract was written from.
	Contract string      `json:"contract"`
	Source   string      `json:"contract_source"`
	Groups   []GroupDiff `json:"groups"`
	Checks   []Check     `json:"-"`
	// HashesCompared is false when either side has no tensor hashes.
	HashesCompared bool `json:"hashes_compared"`
}

// Same reports whether no check of the comparison failed.
func (cmp *Comparison) Same() bool {
	for _, c := range cmp.Checks {
		if c.Status == Fail {
			return false
		}
	}
	return true
}

// Compare holds cur against the contract want. Only tensors selected by m
// (nil: all) are compared, and only the modules_to_not_convert entries
// that m selects (as a module or as its .weight); the architecture config
// and the FP8 scheme parameters are always compared.
func Compare(want, cur *Contract, m *ckpt.Matcher) *Comparison {
	cmp := &Comparison{Source: want.Source}
	wantBy := map[string]*ContractEntry{}
	curBy := map[string]*ContractEntry{}
	var all []string
	for i := range want.Tensors {
		e := &want.Tensors[i]
		if m.Match(e.Name) {
			wantBy[e.Name] = e
			all = append(all, e.Name)
		}
	}
	for i := range cur.Tensors {
		e := &cur.Tensors[i]
		if m.Match(e.Name) {
			curBy[e.Name] = e
			if wantBy[e.Name] == nil {
				all = append(all, e.Name)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return ckpt.NaturalLess(all[i], all[j]) })
	hashes := hasHashes(want) && hasHashes(cur)
	cmp.HashesCompared = hashes
	groups := map[string]*GroupDiff{}
	for _, g := range ckpt.Groups() {
		groups[g] = &GroupDiff{Group: g}
	}
	var added, removed, hashChanged []string
	type change struct{ names []string }
	dtypeBy := map[string]*change{}
	var dtypeOrder []string
	var shapeChecks []Check
	for _, n := range all {
		gn, _, _ := ckpt.GroupOf(n)
		g := groups[gn]
		w, c := wantBy[n], curBy[n]
		if w != nil {
			g.ContractKeys++
		}
		if c != nil {
			g.Keys++
		}
		switch {
		case w == nil:
			g.Added++
			added = append(added, n)
			if strings.HasSuffix(n, ckpt.ScaleSuffix) {
				g.AddedScales++
			}
			continue
		case c == nil:
			g.Removed++
			removed = append(removed, n)
			if strings.HasSuffix(n, ckpt.ScaleSuffix) {
				g.RemovedScales++
			}
			continue
		}
		same := true
		if w.DType != c.DType {
			same = false
			g.DTypeChanged++
			key := w.DType + " -> " + c.DType
			if g.DTypeChanges == nil {
				g.DTypeChanges = map[string]int{}
			}
			g.DTypeChanges[key]++
			if dtypeBy[key] == nil {
				dtypeBy[key] = &change{}
				dtypeOrder = append(dtypeOrder, key)
			}
			dtypeBy[key].names = append(dtypeBy[key].names, n)
		}
		if !slices.Equal(w.Shape, c.Shape) {
			same = false
			g.ShapeChanged++
			shapeChecks = append(shapeChecks, Check{ID: "contract.shape", Status: Fail, Tensors: []string{n},
				Message: fmt.Sprintf("%s: shape %s in the contract, %s now", ckpt.EscapeName(n), ckpt.FormatShape(w.Shape), ckpt.FormatShape(c.Shape))})
		}
		if hashes && w.DType == c.DType && slices.Equal(w.Shape, c.Shape) && w.XXH3 != c.XXH3 {
			same = false
			g.HashChanged++
			hashChanged = append(hashChanged, n)
		}
		if same {
			g.Identical++
		}
	}
	for _, g := range ckpt.Groups() {
		if gd := groups[g]; gd.ContractKeys+gd.Keys > 0 {
			cmp.Groups = append(cmp.Groups, *gd)
		}
	}
	var out []Check
	if len(added) > 0 {
		out = append(out, Check{ID: "contract.key_added", Status: Fail, Tensors: added, Message: fmt.Sprintf("%s not in the contract: %s", plural(len(added), "key", "keys"), names(added, 8))})
	} else {
		out = append(out, Check{ID: "contract.key_added", Status: Pass, Message: "no key beyond the contract's"})
	}
	if len(removed) > 0 {
		out = append(out, Check{ID: "contract.key_removed", Status: Fail, Tensors: removed, Message: fmt.Sprintf("%s of the contract missing: %s", plural(len(removed), "key", "keys"), names(removed, 8))})
	} else {
		out = append(out, Check{ID: "contract.key_removed", Status: Pass, Message: fmt.Sprintf("all %d keys of the contract present", len(wantBy))})
	}
	if len(dtypeOrder) == 0 {
		out = append(out, Check{ID: "contract.dtype", Status: Pass, Message: "every common key keeps its dtype"})
	}
	for _, k := range dtypeOrder {
		ns := dtypeBy[k].names
		out = append(out, Check{ID: "contract.dtype", Status: Fail, Tensors: ns,
			Message: fmt.Sprintf("%s changed dtype %s: %s", plural(len(ns), "tensor", "tensors"), strings.Replace(k, "->", "→", 1), names(ns, 8))})
	}
	out = appendOr(out, shapeChecks, Check{ID: "contract.shape", Status: Pass, Message: "every common key keeps its shape"})
	switch {
	case !hasHashes(want):
		out = append(out, Check{ID: "contract.hash", Status: Skip, Message: "not compared: the contract has no hashes (write it with contract --read-data)"})
	case !hasHashes(cur):
		out = append(out, Check{ID: "contract.hash", Status: Skip, Message: "not compared: run verify with --read-data to hash the tensors"})
	case len(hashChanged) > 0:
		out = append(out, Check{ID: "contract.hash", Status: Fail, Tensors: hashChanged, Message: fmt.Sprintf("%s with the same dtype and shape have different content (xxh3): %s", plural(len(hashChanged), "tensor", "tensors"), names(hashChanged, 8))})
	default:
		out = append(out, Check{ID: "contract.hash", Status: Pass, Message: "every common tensor has the contract's content (xxh3)"})
	}
	out = append(out, compareConfig(want, cur)...)
	out = append(out, compareScheme(want.FP8, cur.FP8, m)...)
	cmp.Checks = out
	return cmp
}

func hasHashes(k *Contract) bool {
	if len(k.Tensors) == 0 {
		return false
	}
	for _, t := range k.Tensors {
		if t.XXH3 == "" {
			return false
		}
	}
	return true
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func compareConfig(want, cur *Contract) []Check {
	wv := map[string]string{}
	cv := map[string]string{}
	var paths []string
	for _, f := range want.Config {
		wv[f.Path] = jsonString(f.Value)
		paths = append(paths, f.Path)
	}
	for _, f := range cur.Config {
		cv[f.Path] = jsonString(f.Value)
		if _, ok := wv[f.Path]; !ok {
			paths = append(paths, f.Path)
		}
	}
	var out []Check
	for _, p := range paths {
		w, inW := wv[p]
		c, inC := cv[p]
		switch {
		case !inC:
			out = append(out, Check{ID: "contract.config", Status: Fail, Message: fmt.Sprintf("config %s: %s in the contract, absent now", p, w)})
		case !inW:
			out = append(out, Check{ID: "contract.config", Status: Fail, Message: fmt.Sprintf("config %s: absent in the contract, %s now", p, c)})
		case w != c:
			out = append(out, Check{ID: "contract.config", Status: Fail, Message: fmt.Sprintf("config %s: %s in the contract, %s now", p, w, c)})
		}
	}
	if len(out) == 0 {
		out = append(out, Check{ID: "contract.config", Status: Pass, Message: fmt.Sprintf("architecture config identical (%d fields)", len(paths))})
	}
	return out
}

// SchemeString describes an FP8 scheme in one line.
func SchemeString(s *Scheme) string {
	if s == nil {
		return "none"
	}
	sd := strings.Join(s.ScaleDTypes, "/")
	if sd == "" {
		sd = "none"
	}
	return fmt.Sprintf("method %s, fmt %s, activation %s, block %s, scales %s", orUnset(s.Method), orUnset(s.Fmt), orUnset(s.ActivationScheme), ckpt.FormatShape(s.BlockSize), sd)
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

func compareScheme(want, cur *Scheme, m *ckpt.Matcher) []Check {
	switch {
	case want == nil && cur == nil:
		return []Check{{ID: "contract.fp8_scheme", Status: Pass, Message: "no FP8 in the contract nor now"}, {ID: "contract.fp8_not_convert", Status: Skip, Message: "no FP8"}}
	case want == nil || cur == nil:
		return []Check{{ID: "contract.fp8_scheme", Status: Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now", SchemeString(want), SchemeString(cur))}}
	}
	var out []Check
	if SchemeString(want) != SchemeString(cur) {
		out = append(out, Check{ID: "contract.fp8_scheme", Status: Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now", SchemeString(want), SchemeString(cur))})
	} else {
		out = append(out, Check{ID: "contract.fp8_scheme", Status: Pass, Message: fmt.Sprintf("FP8 scheme identical (%s)", SchemeString(cur))})
	}
	wm := map[string]bool{}
	for _, e := range want.ModulesToNotConvert {
		wm[e] = true
	}
	cm := map[string]bool{}
	var add, rem []string
	sel := func(e string) bool { return m.Match(e) || m.Match(e+".weight") }
	for _, e := range cur.ModulesToNotConvert {
		cm[e] = true
		if !wm[e] && sel(e) {
			add = append(add, e)
		}
	}
	for _, e := range want.ModulesToNotConvert {
		if !cm[e] && sel(e) {
			rem = append(rem, e)
		}
	}
	if len(add) > 0 {
		out = append(out, Check{ID: "contract.fp8_not_convert", Status: Fail, Message: fmt.Sprintf("modules_to_not_convert: %s added: %s", plural(len(add), "entry", "entries"), names(add, 8))})
	}
	if len(rem) > 0 {
		out = append(out, Check{ID: "contract.fp8_not_convert", Status: Fail, Message: fmt.Sprintf("modules_to_not_convert: %s removed: %s", plural(len(rem), "entry", "entries"), names(rem, 8))})
	}
	if len(add)+len(rem) == 0 {
		n := 0
		for _, e := range cur.ModulesToNotConvert {
			if sel(e) {
				n++
			}
		}
		msg := fmt.Sprintf("modules_to_not_convert identical (%d entries)", n)
		if n != len(cur.ModulesToNotConvert) {
			msg = fmt.Sprintf("modules_to_not_convert identical (%d of %d entries selected by --match/--exclude)", n, len(cur.ModulesToNotConvert))
		}
		out = append(out, Check{ID: "contract.fp8_not_convert", Status: Pass, Message: msg})
	}
	return out
}

// Summary renders a group's line: "mtp: 22 keys in the contract, 15 now:
// 8 identical, 7 removed (7 weight_scale_inv), 7 dtype F8_E4M3 → BF16".
func (g *GroupDiff) Summary() string {
	head := fmt.Sprintf("%s: %d keys in the contract, %d now", g.Group, g.ContractKeys, g.Keys)
	if g.ContractKeys == g.Keys && g.Identical == g.Keys {
		return head + ": identical"
	}
	parts := []string{fmt.Sprintf("%d identical", g.Identical)}
	if g.Removed > 0 {
		s := fmt.Sprintf("%d removed", g.Removed)
		if g.RemovedScales > 0 {
			s += fmt.Sprintf(" (%d weight_scale_inv)", g.RemovedScales)
		}
		parts = append(parts, s)
	}
	if g.Added > 0 {
		s := fmt.Sprintf("%d added", g.Added)
		if g.AddedScales > 0 {
			s += fmt.Sprintf(" (%d weight_scale_inv)", g.AddedScales)
		}
		parts = append(parts, s)
	}
	if g.DTypeChanged > 0 {
		keys := make([]string, 0, len(g.DTypeChanges))
		for k := range g.DTypeChanges {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var ds []string
		for _, k := range keys {
			ds = append(ds, fmt.Sprintf("%d %s", g.DTypeChanges[k], strings.Replace(k, "->", "→", 1)))
		}
		parts = append(parts, "dtype changed: "+strings.Join(ds, ", "))
	}
	if g.ShapeChanged > 0 {
		parts = append(parts, fmt.Sprintf("%d shape changed", g.ShapeChanged))
	}
	if g.HashChanged > 0 {
		parts = append(parts, fmt.Sprintf("%d content changed", g.HashChanged))
	}
	return head + ": " + strings.Join(parts, ", ")
}

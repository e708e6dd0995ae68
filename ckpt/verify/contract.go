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

// ContractVersion is the version of the contract JSON this package
// writes. Version 2 records the whole config (Contract.Config); version 1
// recorded a fixed list of architecture fields, and is still read
// (Contract.ConfigRecorded).
const ContractVersion = 2

// Contract is the structural contract of a checkpoint: what a later
// checkpoint (a fine-tune, a re-upload) must keep to be a drop-in
// replacement. Write it with WriteContract, read it with ReadContract and
// hold a checkpoint against it with Compare.
type Contract struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema `json:"schema_version"`
	Version int         `json:"contract_version"`
	Source  string      `json:"source"`
	// Config is config.json without its bookkeeping keys (ConfigOf), as
	// one JSON object ({} when the checkpoint has no config.json).
	Config map[string]any `json:"config"`
	// ConfigRecorded lists the config paths a version-1 contract recorded:
	// only those were kept, so only those can be compared. Nil for a
	// contract of this version, which records the whole config.
	ConfigRecorded []string        `json:"-"`
	FP8            *Scheme         `json:"fp8"`
	Tensors        []ContractEntry `json:"tensors"`
	// GeneratedBy names the tool, version and time that wrote the
	// contract (set by the caller; never compared).
	GeneratedBy *ckpt.Generator `json:"generated_by,omitempty"`
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

// quantSelectionKeys are the quantization_config keys compared per
// selected tensor (contract.fp8_not_convert, which follows --match and
// --exclude) rather than as config values.
var quantSelectionKeys = []string{"modules_to_not_convert", "ignored_layers"}

// ConfigOf is the config a contract records: a copy of cfg.Raw without the
// ckpt.ConfigBookkeeping keys (at any depth) and without the
// modules_to_not_convert / ignored_layers lists of quantization_config
// (the contract's FP8 scheme holds them). Nil cfg gives {}.
func ConfigOf(cfg *ckpt.Config) map[string]any {
	if cfg == nil {
		return map[string]any{}
	}
	return filterConfig(cfg.Raw, false)
}

func filterConfig(m map[string]any, inQuant bool) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if slices.Contains(ckpt.ConfigBookkeeping, k) || inQuant && slices.Contains(quantSelectionKeys, k) {
			continue
		}
		if o, ok := v.(map[string]any); ok {
			v = filterConfig(o, k == "quantization_config")
		}
		out[k] = v
	}
	return out
}

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
	k := &Contract{Version: ContractVersion, Source: c.Source, Config: ConfigOf(c.Config), Tensors: []ContractEntry{}}
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

// legacyConfigField is one config value of a version-1 contract.
type legacyConfigField struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// ReadContract reads a contract written by WriteContract, of this version
// or of version 1 (whose config is a list of {path, value}: it is read
// into Config, and its paths into ConfigRecorded).
func ReadContract(r io.Reader, name string) (*Contract, error) {
	b, err := readContractBytes(r, name)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Contract
		Config json.RawMessage `json:"config"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", name, err)
	}
	k := doc.Contract
	decode := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(doc.Config))
		d.UseNumber()
		return d.Decode(v)
	}
	switch k.Version {
	case ContractVersion:
		if len(doc.Config) > 0 {
			if err := decode(&k.Config); err != nil {
				return nil, fmt.Errorf("reading contract %s: config: %w", name, err)
			}
		}
	case 1:
		var fields []legacyConfigField
		if len(doc.Config) > 0 {
			if err := decode(&fields); err != nil {
				return nil, fmt.Errorf("reading contract %s: config: %w", name, err)
			}
		}
		k.ConfigRecorded = []string{}
		for _, f := range fields {
			setConfigPath(&k.Config, f.Path, f.Value)
			k.ConfigRecorded = append(k.ConfigRecorded, f.Path)
		}
	default:
		return nil, fmt.Errorf("reading contract %s: contract_version is %d, this tool reads 1 to %d", name, k.Version, ContractVersion)
	}
	if k.Config == nil {
		k.Config = map[string]any{}
	}
	if k.Tensors == nil {
		return nil, fmt.Errorf("reading contract %s: no tensors list", name)
	}
	return &k, nil
}

// setConfigPath sets a dotted path of a version-1 contract (its keys hold
// no dots) in a nested object.
func setConfigPath(root *map[string]any, path string, v any) {
	if *root == nil {
		*root = map[string]any{}
	}
	m := *root
	segs := strings.Split(path, ".")
	for _, s := range segs[:len(segs)-1] {
		next, ok := m[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s] = next
		}
		m = next
	}
	m[segs[len(segs)-1]] = v
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
	// ContentCompared says whether content hashes were compared (both
	// sides have them: Comparison.HashesCompared); without them Identical
	// counts tensors with the same name, dtype and shape, content unknown.
	ContentCompared bool `json:"content_compared"`
	// ContentNotCompared says why content was not compared ("" when it was).
	ContentNotCompared string `json:"content_not_compared,omitempty"`
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
	// ConfigKeys is how many config keys were compared (ckpt.ConfigKeys of
	// either side); ConfigChanges lists every difference among them.
	ConfigKeys    int                `json:"config_keys_compared"`
	ConfigChanges []ConfigDifference `json:"config_changes"`
	// ConfigNotCompared lists the keys of the checkpoint's config that the
	// contract does not record (a version-1 contract); [] otherwise.
	ConfigNotCompared []string `json:"config_not_compared"`
}

// ConfigDifference is one config difference of a comparison: Base is the
// contract's value, FT the checkpoint's. AllowedBy is the AllowConfig path
// that accepts it, "" when it fails the comparison.
type ConfigDifference struct {
	ckpt.ConfigChange
	AllowedBy string `json:"allowed_by,omitempty"`
}

// CompareOptions tune Compare.
type CompareOptions struct {
	// Match selects the tensors compared (nil: all).
	Match *ckpt.Matcher
	// AllowConfig lists config paths whose differences are intended: a
	// difference at a path, or under it ("text_config.rope_parameters"
	// covers its rope_theta, "text_config.layer_types" its elements),
	// passes and is named as allowed. Each path must name a config key of
	// the contract or of the checkpoint (else *UnknownConfigPathError).
	AllowConfig []string
}

// UnknownConfigPathError says that an AllowConfig path names no config key
// the comparison sees. Suggest lists key paths that end with it.
type UnknownConfigPathError struct {
	Path        string
	Bookkeeping bool // a ckpt.ConfigBookkeeping key: never recorded
	// QuantSelection: quantization_config.modules_to_not_convert (or
	// ignored_layers), which the FP8 scheme records, not the config.
	QuantSelection bool
	Suggest        []string
}

func (e *UnknownConfigPathError) Error() string {
	msg := fmt.Sprintf("--allow-config %s names no config key of the contract or of the checkpoint", ckpt.Quote(e.Path))
	if e.Bookkeeping {
		msg += " (a bookkeeping key, which contracts do not record)"
	}
	if e.QuantSelection {
		// ckpt diff lists it among the config differences: do not send
		// the user back there.
		return msg + ": the contract records it with the FP8 scheme, compared by contract.fp8_not_convert (for the tensors --match/--exclude select), which --allow-config does not accept"
	}
	if len(e.Suggest) > 0 {
		q := make([]string, len(e.Suggest))
		for i, s := range e.Suggest {
			q[i] = "'" + ckpt.EscapeName(s) + "'"
		}
		msg += ": did you mean " + strings.Join(q, " or ") + "?"
	}
	return msg + " (give the full dotted path, as `ckpt diff` lists it)"
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

// The ids of the checks Compare adds.
const (
	ContractKeyAdded      ckpt.FindingID = "contract.key_added"       // keys not in the contract
	ContractKeyRemoved    ckpt.FindingID = "contract.key_removed"     // keys of the contract missing
	ContractDType         ckpt.FindingID = "contract.dtype"           // a common key's dtype changed
	ContractShape         ckpt.FindingID = "contract.shape"           // a common key's shape changed
	ContractHash          ckpt.FindingID = "contract.hash"            // a tensor's xxh3 changed
	ContractConfig        ckpt.FindingID = "contract.config"          // one per config key that differs
	ContractFP8Scheme     ckpt.FindingID = "contract.fp8_scheme"      // the FP8 scheme parameters changed
	ContractFP8NotConvert ckpt.FindingID = "contract.fp8_not_convert" // modules_to_not_convert entries added or removed
)

// Compare holds cur against the contract want. Only tensors selected by
// opt.Match are compared, and only the modules_to_not_convert entries it
// selects (as a module or as its .weight); the config (every key the
// contract records) and the FP8 scheme parameters are always compared.
// The only error is *UnknownConfigPathError.
func Compare(want, cur *Contract, opt CompareOptions) (*Comparison, error) {
	m := opt.Match
	cmp := &Comparison{Source: want.Source}
	cfgChecks, err := compareConfig(cmp, want, cur, opt.AllowConfig)
	if err != nil {
		return nil, err
	}
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
	hashCompared := 0
	cmp.HashesCompared = hashes
	why := ""
	switch {
	case !hasHashes(want):
		why = "the contract has no hashes; write it with contract --read-data"
	case !hasHashes(cur):
		why = "run verify with --read-data"
	}
	groups := map[string]*GroupDiff{}
	for _, g := range ckpt.Groups() {
		groups[g] = &GroupDiff{Group: g, ContentCompared: hashes, ContentNotCompared: why}
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
			shapeChecks = append(shapeChecks, Check{ID: ContractShape, Status: Fail, Tensors: []string{n},
				Message: fmt.Sprintf("%s: shape %s in the contract, %s now", ckpt.EscapeName(n), ckpt.FormatShape(w.Shape), ckpt.FormatShape(c.Shape))})
		}
		if hashes && w.DType == c.DType && slices.Equal(w.Shape, c.Shape) {
			hashCompared++
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
		out = append(out, Check{ID: ContractKeyAdded, Status: Fail, Tensors: added, Message: fmt.Sprintf("%s not in the contract: %s", plural(len(added), "key", "keys"), names(added, 8))})
	} else {
		out = append(out, Check{ID: ContractKeyAdded, Status: Pass, Message: "no key beyond the contract's"})
	}
	if len(removed) > 0 {
		out = append(out, Check{ID: ContractKeyRemoved, Status: Fail, Tensors: removed, Message: fmt.Sprintf("%s of the contract missing: %s", plural(len(removed), "key", "keys"), names(removed, 8))})
	} else {
		out = append(out, Check{ID: ContractKeyRemoved, Status: Pass, Message: fmt.Sprintf("all %d keys of the contract present", len(wantBy))})
	}
	if len(dtypeOrder) == 0 {
		out = append(out, Check{ID: ContractDType, Status: Pass, Message: "every common key keeps its dtype"})
	}
	for _, k := range dtypeOrder {
		ns := dtypeBy[k].names
		out = append(out, Check{ID: ContractDType, Status: Fail, Tensors: ns,
			Message: fmt.Sprintf("%s changed dtype %s: %s", plural(len(ns), "tensor", "tensors"), strings.Replace(k, "->", "→", 1), names(ns, 8))})
	}
	out = appendOr(out, shapeChecks, Check{ID: ContractShape, Status: Pass, Message: "every common key keeps its shape"})
	switch {
	case !hasHashes(want):
		out = append(out, Check{ID: ContractHash, Status: Skip, Message: "not compared: the contract has no hashes (write it with contract --read-data)"})
	case !hasHashes(cur):
		out = append(out, Check{ID: ContractHash, Status: Skip, Message: "not compared: run verify with --read-data to hash the tensors"})
	case len(hashChanged) > 0:
		out = append(out, Check{ID: ContractHash, Status: Fail, Tensors: hashChanged, Message: fmt.Sprintf("%s with the same dtype and shape have different content (xxh3): %s", plural(len(hashChanged), "tensor", "tensors"), names(hashChanged, 8))})
	default:
		// Say how many were compared: under --match/--exclude only the
		// selection is, not every common tensor.
		msg := fmt.Sprintf("the content (xxh3) of %s with the contract's dtype and shape is the contract's", plural(hashCompared, "common tensor", "common tensors"))
		if len(wantBy) != len(want.Tensors) || len(curBy) != len(cur.Tensors) {
			msg = fmt.Sprintf("the content (xxh3) of %s selected by --match/--exclude with the contract's dtype and shape is the contract's", plural(hashCompared, "common tensor", "common tensors"))
		}
		out = append(out, Check{ID: ContractHash, Status: Pass, Message: msg})
	}
	out = append(out, cfgChecks...)
	out = append(out, compareScheme(want.FP8, cur.FP8, m)...)
	cmp.Checks = out
	return cmp, nil
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

// compareConfig compares the config cur has with the one want records
// (ckpt.CompareConfig), fills cmp's config fields and returns the
// contract.config findings: one per difference (fail, or pass when allowed),
// a pass line counting the keys compared when none fails, and for a
// version-1 contract a warning naming the keys it could not compare.
func compareConfig(cmp *Comparison, want, cur *Contract, allow []string) ([]Check, error) {
	curKeys := ckpt.ConfigKeys(cur.Config)
	wantKeys := ckpt.ConfigKeys(want.Config)
	builtKeys := builtConfigKeys(want.Config, cur.Config)
	if err := checkAllowPaths(allow, append([][]string{wantKeys, curKeys}, builtKeys...)...); err != nil {
		return nil, err
	}
	now := cur.Config
	cmp.ConfigNotCompared = []string{}
	if want.ConfigRecorded != nil {
		now = map[string]any{}
		recorded := map[string]bool{}
		for _, p := range want.ConfigRecorded {
			recorded[p] = true
			if v, ok := (&ckpt.Config{Raw: cur.Config}).Get(p); ok {
				setConfigPath(&now, p, v)
			}
		}
		for _, p := range curKeys {
			if !recorded[p] {
				cmp.ConfigNotCompared = append(cmp.ConfigNotCompared, p)
			}
		}
	}
	keys := map[string]bool{}
	changes := ckpt.CompareConfigAsBuilt(want.Config, now)
	if want.ConfigRecorded != nil {
		// only some keys recorded: defaults would stand for the others
		changes = ckpt.CompareConfig(want.Config, now)
		builtKeys = [][]string{wantKeys, ckpt.ConfigKeys(now)}
	}
	for _, ks := range builtKeys {
		for _, p := range ks {
			keys[p] = true
		}
	}
	cmp.ConfigKeys = len(keys)
	cmp.ConfigChanges = []ConfigDifference{}
	var out []Check
	var allowed []string
	failed := false
	for _, ch := range changes {
		d := ConfigDifference{ConfigChange: ch, AllowedBy: allowedBy(ch.Path, allow)}
		cmp.ConfigChanges = append(cmp.ConfigChanges, d)
		msg := "config " + ckpt.EscapeName(ch.Path) + ": "
		switch ch.Change {
		case ckpt.ConfigOnlyInBase:
			msg += configValue(ch.Base) + " in the contract, absent now"
		case ckpt.ConfigOnlyInFT:
			msg += "absent in the contract, " + configValue(ch.FT) + " now"
		default:
			msg += configValue(ch.Base) + " in the contract, " + configValue(ch.FT) + " now"
		}
		switch ch.Kind {
		case ckpt.ConfigIntAsFloat:
			msg += " (an integer given as a float: transformers' strict config refuses it, and Python's range() refuses a float)"
		case ckpt.ConfigFloatAsInt:
			msg += " (a float given as an integer)"
		}
		if d.AllowedBy != "" {
			allowed = append(allowed, ch.Path)
			out = append(out, Check{ID: ContractConfig, Status: Pass, Message: msg + " (allowed by --allow-config " + ckpt.EscapeName(d.AllowedBy) + ")"})
			continue
		}
		failed = true
		out = append(out, Check{ID: ContractConfig, Status: Fail, Message: msg})
	}
	if !failed {
		msg := fmt.Sprintf("config identical (%s compared)", plural(cmp.ConfigKeys, "key", "keys"))
		if len(allowed) > 0 {
			msg = fmt.Sprintf("config identical but for %s allowed by --allow-config (%s compared)", plural(len(allowed), "change", "changes"), plural(cmp.ConfigKeys, "key", "keys"))
		}
		out = append(out, Check{ID: ContractConfig, Status: Pass, Message: msg})
	}
	if want.ConfigRecorded != nil {
		msg := fmt.Sprintf("the contract (contract_version %d) records %s, not the full config", want.Version, plural(len(want.ConfigRecorded), "config key", "config keys"))
		if n := len(cmp.ConfigNotCompared); n > 0 {
			msg += fmt.Sprintf(": %s of the config now not compared: %s", plural(n, "key", "keys"), names(cmp.ConfigNotCompared, 8))
		}
		out = append(out, Check{ID: ContractConfig, Status: Warn, Message: msg + " (write the contract again with this version of ckpt)"})
	}
	return out, nil
}

// allowedBy returns the first allow path that is path or one of its
// parents (an object or an array), "" for none.
func allowedBy(path string, allow []string) string {
	for _, a := range allow {
		if coversPath(a, path) {
			return a
		}
	}
	return ""
}

func coversPath(a, path string) bool {
	return path == a || strings.HasPrefix(path, a+".") || strings.HasPrefix(path, a+"[")
}

// CheckAllowConfig returns *UnknownConfigPathError when an allow path
// names no config key of the contract want nor of cur (ConfigOf the
// checkpoint's config), as Compare does; callers run it before reading
// tensor data, so that a mistyped path fails at once.
func CheckAllowConfig(want *Contract, cur map[string]any, allow []string) error {
	return checkAllowPaths(allow, append([][]string{ckpt.ConfigKeys(want.Config), ckpt.ConfigKeys(cur)}, builtConfigKeys(want.Config, cur)...)...)
}

// builtConfigKeys are the key paths of both configs as transformers builds
// the model from them (ckpt.ConfigAsBuilt), which a version-2 contract
// compares: --allow-config may name them too.
func builtConfigKeys(want, cur map[string]any) [][]string {
	return [][]string{ckpt.ConfigKeys(ckpt.ConfigAsBuilt(want)), ckpt.ConfigKeys(ckpt.ConfigAsBuilt(cur))}
}

func checkAllowPaths(allow []string, keyLists ...[]string) error {
	for _, a := range allow {
		if err := checkAllowPath(a, keyLists...); err != nil {
			return err
		}
	}
	return nil
}

func checkAllowPath(a string, keyLists ...[]string) error {
	var suggest []string
	for _, keys := range keyLists {
		for _, p := range keys {
			// a names a key, an object above keys, or an element of an
			// array (below a key that is a leaf: only "key[i]...", never
			// "key.sub", which names nothing).
			if coversPath(a, p) || strings.HasPrefix(a, p+"[") {
				return nil
			}
			if strings.HasSuffix(p, "."+a) && !slices.Contains(suggest, p) {
				suggest = append(suggest, p)
			}
		}
	}
	last := a[strings.LastIndexByte(a, '.')+1:]
	sort.Strings(suggest)
	parent := strings.TrimSuffix(a, "."+last)
	quant := parent != a && (parent == "quantization_config" || strings.HasSuffix(parent, ".quantization_config")) && slices.Contains(quantSelectionKeys, last)
	return &UnknownConfigPathError{Path: a, Bookkeeping: slices.Contains(ckpt.ConfigBookkeeping, last), QuantSelection: quant, Suggest: suggest}
}

// configValue renders a config value for a message: its JSON, shortened
// past 120 characters (the JSON document has it whole).
func configValue(v any) string {
	s := jsonString(v)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return ckpt.EscapeName(s)
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
		return []Check{{ID: ContractFP8Scheme, Status: Pass, Message: "no FP8 in the contract nor now"}, {ID: ContractFP8NotConvert, Status: Skip, Message: "no FP8"}}
	case want == nil || cur == nil:
		return []Check{{ID: ContractFP8Scheme, Status: Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now", SchemeString(want), SchemeString(cur))}}
	}
	var out []Check
	if SchemeString(want) != SchemeString(cur) {
		out = append(out, Check{ID: ContractFP8Scheme, Status: Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now", SchemeString(want), SchemeString(cur))})
	} else {
		out = append(out, Check{ID: ContractFP8Scheme, Status: Pass, Message: fmt.Sprintf("FP8 scheme identical (%s)", SchemeString(cur))})
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
		out = append(out, Check{ID: ContractFP8NotConvert, Status: Fail, Message: fmt.Sprintf("modules_to_not_convert: %s added: %s", plural(len(add), "entry", "entries"), names(add, 8))})
	}
	if len(rem) > 0 {
		out = append(out, Check{ID: ContractFP8NotConvert, Status: Fail, Message: fmt.Sprintf("modules_to_not_convert: %s removed: %s", plural(len(rem), "entry", "entries"), names(rem, 8))})
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
		out = append(out, Check{ID: ContractFP8NotConvert, Status: Pass, Message: msg})
	}
	return out
}

// Summary renders a group's line: "mtp: 22 keys in the contract, 15 now:
// 8 identical, 7 removed (7 weight_scale_inv), 7 dtype F8_E4M3 → BF16".
func (g *GroupDiff) Summary() string {
	head := fmt.Sprintf("%s: %d keys in the contract, %d now", g.Group, g.ContractKeys, g.Keys)
	// Without hashes only names, dtypes and shapes are compared: say so
	// rather than "identical".
	same, tail := "identical", ""
	if !g.ContentCompared {
		same = "same dtype and shape"
		if g.ContentNotCompared != "" {
			tail = " (content not compared: " + g.ContentNotCompared + ")"
		} else {
			tail = " (content not compared)"
		}
	}
	if g.ContractKeys == g.Keys && g.Identical == g.Keys {
		if !g.ContentCompared {
			return head + ": same names, dtypes and shapes" + tail
		}
		return head + ": identical"
	}
	parts := []string{fmt.Sprintf("%d %s", g.Identical, same)}
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
	return head + ": " + strings.Join(parts, ", ") + tail
}

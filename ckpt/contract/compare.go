package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

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
	Contract string         `json:"contract"`
	Source   string         `json:"contract_source"`
	Groups   []GroupDiff    `json:"groups"`
	Checks   []ckpt.Finding `json:"-"`
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
	// Words are the caller's words for the options the findings mention:
	// "Match" and "Exclude" (Match's globs), "AllowConfig", and "ReadData"
	// (the option of contract.Run that records hashes, and the one of
	// verify that hashes the tensors now).
	Words ckpt.Words
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

// Error is the message of the UnknownConfigPathError in the Go names of
// the options (With(nil)).
func (e *UnknownConfigPathError) Error() string { return e.With(nil) }

// With is the message of the UnknownConfigPathError, w naming the options
// (CompareOptions.Words: "AllowConfig", "Match", "Exclude").
func (e *UnknownConfigPathError) With(w ckpt.Words) string {
	msg := fmt.Sprintf("%s %s names no config key of the contract or of the checkpoint", w.Of("AllowConfig"), ckpt.Quote(e.Path))
	if e.Bookkeeping {
		msg += " (a bookkeeping key, which contracts do not record)"
	}
	if e.QuantSelection {
		// diff lists it among the config differences: do not send the
		// caller back there.
		return msg + ": the contract records it with the FP8 scheme, compared by contract.fp8_not_convert " +
			"(for the tensors " + w.Of("Match") + "/" + w.Of("Exclude") + " select), which " + w.Of("AllowConfig") + " does not accept"
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
	cfgChecks, err := compareConfig(cmp, want, cur, opt.AllowConfig, opt.Words)
	if err != nil {
		return nil, err
	}
	keys := selectKeys(want, cur, m)
	cmp.HashesCompared = hasHashes(want) && hasHashes(cur)
	d := compareTensors(cmp, want, cur, keys, opt.Words)
	out := d.findings(want, cur, keys, opt.Words)
	out = append(out, cfgChecks...)
	out = append(out, compareScheme(want.FP8, cur.FP8, m, opt.Words)...)
	cmp.Checks = out
	return cmp, nil
}

// keySet is the tensors of both sides that a comparison selects: by name,
// and all names (of either side) in natural order.
type keySet struct {
	want, cur map[string]*Entry
	all       []string
}

// selectKeys selects the tensors of want and cur that m matches.
func selectKeys(want, cur *Contract, m *ckpt.Matcher) keySet {
	k := keySet{want: map[string]*Entry{}, cur: map[string]*Entry{}}
	for i := range want.Tensors {
		e := &want.Tensors[i]
		if m.Match(e.Name) {
			k.want[e.Name] = e
			k.all = append(k.all, e.Name)
		}
	}
	for i := range cur.Tensors {
		e := &cur.Tensors[i]
		if m.Match(e.Name) {
			k.cur[e.Name] = e
			if k.want[e.Name] == nil {
				k.all = append(k.all, e.Name)
			}
		}
	}
	sort.Slice(k.all, func(i, j int) bool { return ckpt.NaturalLess(k.all[i], k.all[j]) })
	return k
}

// tensorDiffs are the differences of the selected tensors, for the
// findings.
type tensorDiffs struct {
	added, removed, hashChanged []string
	dtypeBy                     map[string][]string // "F8_E4M3 -> BF16": the tensors
	dtypeOrder                  []string
	shapeChecks                 []ckpt.Finding
	hashCompared                int
}

// compareTensors compares the selected tensors one by one and fills
// cmp.Groups.
func compareTensors(cmp *Comparison, want, cur *Contract, keys keySet, w ckpt.Words) *tensorDiffs {
	hashes := cmp.HashesCompared
	why := ""
	switch {
	case !hasHashes(want):
		why = "the contract has no hashes; write it with contract " + w.Of("ReadData")
	case !hasHashes(cur):
		why = "run verify with " + w.Of("ReadData")
	}
	groups := map[string]*GroupDiff{}
	for _, g := range ckpt.Groups() {
		groups[g] = &GroupDiff{Group: g, ContentCompared: hashes, ContentNotCompared: why}
	}
	d := &tensorDiffs{dtypeBy: map[string][]string{}}
	for _, n := range keys.all {
		gn, _, _ := ckpt.GroupOf(n)
		d.compareTensor(groups[gn], n, keys.want[n], keys.cur[n], hashes)
	}
	for _, g := range ckpt.Groups() {
		if gd := groups[g]; gd.ContractKeys+gd.Keys > 0 {
			cmp.Groups = append(cmp.Groups, *gd)
		}
	}
	return d
}

// compareTensor compares the tensor n of the contract (w) and now (c),
// either of which may be nil, counting it in its group g.
func (d *tensorDiffs) compareTensor(g *GroupDiff, n string, w, c *Entry, hashes bool) {
	if w != nil {
		g.ContractKeys++
	}
	if c != nil {
		g.Keys++
	}
	switch {
	case w == nil:
		g.Added++
		d.added = append(d.added, n)
		if strings.HasSuffix(n, ckpt.ScaleSuffix) {
			g.AddedScales++
		}
		return
	case c == nil:
		g.Removed++
		d.removed = append(d.removed, n)
		if strings.HasSuffix(n, ckpt.ScaleSuffix) {
			g.RemovedScales++
		}
		return
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
		if d.dtypeBy[key] == nil {
			d.dtypeOrder = append(d.dtypeOrder, key)
		}
		d.dtypeBy[key] = append(d.dtypeBy[key], n)
	}
	if !slices.Equal(w.Shape, c.Shape) {
		same = false
		g.ShapeChanged++
		d.shapeChecks = append(d.shapeChecks, ckpt.Finding{ID: ContractShape, Status: ckpt.Fail, Tensors: []string{n},
			Message: fmt.Sprintf("%s: shape %s in the contract, %s now", ckpt.EscapeName(n), ckpt.FormatShape(w.Shape), ckpt.FormatShape(c.Shape))})
	}
	if hashes && w.DType == c.DType && slices.Equal(w.Shape, c.Shape) {
		d.hashCompared++
	}
	if hashes && w.DType == c.DType && slices.Equal(w.Shape, c.Shape) && w.XXH3 != c.XXH3 {
		same = false
		g.HashChanged++
		d.hashChanged = append(d.hashChanged, n)
	}
	if same {
		g.Identical++
	}
}

// findings are the tensor findings of the comparison: keys added and
// removed, dtypes, shapes, content.
func (d *tensorDiffs) findings(want, cur *Contract, keys keySet, w ckpt.Words) []ckpt.Finding {
	var out []ckpt.Finding
	if added := d.added; len(added) > 0 {
		out = append(out, ckpt.Finding{ID: ContractKeyAdded, Status: ckpt.Fail, Tensors: added,
			Message: fmt.Sprintf("%s not in the contract: %s", ckpt.Plural(len(added), "key", "keys"), ckpt.NameList(added, 8))})
	} else {
		out = append(out, ckpt.Finding{ID: ContractKeyAdded, Status: ckpt.Pass, Message: "no key beyond the contract's"})
	}
	if removed := d.removed; len(removed) > 0 {
		out = append(out, ckpt.Finding{ID: ContractKeyRemoved, Status: ckpt.Fail, Tensors: removed,
			Message: fmt.Sprintf("%s of the contract missing: %s", ckpt.Plural(len(removed), "key", "keys"), ckpt.NameList(removed, 8))})
	} else {
		out = append(out, ckpt.Finding{ID: ContractKeyRemoved, Status: ckpt.Pass, Message: fmt.Sprintf("all %d keys of the contract present", len(keys.want))})
	}
	if len(d.dtypeOrder) == 0 {
		out = append(out, ckpt.Finding{ID: ContractDType, Status: ckpt.Pass, Message: "every common key keeps its dtype"})
	}
	for _, k := range d.dtypeOrder {
		ns := d.dtypeBy[k]
		out = append(out, ckpt.Finding{ID: ContractDType, Status: ckpt.Fail, Tensors: ns,
			Message: fmt.Sprintf("%s changed dtype %s: %s", ckpt.Plural(len(ns), "tensor", "tensors"), strings.Replace(k, "->", "→", 1), ckpt.NameList(ns, 8))})
	}
	out = ckpt.AppendOr(out, d.shapeChecks, ckpt.Finding{ID: ContractShape, Status: ckpt.Pass, Message: "every common key keeps its shape"})
	return append(out, d.hashFinding(want, cur, keys, w))
}

// hashFinding is the contract.hash finding.
func (d *tensorDiffs) hashFinding(want, cur *Contract, keys keySet, w ckpt.Words) ckpt.Finding {
	switch {
	case !hasHashes(want):
		return ckpt.Finding{ID: ContractHash, Status: ckpt.Skip,
			Message: "not compared: the contract has no hashes (write it with contract " + w.Of("ReadData") + ")"}
	case !hasHashes(cur):
		return ckpt.Finding{ID: ContractHash, Status: ckpt.Skip, Message: "not compared: run verify with " + w.Of("ReadData") + " to hash the tensors"}
	case len(d.hashChanged) > 0:
		return ckpt.Finding{ID: ContractHash, Status: ckpt.Fail, Tensors: d.hashChanged,
			Message: fmt.Sprintf("%s with the same dtype and shape have different content (xxh3): %s",
				ckpt.Plural(len(d.hashChanged), "tensor", "tensors"), ckpt.NameList(d.hashChanged, 8))}
	}
	// Say how many were compared: under a selection only the
	// selection is, not every common tensor.
	n := ckpt.Plural(d.hashCompared, "common tensor", "common tensors")
	msg := fmt.Sprintf("the content (xxh3) of %s with the contract's dtype and shape is the contract's", n)
	if len(keys.want) != len(want.Tensors) || len(keys.cur) != len(cur.Tensors) {
		msg = fmt.Sprintf("the content (xxh3) of %s selected by %s with the contract's dtype and shape is the contract's", n, globWords(w))
	}
	return ckpt.Finding{ID: ContractHash, Status: ckpt.Pass, Message: msg}
}

// globWords names the selection's options, Match and Exclude, as the
// caller does.
func globWords(w ckpt.Words) string { return w.Of("Match") + "/" + w.Of("Exclude") }

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
func compareConfig(cmp *Comparison, want, cur *Contract, allow []string, w ckpt.Words) ([]ckpt.Finding, error) {
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
	var out []ckpt.Finding
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
			msg += " (allowed by " + w.Of("AllowConfig") + " " + ckpt.EscapeName(d.AllowedBy) + ")"
			out = append(out, ckpt.Finding{ID: ContractConfig, Status: ckpt.Pass, Message: msg})
			continue
		}
		failed = true
		out = append(out, ckpt.Finding{ID: ContractConfig, Status: ckpt.Fail, Message: msg})
	}
	if !failed {
		msg := fmt.Sprintf("config identical (%s compared)", ckpt.Plural(cmp.ConfigKeys, "key", "keys"))
		if len(allowed) > 0 {
			msg = fmt.Sprintf("config identical but for %s allowed by %s (%s compared)",
				ckpt.Plural(len(allowed), "change", "changes"), w.Of("AllowConfig"), ckpt.Plural(cmp.ConfigKeys, "key", "keys"))
		}
		out = append(out, ckpt.Finding{ID: ContractConfig, Status: ckpt.Pass, Message: msg})
	}
	if want.ConfigRecorded != nil {
		msg := fmt.Sprintf("the contract (contract_version %d) records %s, not the full config",
			want.Version, ckpt.Plural(len(want.ConfigRecorded), "config key", "config keys"))
		if n := len(cmp.ConfigNotCompared); n > 0 {
			msg += fmt.Sprintf(": %s of the config now not compared: %s", ckpt.Plural(n, "key", "keys"), ckpt.NameList(cmp.ConfigNotCompared, 8))
		}
		out = append(out, ckpt.Finding{ID: ContractConfig, Status: ckpt.Warn, Message: msg + " (write the contract again with this version of ckpt)"})
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
// compares: AllowConfig may name them too.
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

func compareScheme(want, cur *Scheme, m *ckpt.Matcher, w ckpt.Words) []ckpt.Finding {
	switch {
	case want == nil && cur == nil:
		return []ckpt.Finding{{ID: ContractFP8Scheme, Status: ckpt.Pass, Message: "no FP8 in the contract nor now"},
			{ID: ContractFP8NotConvert, Status: ckpt.Skip, Message: "no FP8"}}
	case want == nil || cur == nil:
		return []ckpt.Finding{{ID: ContractFP8Scheme, Status: ckpt.Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now", want.String(), cur.String())}}
	}
	var out []ckpt.Finding
	if want.String() != cur.String() {
		out = append(out, ckpt.Finding{ID: ContractFP8Scheme, Status: ckpt.Fail, Message: fmt.Sprintf("FP8 scheme: %s in the contract, %s now",
			want.String(), cur.String())})
	} else {
		out = append(out, ckpt.Finding{ID: ContractFP8Scheme, Status: ckpt.Pass, Message: fmt.Sprintf("FP8 scheme identical (%s)", cur.String())})
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
		out = append(out, ckpt.Finding{ID: ContractFP8NotConvert, Status: ckpt.Fail, Message: fmt.Sprintf("modules_to_not_convert: %s added: %s",
			ckpt.Plural(len(add), "entry", "entries"), ckpt.NameList(add, 8))})
	}
	if len(rem) > 0 {
		out = append(out, ckpt.Finding{ID: ContractFP8NotConvert, Status: ckpt.Fail, Message: fmt.Sprintf("modules_to_not_convert: %s removed: %s",
			ckpt.Plural(len(rem), "entry", "entries"), ckpt.NameList(rem, 8))})
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
			msg = fmt.Sprintf("modules_to_not_convert identical (%d of %d entries selected by %s)", n, len(cur.ModulesToNotConvert), globWords(w))
		}
		out = append(out, ckpt.Finding{ID: ContractFP8NotConvert, Status: ckpt.Pass, Message: msg})
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

// KeySetOutside summarises the groups other than except (e.g. "mtp"): the
// key set is identical when no key was added or removed there; tensors
// whose dtype, shape or content changed are counted apart, so that a
// fine-tune that only changed values does not read as a changed key set.
func (cmp *Comparison) KeySetOutside(except string) string {
	label := except + ".**"
	if except == ckpt.GroupMTP {
		label = "mtp.**"
	}
	var keys, added, removed, changed int
	for _, g := range cmp.Groups {
		if g.Group == except {
			continue
		}
		keys += g.ContractKeys
		added += g.Added
		removed += g.Removed
		changed += g.DTypeChanged + g.ShapeChanged + g.HashChanged
	}
	if added+removed > 0 {
		return fmt.Sprintf("key set outside %s: differs: %d added, %d removed (see the groups above)", label, added, removed)
	}
	s := fmt.Sprintf("key set outside %s: identical, %d keys", label, keys)
	if changed > 0 {
		s += fmt.Sprintf(" (%d of them changed dtype, shape or content)", changed)
	}
	return s
}

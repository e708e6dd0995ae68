package mapping

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// PlanNames makes the plan a profile would have for a cache from the
// cache's file names alone, without the source checkpoint: the files the
// profile's rules (with the variables in set) name for the decoder layers,
// layer types and config-dependent parts that the names show. files are
// the cache folder's .tensorbin paths, relative to it; device and tag name
// the folder (its path), mesh is the mesh it names.
//
// What a source would tell is inferred from the names: the decoder layers
// are 0 to the highest layer index a file names, each layer's type is the
// one whose rules (LayerType) name most of its files, and a rule that
// depends on the config (a When condition on a config key, such as the MTP
// head's mtp_num_hidden_layers gt 0) applies when some file is named by a
// rule with that condition. Each required rule then names its files for
// every such binding; a rule that is not required, or whose target needs a
// config value the names cannot give, names only the files present.
//
// The entries have no sources and no shapes: Rule, Target, File, DType,
// Layout, Memory.Kind, Placement, Devices and one (empty) Shards element
// per stored shard. NotCompared says what the plan could not decide.
func PlanNames(p *Profile, mesh Mesh, set Settings, device string, files []string) (*Plan, []string, error) {
	if p == nil {
		return nil, nil, fmt.Errorf("no profile")
	}
	if err := p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	if mesh.Rows != 1 || mesh.Cols < 1 {
		return nil, nil, fmt.Errorf("mesh %s: only 1xN meshes are supported", mesh)
	}
	settings, err := p.Resolve(mesh, set)
	if err != nil {
		return nil, nil, err
	}
	plan := &Plan{Profile: p, Mesh: mesh, Settings: settings, Device: device, CacheDir: p.FolderFor(device, mesh, settings)}
	// The vision part's rules of block L name the tower's blocks, not
	// decoder layers; the notes say so.
	layers, layerWord := "decoder layers", "layer"
	if p.Scope == visionPrefix {
		layers, layerWord = "vision blocks", "block"
		plan.Part = PartVision
	}
	n := mesh.devices()
	vars := exprVars{"N": int64(n), NumDevices: int64(n)}
	b := &builder{plan: plan}
	rules, err := nameRules(b, p)
	if err != nil {
		return nil, nil, err
	}
	// What the names show: the layers, their types, the config conditions
	// some file stands for.
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = CacheName(f)
	}
	seen := seeNames(rules, names, vars)
	unobserved, unknownTargets, err := expectEntries(plan, rules, names, seen, vars)
	if err != nil {
		return nil, nil, err
	}
	return plan, nameNotes(p, rules, seen, layers, layerWord, unobserved, unknownTargets), nil
}

// nameRules compiles the target of each rule of p whose config
// conditions hold or need a config value (keys: those PlanNames looks for
// in the names).
func nameRules(b *builder, p *Profile) ([]*nameRule, error) {
	rules := make([]*nameRule, 0, len(p.Rules))
	for i := range p.Rules {
		r := &p.Rules[i]
		ok := true
		var keys []string
		for _, c := range r.When {
			if c.Var == "" {
				keys = append(keys, c.String())
				continue
			}
			holds, err := b.condition(c)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", r.ID, err)
			}
			ok = ok && holds
		}
		if !ok {
			continue
		}
		caps := map[string]bool{}
		if t, err := parseTemplate(r.Sources[0]); err == nil {
			for _, c := range t.captureNames() {
				caps[c] = true
			}
		}
		nr, err := compileTarget(r, caps, nil)
		if err != nil {
			return nil, err
		}
		nr.keys = keys
		rules = append(rules, nr)
	}
	return rules, nil
}

// namesSeen is what the names of a cache's files show (seeNames).
type namesSeen struct {
	maxLayer int
	// observed: the conditions some name stands for; certain: those some
	// name shows for sure.
	observed, certain map[string]bool
	// moeLayer: the MoE layers; moeFixed: a fixed layer's rules (the MTP
	// layer) are MoE.
	moeLayer map[int]bool
	moeFixed bool
	// layerTypes is the type of each layer the names show ("" for none),
	// untyped the layers without one.
	layerTypes, untyped []string
}

// seeNames reads the names: the layers, their types and the config
// conditions some name stands for; it sets the first full-attention
// layer in vars.
func seeNames(rules []*nameRule, names []string, vars exprVars) *namesSeen {
	maxLayer := -1
	votes := map[int]map[string]int{}
	observed := map[string]bool{}
	// certain: the conditions some name shows for sure (every rule that
	// names it has them). A rule with a condition only observed, not
	// certain, names only the files present: it cannot make others
	// expected.
	certain := map[string]bool{}
	// A layer (or a fixed layer's rules: the MTP layer) is MoE when some
	// file of a MoE rule names it (Rule.MLP).
	moeLayer := map[int]bool{}
	moeFixed := false
	for _, name := range names {
		// A name stands for the config conditions of every rule that
		// names it; those that not all of them share (one name of two
		// rules with opposite conditions: tie_word_embeddings true and
		// false, the vision part's fractured and replicated patch
		// embedding) only show that one of them may hold.
		var shown []string
		first := true
		for _, nr := range rules {
			bind, ok := nr.match(name)
			if !ok {
				continue
			}
			for _, k := range nr.keys {
				observed[k] = true
			}
			if first {
				shown, first = slices.Clone(nr.keys), false
			} else {
				shown = slices.DeleteFunc(shown, func(k string) bool { return !slices.Contains(nr.keys, k) })
			}
			if nr.rule.MLP == MLPMoE && nr.rule.MLPLayer != "" {
				moeFixed = true
			}
			l, err := strconv.Atoi(bind["L"])
			if err != nil || l < 0 || l >= maxNamedLayers {
				continue // not a layer index (its files are extra)
			}
			maxLayer = max(maxLayer, l)
			if nr.rule.MLP == MLPMoE {
				moeLayer[l] = true
			}
			if t := nr.rule.LayerType; t != "" && t != AnyLayer {
				if votes[l] == nil {
					votes[l] = map[string]int{}
				}
				votes[l][t]++
			}
		}
		for _, k := range shown {
			certain[k] = true
		}
	}
	layerTypes := make([]string, maxLayer+1)
	var untyped []string
	for l := range layerTypes {
		best := 0
		for t, v := range votes[l] {
			if v > best || v == best && t < layerTypes[l] {
				layerTypes[l], best = t, v
			}
		}
		if layerTypes[l] == "" {
			untyped = append(untyped, strconv.Itoa(l))
		}
	}
	for l, t := range layerTypes {
		if t == "full_attention" {
			vars[FirstFullAttentionLayer] = int64(l)
			break
		}
	}
	return &namesSeen{maxLayer: maxLayer, observed: observed, certain: certain, moeLayer: moeLayer, moeFixed: moeFixed,
		layerTypes: layerTypes, untyped: untyped}
}

// expectEntries adds to plan the entry of every file the rules expect
// given what the names show, sorted by target; it returns the conditions
// no name shows and the targets whose config values the names cannot
// give.
func expectEntries(plan *Plan, rules []*nameRule, names []string, seen *namesSeen, vars exprVars) (map[string]bool, []string, error) {
	n := plan.Mesh.devices()
	observed, certain, moeLayer, moeFixed, layerTypes := seen.observed, seen.certain, seen.moeLayer, seen.moeFixed, seen.layerTypes
	unobserved := map[string]bool{}
	// sureOf: the file's entry is of a rule whose conditions are all
	// certain; such a rule's entry replaces one of a rule that is not.
	at, sureOf := map[string]int{}, map[string]bool{}
	add := func(r *Rule, target string, sure bool) {
		file := path.Join(plan.CacheDir, FileName(target, r.DType, r.Layout))
		i, ok := at[file]
		if ok && (sureOf[file] || !sure) {
			return
		}
		shards := 1
		if r.Placement.Kind == "shard" {
			shards = n
		}
		e := &Entry{Rule: r.ID, Target: target, File: file, Steps: r.Transform, Placement: r.Placement,
			Devices: n, DType: r.DType, Layout: r.Layout, Memory: MemoryConfig{Kind: r.Memory}, Shards: make([][]Piece, shards)}
		sureOf[file] = sure
		if ok {
			plan.Entries[i] = e
			return
		}
		at[file] = len(plan.Entries)
		plan.Entries = append(plan.Entries, e)
	}
	var unknownTargets []string
	for _, nr := range rules {
		r := nr.rule
		applies := true
		for _, k := range nr.keys {
			if !observed[k] {
				applies = false
				unobserved[k] = true
			}
		}
		if r.MLP != "" && r.MLPLayer != "" && (r.MLP == MLPMoE) != moeFixed {
			applies = false
		}
		if !applies {
			continue
		}
		full, err := compileTarget(r, nr.caps, vars)
		if err != nil {
			return nil, nil, err
		}
		if full.unknown {
			// A config value the names cannot give: the files present.
			unknownTargets = append(unknownTargets, r.Target)
			for _, name := range names {
				if _, ok := nr.match(name); ok {
					add(r, name, false)
				}
			}
			continue
		}
		// The files present that the rule names, by binding.
		var present []binding
		for _, name := range names {
			if bind, ok := full.match(name); ok {
				present = append(present, bind)
			}
		}
		sure := true
		for _, k := range nr.keys {
			sure = sure && certain[k]
		}
		var binds []binding
		switch {
		case !sure:
			binds = present
		case r.Required && len(nr.caps) == 0:
			binds = []binding{{}}
		case r.Required && len(nr.caps) == 1 && nr.caps["L"] && r.LayerType != "":
			for l, t := range layerTypes {
				if r.MLP != "" && (r.MLP == MLPMoE) != moeLayer[l] {
					continue
				}
				if r.LayerType == AnyLayer || t == r.LayerType {
					binds = append(binds, binding{"L": strconv.Itoa(l)})
				}
			}
		default:
			binds = present
		}
		for _, bind := range binds {
			add(r, full.expand(bind), sure)
		}
	}
	sort.SliceStable(plan.Entries, func(i, j int) bool { return ckpt.NaturalLess(plan.Entries[i].Target, plan.Entries[j].Target) })
	return unobserved, unknownTargets, nil
}

// nameNotes are the notes of a plan of names: what the names cannot show.
func nameNotes(p *Profile, rules []*nameRule, seen *namesSeen, layers, layerWord string,
	unobserved map[string]bool, unknownTargets []string) []string {
	maxLayer, layerTypes, untyped := seen.maxLayer, seen.layerTypes, seen.untyped
	notes := []string{"shapes not compared: no source (each file's own shape stands for the planned one; dtype, layout, memory config, " +
		"placement and shard sizes are checked against it)"}
	// The number of decoder layers is the config's: the names show the
	// highest layer present, and a cache that lacks its last layers reads
	// like the cache of a shorter model.
	switch {
	case maxLayer >= 0:
		last := ""
		if t := layerTypes[maxLayer]; t != "" {
			last = fmt.Sprintf(", the last a %s layer", t)
		}
		notes = append(notes, fmt.Sprintf("%s not known without the source: the names show %ss 0 to %d%s; "+
			"a cache that lacks its last %ss reads the same", layers, layerWord, maxLayer, last, layerWord))
	default:
		notes = append(notes, fmt.Sprintf("%s not known without the source: no file names a %s", layers, strings.TrimSuffix(layers, "s")))
	}
	typed := false
	for _, nr := range rules {
		typed = typed || nr.rule.LayerType != "" && nr.rule.LayerType != AnyLayer
	}
	if len(untyped) > 0 && typed {
		notes = append(notes, fmt.Sprintf("layer(s) %s: no file names the layer type, so no file of a layer-type rule was expected there",
			strings.Join(untyped, ", ")))
	}
	if len(unobserved) > 0 {
		var ks []string
		for k := range unobserved {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		// Name what those rules cache (their first targets), condition by
		// condition, so that a missing part (the MTP head) is seen as
		// possibly missing.
		conds := make([]string, 0, len(ks))
		for _, k := range ks {
			var targets []string
			for _, nr := range rules {
				if len(targets) < 3 && slices.Contains(nr.keys, k) && !slices.Contains(targets, nr.rule.Target) {
					targets = append(targets, nr.rule.Target)
				}
			}
			conds = append(conds, fmt.Sprintf("%s (e.g. %s)", k, strings.Join(targets, ", ")))
		}
		notes = append(notes, fmt.Sprintf("config not known without the source: the cache has no file of the rules of profile %s "+
			"that apply when %s, so none was expected; a cache that lacks them reads the same", p.Name, strings.Join(conds, "; when ")))
	}
	if len(unknownTargets) > 0 {
		sort.Strings(unknownTargets)
		notes = append(notes, fmt.Sprintf("targets that need config values the names cannot give (%s): only the files present compared",
			strings.Join(unknownTargets, ", ")))
	}
	return notes
}

// maxNamedLayers bounds the decoder layers PlanNames infers from names:
// a file naming a layer index at or above it counts as no layer's (it is
// then extra), so that a stray name cannot make millions of files
// expected.
const maxNamedLayers = 4096

// nameRule is a rule whose target is compiled to match cache names.
type nameRule struct {
	rule *Rule
	caps map[string]bool
	keys []string // the rule's conditions on config keys
	re   *regexp.Regexp
	// groups names the capture of each regexp group ("" for a config
	// expression the names must show).
	groups []string
	// literal target pieces and placeholders, for expand.
	pieces []string
	// unknown: an expression the vars cannot evaluate.
	unknown bool
}

// compileTarget compiles r's target: a capture of the sources matches
// one dotted segment, an expression the value vars give it (any integer
// when vars is nil or lacks a variable of it).
func compileTarget(r *Rule, caps map[string]bool, vars exprVars) (*nameRule, error) {
	nr := &nameRule{rule: r, caps: caps}
	var sb strings.Builder
	sb.WriteString("^")
	rest := r.Target
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			sb.WriteString(regexp.QuoteMeta(rest))
			nr.pieces = append(nr.pieces, rest)
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("rule %q: target %q: unclosed {", r.ID, r.Target)
		}
		sb.WriteString(regexp.QuoteMeta(rest[:i]))
		nr.pieces = append(nr.pieces, rest[:i])
		name := rest[i+1 : i+j]
		switch {
		case caps[name]:
			sb.WriteString(`([^./]+)`)
			nr.groups = append(nr.groups, name)
			nr.pieces = append(nr.pieces, "{"+name+"}")
		default:
			v, err := evalExpr(name, vars)
			if vars != nil && err == nil {
				s := strconv.FormatInt(v, 10)
				sb.WriteString(regexp.QuoteMeta(s))
				nr.pieces = append(nr.pieces, s)
			} else {
				if vars != nil {
					nr.unknown = true
				}
				sb.WriteString(`(-?[0-9]+)`)
				nr.groups = append(nr.groups, "")
				nr.pieces = append(nr.pieces, "")
			}
		}
		rest = rest[i+j+1:]
	}
	sb.WriteString("$")
	re, err := regexp.Compile(sb.String())
	if err != nil {
		return nil, fmt.Errorf("rule %q: target %q: %w", r.ID, r.Target, err)
	}
	nr.re = re
	return nr, nil
}

// match reports whether a cache name is the rule's target, with its
// captures (one capture used twice must name the same segment).
func (nr *nameRule) match(name string) (binding, bool) {
	m := nr.re.FindStringSubmatch(name)
	if m == nil {
		return nil, false
	}
	b := binding{}
	for i, g := range nr.groups {
		if g == "" {
			continue
		}
		if prev, ok := b[g]; ok && prev != m[i+1] {
			return nil, false
		}
		b[g] = m[i+1]
	}
	return b, true
}

// expand is the target for a binding of the captures.
func (nr *nameRule) expand(b binding) string {
	var sb strings.Builder
	for _, p := range nr.pieces {
		sb.WriteString(b.expand(p))
	}
	return sb.String()
}

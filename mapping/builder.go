package mapping

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
)

// buildOne plans one profile (not its vision part); w names the options
// its problems mention (PlanOptions.Words).
func buildOne(c *ckpt.Checkpoint, p *Profile, mesh Mesh, set Settings, w ckpt.Words) (*Plan, error) {
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
	if err := servesModelType(p, c.Config, w); err != "" {
		plan := &Plan{Profile: p, Mesh: mesh, Source: c.Source, Settings: settings, Device: "NONE"}
		plan.Problems = []ckpt.Finding{{ID: ProblemArchitecture, Status: ckpt.Fail, Tensors: []string{}, Message: err}}
		return plan, &PlanError{Problems: plan.Problems}
	}
	device, devErr := p.deviceFor(mesh, w)
	if devErr != nil {
		device = "NONE" // the plan is not executable: see the device problem
	}
	b := &builder{c: c, p: p, mesh: mesh, n: int64(mesh.devices()), words: w}
	b.plan = &Plan{Profile: p, Mesh: mesh, Source: c.Source, Settings: settings, Device: device, CacheDir: p.FolderFor(device, mesh, settings)}
	if devErr != nil {
		b.problem(ProblemDevice, "", "", devErr.Error())
	}
	for _, msg := range deviceProblems(p, device, mesh, w) {
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
	vars       exprVars
	layerTypes []string
	// words name the options the problems mention (PlanOptions.Words).
	words ckpt.Words
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
	b.vars = exprVars{}
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
		b.layerTypes = make([]string, max(0, min(depth, maxNamedLayers)))
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
		v, err := evalExpr(rest[i+1:i+j], b.vars)
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
			l, err := evalExpr(r.MLPLayer, b.vars)
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
		n, err := evalExpr(c.Expr, b.vars)
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

// runState is what the steps of run share.
type runState struct {
	// groups are the source groups of the targets, by rule index and
	// binding key, in the order of their first source (order).
	groups map[string]*group
	order  []string
	// ignoredBy is the ignore rule of each ignored source tensor.
	ignoredBy map[string]int
	// attempted: in a group whose target failed, or a duplicate: its
	// problem names them.
	attempted map[string]bool
	// mapped: the sources (and scales) of the plan's entries.
	mapped map[string]bool
	// orphans: weight_scale_inv of mapped weights that are not FP8.
	orphans []string
	// produced holds, per rule, the layers ("" for none) it made a target
	// of or reported a problem for (checkRequired).
	produced []map[string]bool
}

// run makes the plan: it groups the source tensors by the rules that
// match them (groupSources), makes an entry of each complete group
// (makeEntries), checks the required rules and duplicates, and lists the
// tensors left over (leftOver) and the plan's problems and warnings
// (finish).
func (b *builder) run() {
	st := &runState{groups: map[string]*group{}, ignoredBy: map[string]int{}, attempted: map[string]bool{},
		mapped: map[string]bool{}, produced: make([]map[string]bool, len(b.p.Rules))}
	b.groupSources(st)
	b.makeEntries(st)
	b.checkRequired(st.produced)
	b.checkDuplicates()
	sort.SliceStable(b.plan.Entries, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Entries[i].Target, b.plan.Entries[j].Target) })
	b.leftOver(st)
	b.finish(st)
}

// groupSources puts each source tensor in scope into the groups of the
// rules that match it (by alias when no rule or ignore matches its name),
// and records the ignore rule of the ignored ones.
func (b *builder) groupSources(st *runState) {
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
			g := st.groups[k]
			if g == nil {
				g = &group{rule: m.rule, bind: bind, srcs: make([]*ckpt.Tensor, len(r.Sources))}
				if r.Stack != nil {
					g.srcs, g.stacked = nil, map[string][]*ckpt.Tensor{}
				}
				st.groups[k] = g
				st.order = append(st.order, k)
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
				b.problem(ProblemDuplicate, r.ID, "", fmt.Sprintf("source tensors %s and %s are both read as %s (rule %s): the serving stack strips their prefixes "+
					"alike, and which one it keeps depends on their order",
					prev.Name, t.Name, name, r.ID), prev.Name, t.Name)
				st.attempted[t.Name] = true
				for _, sc := range b.c.ScaleCompanions(t) {
					st.attempted[sc.Name] = true
				}
				continue
			}
			(*srcs)[m.src] = t
		}
		if ig >= 0 {
			st.ignoredBy[t.Name] = ig
		}
	}
}

// makeEntries makes the entry of each group, in order, or the problem of
// a group that is incomplete or whose target cannot be made.
func (b *builder) makeEntries(st *runState) {
	for _, k := range st.order {
		g := st.groups[k]
		r := &b.p.Rules[g.rule]
		if st.produced[g.rule] == nil {
			st.produced[g.rule] = map[string]bool{}
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
							st.attempted[t.Name] = true
						}
					}
				}
				sort.Strings(names)
				st.produced[g.rule][g.bind["L"]] = true
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
				st.attempted[s.Name] = true
				for _, sc := range b.c.ScaleCompanions(s) {
					st.attempted[sc.Name] = true
				}
			}
		}
		if terr != nil {
			st.produced[g.rule][g.bind["L"]] = true
			b.problem(ProblemConfig, r.ID, target, fmt.Sprintf("rule %s: %v", r.ID, terr), b.sourceNames(g.srcs)...)
			continue
		}
		if len(missing) > 0 {
			st.produced[g.rule][g.bind["L"]] = true // reported here, not again as missing
			b.problem(ProblemIncomplete, r.ID, target, fmt.Sprintf("target %s (rule %s) lacks %s",
				target, r.ID, strings.Join(missing, ", ")), append(missing, b.sourceNames(g.srcs)...)...)
			continue
		}
		e := b.entry(r, g.bind, g.srcs, stackN)
		st.produced[g.rule][g.bind["L"]] = true
		if e == nil {
			continue
		}
		for _, s := range e.Sources {
			st.mapped[s.Name] = true
			if s.Scale != nil {
				st.mapped[s.Scale.Name] = true
			}
		}
		b.plan.Entries = append(b.plan.Entries, e)
	}
}

// leftOver lists each tensor in scope that no entry maps: ignored (by an
// ignore rule, or a scale beside a mapped weight that is not FP8: an
// orphan), else unmapped unless a problem names it already.
func (b *builder) leftOver(st *runState) {
	for _, t := range b.c.Tensors {
		if st.mapped[t.Name] || !b.p.inScope(t.Name) {
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
		if i, ok := st.ignoredBy[name]; ok {
			reason := b.p.Ignore[i].Reason
			if name != t.Name {
				reason = "block scale of an ignored weight: " + reason
			}
			b.plan.Ignored = append(b.plan.Ignored, Ignored{Name: t.Name, Reason: reason, Glob: b.p.Ignore[i].Glob})
			continue
		}
		if isScale && st.mapped[w] {
			// The weight is mapped without this scale: it is not an FP8
			// weight (transformers writes the weight_scale_inv of a Linear
			// it could not quantise beside the weight left as it was).
			wt, _ := b.c.Lookup(w)
			b.plan.Ignored = append(b.plan.Ignored, Ignored{Name: t.Name, Reason: fmt.Sprintf("weight_scale_inv of a weight that is %s, not F8_E4M3: not applied, "+
				"the weight is mapped as it is (%s)", wt.DType, orphanScaleReason)})
			st.orphans = append(st.orphans, t.Name)
			continue
		}
		if !st.attempted[t.Name] {
			b.plan.Unmapped = append(b.plan.Unmapped, t.Name)
		}
	}
}

// finish sorts the ignored and unmapped tensors and adds the plan's
// problems and warnings: unmapped tensors, orphan scales, the accounting
// check, mapped tensors an ignore rule matches, the declared-dtype rule.
func (b *builder) finish(st *runState) {
	sort.SliceStable(b.plan.Ignored, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Ignored[i].Name, b.plan.Ignored[j].Name) })
	sort.SliceStable(b.plan.Unmapped, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Unmapped[i], b.plan.Unmapped[j]) })
	if len(b.plan.Unmapped) > 0 {
		b.problem(ProblemUnmapped, "", "", fmt.Sprintf("%d source tensor(s) are neither mapped nor ignored: %s", len(b.plan.Unmapped),
			abbreviate(b.plan.Unmapped, 5)), b.plan.Unmapped...)
	}
	if len(st.orphans) > 0 {
		b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf("%d weight_scale_inv beside weights that are not F8_E4M3 are left out, their weights mapped "+
			"unscaled (verify fails them as fp8.scale_orphan): %s",
			len(st.orphans), abbreviate(st.orphans, 3)))
	}
	b.checkAccounted()
	globMapped := map[int][]string{}
	for name, i := range st.ignoredBy {
		if st.mapped[name] {
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
		b.plan.Warnings = append(b.plan.Warnings, fmt.Sprintf("%s matches %d mapped tensor(s), which stay mapped: %s "+
			"(an ignore leaves out only tensors no rule maps)",
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
const orphanScaleReason = "the serving stack's weight_mapping.load_qwen36_state_dict_fp8 skips every weight_scale_inv and " +
	"dequantises only float8_e4m3fn weights"

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

// stack orders a stacking group's sources by index of the stacked
// capture: source j of index x is srcs[x*len(Sources)+j], for x in [0,
// Count). It returns the names of the tensors missing within that range;
// an index that is not a number in it is an error.
func (b *builder) stack(r *Rule, g *group) (srcs []*ckpt.Tensor, missing []string, n int64, err error) {
	n, err = evalExpr(r.Stack.Count, b.vars)
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

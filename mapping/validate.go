package mapping

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Validate checks a profile's structure: names, templates, expressions,
// step order, dtypes, layouts, placements and memory tags. It does not
// need a checkpoint.
func (p *Profile) Validate() error {
	if p.Name == "" {
		return fmt.Errorf("profile has no name")
	}
	if len(p.Rules) == 0 {
		return fmt.Errorf("profile has no rules")
	}
	vars := map[string]bool{}
	for i, v := range p.Variables {
		if !isIdent(v.Name) {
			return fmt.Errorf("variable %d: name %q is not an identifier", i, v.Name)
		}
		if vars[v.Name] {
			return fmt.Errorf("variable %q is declared twice", v.Name)
		}
		vars[v.Name] = true
	}
	ids := map[string]bool{}
	targets := map[string]string{}
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.ID == "" {
			return fmt.Errorf("rule %d has no id", i)
		}
		if ids[r.ID] {
			return fmt.Errorf("rule id %q is used twice", r.ID)
		}
		ids[r.ID] = true
		if err := r.validate(vars); err != nil {
			return fmt.Errorf("rule %q: %w", r.ID, err)
		}
		key := r.Target + "|" + r.DType + "|" + r.Layout
		if len(r.When) > 0 || r.Stack != nil {
			continue // conditional and stacking rules may share a target; BuildWith checks the files it produces
		}
		if other, ok := targets[key]; ok {
			return fmt.Errorf("rules %q and %q write the same target %s", other, r.ID, r.Target)
		}
		targets[key] = r.ID
	}
	switch p.Folder {
	case "", FolderUnmeshed:
	default:
		return fmt.Errorf("folder %q: want empty or %q", p.Folder, FolderUnmeshed)
	}
	if ts := p.TagSwitch; ts != nil && (!vars[ts.Var] || ts.Tag == "") {
		return fmt.Errorf("tag_switch needs a declared variable and a tag, got %q and %q", ts.Var, ts.Tag)
	}
	if p.Vision != nil {
		if p.Vision.Vision != nil {
			return fmt.Errorf("vision part %s has a vision part of its own", p.Vision.Name)
		}
		if err := p.Vision.Validate(); err != nil {
			return fmt.Errorf("vision part %s: %w", p.Vision.Name, err)
		}
	}
	for i, a := range p.Aliases {
		if a.Prefix == "" || a.As == "" || a.Prefix == a.As {
			return fmt.Errorf("alias %d needs a prefix and another as, got %q and %q", i, a.Prefix, a.As)
		}
	}
	for i, ig := range p.Ignore {
		if ig.Reason == "" {
			return fmt.Errorf("ignore rule %d has no reason", i)
		}
		if n := btoi(ig.Template != "") + btoi(ig.Prefix != "") + btoi(ig.Glob != ""); n != 1 {
			return fmt.Errorf("ignore rule %d needs exactly one of template, prefix and glob", i)
		}
		if ig.Glob != "" {
			if _, err := ckpt.CompileGlob("ignore", ig.Glob); err != nil {
				return fmt.Errorf("ignore rule %d: %w", i, err)
			}
		}
		if ig.Template != "" {
			if _, err := parseTemplate(ig.Template); err != nil {
				return fmt.Errorf("ignore rule %d: %w", i, err)
			}
		}
		if err := validateConditions(ig.When, vars); err != nil {
			return fmt.Errorf("ignore rule %d: %w", i, err)
		}
	}
	return nil
}

// validateConditions checks the conditions of a rule's or an ignore rule's
// When: a known op, exactly one of key, var and expr, an expression that
// parses, a declared variable.
func validateConditions(cs Conditions, vars map[string]bool) error {
	for _, c := range cs {
		switch c.Op {
		case "gt", "eq", "ne", "true", "false":
		default:
			return fmt.Errorf("condition op %q: want gt, eq, ne, true or false", c.Op)
		}
		if n := btoi(c.Key != "") + btoi(c.Var != "") + btoi(c.Expr != ""); n != 1 {
			return fmt.Errorf("condition %s needs exactly one of key, var and expr", c)
		}
		if c.Expr != "" {
			if err := checkSyntax(c.Expr); err != nil {
				return fmt.Errorf("condition: %w", err)
			}
		}
		if c.Var != "" && !vars[c.Var] {
			return fmt.Errorf("condition on %q: the profile declares no such variable", c.Var)
		}
	}
	return nil
}

func isIdent(s string) bool {
	if s == "" || !isIdentByte(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isIdentByte(s[i]) && (s[i] < '0' || s[i] > '9') {
			return false
		}
	}
	return true
}

func (r *Rule) validate(vars map[string]bool) error {
	if r.Target == "" {
		return fmt.Errorf("no target")
	}
	if len(r.Sources) == 0 {
		return fmt.Errorf("no sources")
	}
	caps := map[string]bool{}
	for i, s := range r.Sources {
		t, err := parseTemplate(s)
		if err != nil {
			return err
		}
		names := t.captureNames()
		if i == 0 {
			for _, n := range names {
				caps[n] = true
			}
		} else if !sameSet(caps, names) {
			return fmt.Errorf("source %q captures %v, the first source captures %v", s, names, keys(caps))
		}
	}
	if err := checkTargetName(r.Target, caps); err != nil {
		return err
	}
	if r.LayerType != "" && !caps["L"] {
		return fmt.Errorf("layer_type %q needs an {L} capture", r.LayerType)
	}
	for _, a := range r.Assert {
		if err := checkAssertSyntax(a); err != nil {
			return err
		}
	}
	if err := validateConditions(r.When, vars); err != nil {
		return err
	}
	if err := r.validateSteps(); err != nil {
		return err
	}
	switch r.MLP {
	case "", MLPDense, MLPMoE:
	default:
		return fmt.Errorf("mlp %q: want %s or %s", r.MLP, MLPDense, MLPMoE)
	}
	if r.MLP != "" && !caps["L"] {
		if r.MLPLayer == "" {
			return fmt.Errorf("mlp %q without an {L} capture needs mlp_layer", r.MLP)
		}
		if err := checkSyntax(r.MLPLayer); err != nil {
			return fmt.Errorf("mlp_layer: %w", err)
		}
	} else if r.MLPLayer != "" {
		return fmt.Errorf("mlp_layer needs mlp and a rule without an {L} capture")
	}
	if st := r.Stack; st != nil {
		if !caps[st.Capture] {
			return fmt.Errorf("stack capture {%s} is not captured by the sources", st.Capture)
		}
		if strings.Contains(r.Target, "{"+st.Capture+"}") {
			return fmt.Errorf("target %q names the stacked capture {%s}", r.Target, st.Capture)
		}
		if err := checkSyntax(st.Count); err != nil {
			return fmt.Errorf("stack count: %w", err)
		}
	}
	if r.Batch != "" {
		if err := checkSyntax(r.Batch); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
		transposed := false
		for _, s := range r.Transform {
			transposed = transposed || s.Op == OpTranspose
		}
		if !transposed {
			return fmt.Errorf("batch needs a transpose step")
		}
	}
	switch r.Placement.Kind {
	case "replicate":
		if r.Placement.Is2D() {
			return fmt.Errorf("mesh_axes needs a shard placement")
		}
	case "shard":
		if r.Placement.Split != "rows" && r.Placement.Split != "cols" {
			return fmt.Errorf("shard placement needs split \"rows\" or \"cols\", got %q", r.Placement.Split)
		}
		if r.Placement.Is2D() {
			shards := 0
			for _, a := range r.Placement.MeshAxes {
				switch a {
				case AxisShard:
					shards++
				case AxisReplicate:
				default:
					return fmt.Errorf("mesh axis placement %q: want replicate or shard", a)
				}
			}
			if len(r.Placement.MeshAxes) != 2 || shards != 1 {
				return fmt.Errorf("mesh_axes %v: want two axes (rows, columns), exactly one of them shard", r.Placement.MeshAxes)
			}
		}
	default:
		return fmt.Errorf("placement kind %q: want shard or replicate", r.Placement.Kind)
	}
	switch r.DType {
	case BFloat16, BFloat8B, BFloat4B, Float32:
	default:
		return fmt.Errorf("dtype %q: want BFLOAT16, BFLOAT8_B, BFLOAT4_B or FLOAT32", r.DType)
	}
	switch r.Layout {
	case Tile, RowMajor:
	default:
		return fmt.Errorf("layout %q: want TILE or ROW_MAJOR", r.Layout)
	}
	if (r.DType == BFloat8B || r.DType == BFloat4B) && r.Layout != Tile {
		return fmt.Errorf("%s needs TILE layout", r.DType)
	}
	switch r.Memory {
	case DRAMInterleaved, DRAMWidthSharded:
	default:
		return fmt.Errorf("memory %q: want %s or %s", r.Memory, DRAMInterleaved, DRAMWidthSharded)
	}
	return nil
}

// checkTargetName checks that a target's placeholders are captures of its
// sources or expressions over config variables, and that it stays inside
// the cache root.
func checkTargetName(target string, caps map[string]bool) error {
	if strings.HasPrefix(target, "/") || strings.Contains(target, "\\") {
		return fmt.Errorf("target %q must be a relative path", target)
	}
	for _, seg := range strings.Split(target, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("target %q has an empty, . or .. path element", target)
		}
	}
	rest := target
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return fmt.Errorf("target %q: unclosed {", target)
		}
		name := rest[i+1 : i+j]
		if !caps[name] {
			if err := checkTargetExpr(name); err != nil {
				return fmt.Errorf("target %q uses {%s}, which no source captures (%v)", target, name, err)
			}
		}
		rest = rest[i+j+1:]
	}
	return nil
}

// checkTargetExpr accepts a target placeholder that is an integer
// expression over config variables: lower-case identifiers only, so that a
// misspelt capture ({M} for {L}) is not taken for a variable.
func checkTargetExpr(expr string) error {
	if err := checkSyntax(expr); err != nil {
		return err
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		if !isIdentByte(c) {
			i++
			continue
		}
		j := i
		for j < len(expr) && (isIdentByte(expr[j]) || expr[j] >= '0' && expr[j] <= '9') {
			j++
		}
		if c < 'a' || c > 'z' {
			return fmt.Errorf("%q is not a config variable", expr[i:j])
		}
		i = j
	}
	return nil
}

func sameSet(m map[string]bool, names []string) bool {
	if len(m) != len(names) {
		return false
	}
	for _, n := range names {
		if !m[n] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

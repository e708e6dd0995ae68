package verify

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// The ids of the architecture profile's checks (qwen3_5).
const (
	ArchConfig     ckpt.FindingID = "arch.config"     // the profile cannot read the config, or a config value disagrees with the tensors
	ArchMissing    ckpt.FindingID = "arch.missing"    // tensors the config implies that are absent
	ArchUnexpected ckpt.FindingID = "arch.unexpected" // tensors the config does not imply
	ArchShape      ckpt.FindingID = "arch.shape"      // a tensor's shape differs from the config's
	ArchDType      ckpt.FindingID = "arch.dtype"      // a tensor's dtype is not accepted (fail), or a float tensor's is not as declared (warn; arch.FindingDType)
)

var archIDs = []ckpt.FindingID{ArchConfig, ArchMissing, ArchUnexpected, ArchShape, ArchDType}

func skipArch(msg string) []ckpt.Finding {
	out := make([]ckpt.Finding, len(archIDs))
	for i, id := range archIDs {
		out[i] = ckpt.Finding{ID: id, Status: ckpt.Skip, Message: msg}
	}
	return out
}

// archChecks runs the architecture checks of profile and returns them with
// the profile used ("" for none).
func archChecks(c *ckpt.Checkpoint, in *inventory, profile Arch) ([]ckpt.Finding, string) {
	switch profile {
	case ArchNone:
		return skipArch("architecture profile: none (" + in.words.Of("Arch") + " none)"), ""
	case "", ArchAuto:
		if !arch.Is(c.Config) {
			return noProfileChecks(c, in), ""
		}
	}
	q, err := arch.ParseQwen35(c.Config)
	if err != nil {
		return failArch("not checked: the config cannot be read by the qwen3_5 profile", "qwen3_5 profile: "+err.Error()), string(ArchQwen35)
	}
	return qwen35Checks(c, in, q), string(ArchQwen35)
}

// noProfileChecks are the arch checks of a checkpoint no profile knows:
// skipped, but for the FP8 module table and the declared-dtype rule, which
// need no profile.
func noProfileChecks(c *ckpt.Checkpoint, in *inventory) []ckpt.Finding {
	if c.Config == nil {
		return skipArch("no architecture profile: no config.json")
	}
	out := skipArch(fmt.Sprintf("no architecture profile for model_type %s, architectures %v (known: qwen3_5)",
		ckpt.Quote(c.Config.ModelType()), c.Config.Architectures()))
	ds := fp8ModuleChecks(c, in)
	for _, f := range arch.DTypeRuleOf(c).Findings(c) {
		ds = append(ds, ckpt.Finding(f))
	}
	if len(ds) > 0 {
		out = append(out[:len(out)-1], ds...)
	}
	return out
}

// failArch fails arch.config with msg and skips the other arch checks,
// saying skip.
func failArch(skip, msg string) []ckpt.Finding {
	out := skipArch(skip)
	out[0] = ckpt.Finding{ID: ArchConfig, Status: ckpt.Fail, Message: msg}
	return out
}

// qwen35Checks holds the checkpoint to the tensors the qwen3_5 profile q
// implies.
func qwen35Checks(c *ckpt.Checkpoint, in *inventory, q *arch.Qwen35) []ckpt.Finding {
	q.TextPrefix = arch.DetectTextPrefix(c, q.TextPrefix)
	q.DetectExpertLayout(c)
	f := in.fp8Facts()
	fp8 := in.isFP8(f)
	expected, sub, within, failed := expectedTensors(c, in, q, f, fp8)
	if failed != nil {
		return failed
	}
	m := matchExpected(c, in, expected)

	var out []ckpt.Finding
	cfgFails := append(m.configFindings(c.Config), layerChecks(c, q, sub != nil)...)
	if len(cfgFails) == 0 {
		out = append(out, ckpt.Finding{ID: ArchConfig, Status: ckpt.Pass, Message: describeProfile(q, fp8, f.block, len(expected))})
	} else {
		out = append(out, cfgFails...)
	}
	if missing := m.missing; len(missing) > 0 {
		out = append(out, ckpt.Finding{ID: ArchMissing, Status: ckpt.Fail, Tensors: missing,
			Message: fmt.Sprintf("%s the config implies %s missing: %s",
				ckpt.Plural(len(missing), "tensor", "tensors"), isAre(len(missing)), ckpt.NameList(missing, 8))})
	} else {
		out = append(out, ckpt.Finding{ID: ArchMissing, Status: ckpt.Pass,
			Message: fmt.Sprintf("all %d tensors the config implies%s are present", len(expected), within)})
	}
	if unexpected := m.unexpected; len(unexpected) > 0 {
		out = append(out, ckpt.Finding{ID: ArchUnexpected, Status: ckpt.Fail, Tensors: unexpected,
			Message: fmt.Sprintf("%s not implied by the config: %s", ckpt.Plural(len(unexpected), "tensor is", "tensors are"), ckpt.NameList(unexpected, 8))})
	} else {
		out = append(out, ckpt.Finding{ID: ArchUnexpected, Status: ckpt.Pass, Message: "no tensor beyond those the config implies"})
	}
	out = ckpt.AppendOr(out, m.shapeFails, ckpt.Finding{ID: ArchShape, Status: ckpt.Pass, Message: "every expected tensor has the shape the config implies"})
	// A float tensor of another float dtype than expected is the
	// declared-dtype rule's (arch.DTypeRule, shared with map and cache
	// build): a warning naming both.
	dtypeFails := m.dtypeFails
	for _, f := range arch.DTypeRuleOf(c).Findings(c) {
		dtypeFails = append(dtypeFails, ckpt.Finding(f))
	}
	return ckpt.AppendOr(out, dtypeFails, ckpt.Finding{ID: ArchDType, Status: ckpt.Pass, Message: "every expected tensor has an accepted dtype"})
}

// expectedTensors are the tensors q implies, within the selection a
// checkpoint ckpt extract wrote records in its config (ckpt.SubsetKey):
// that subset, and the words that say so in the arch.missing pass line.
// failed is the arch checks to return instead when the config's subset
// cannot be read.
func expectedTensors(c *ckpt.Checkpoint, in *inventory, q *arch.Qwen35, f *fp8Facts, fp8 bool) (
	expected []arch.Tensor, sub *ckpt.Subset, within string, failed []ckpt.Finding) {
	var bm, bn int64
	if f.block != nil {
		bm, bn = f.block[0], f.block[1]
	}
	var notConvert func(string) bool
	if fp8 && in.notConvert != nil {
		notConvert = func(m string) bool { _, kept := in.notConvertEntry(m); return kept }
	}
	expected = q.TensorsExcept(fp8, bm, bn, notConvert)
	sub, err := c.Config.Subset()
	if err != nil {
		return nil, nil, "", failArch("not checked: "+err.Error(), err.Error())
	}
	if sub == nil {
		return expected, nil, "", nil
	}
	m, err := ckpt.NewMatcher(sub.Match, sub.Exclude)
	if err != nil {
		msg := err.Error()
		if ge := (*ckpt.GlobError)(nil); errors.As(err, &ge) {
			msg = ge.With(in.words)
		}
		return nil, nil, "", failArch("not checked: "+msg, fmt.Sprintf("config %s: %s", ckpt.SubsetKey, msg))
	}
	kept := expected[:0]
	for _, e := range expected {
		if m.Match(e.Name) || (e.ScaleOf != "" && m.Match(e.ScaleOf)) {
			kept = append(kept, e)
		}
	}
	return kept, sub, fmt.Sprintf(" within the subset the config records (%s)", describeSubset(sub, in.words)), nil
}

// keyHit is a tensor whose dimension differs from the one config key
// behind it, where the key holds the expected value.
type keyHit struct {
	found  int64
	tensor string
	shape  []int64
}

// archMatch is the checkpoint's tensors held to the expected ones.
type archMatch struct {
	missing, unexpected    []string
	shapeFails, dtypeFails []ckpt.Finding
	keyHits                map[string][]keyHit // config key → the tensors that disagree with it
}

// matchExpected holds the checkpoint's tensors to the expected ones: which
// are missing or unexpected, of another shape or dtype.
func matchExpected(c *ckpt.Checkpoint, in *inventory, expected []arch.Tensor) *archMatch {
	exp := make(map[string]*arch.Tensor, len(expected))
	for i := range expected {
		exp[expected[i].Name] = &expected[i]
	}
	cfg := c.Config
	m := &archMatch{keyHits: map[string][]keyHit{}}
	for i := range expected {
		e := &expected[i]
		t, ok := in.byName[e.Name]
		if !ok {
			if e.ScaleOf != "" {
				if w, ok := in.byName[e.ScaleOf]; ok && w.DType != numfmt.F8E4M3 {
					continue // reported as the weight's dtype
				}
			}
			m.missing = append(m.missing, e.Name)
			continue
		}
		if e.ScaleOf != "" {
			continue // shape and dtype: fp8.scale_shape, fp8.scale_dtype
		}
		if !slices.Equal(t.Shape, e.Shape) {
			m.shapeFails = append(m.shapeFails, ckpt.Finding{ID: ArchShape, Status: ckpt.Fail, Tensors: []string{e.Name}, Message: shapeMessage(cfg, e, t)})
			m.hitKeys(cfg, e, t)
		}
		if !dtypeIn(t.DType, e.Alt) && !floatOnly(t.DType, e.Alt) {
			m.dtypeFails = append(m.dtypeFails, ckpt.Finding{ID: ArchDType, Status: ckpt.Fail, Tensors: []string{e.Name}, Message: dtypeMessage(in, e, t)})
		}
	}
	for _, t := range c.Tensors {
		if _, ok := exp[t.Name]; !ok {
			m.unexpected = append(m.unexpected, t.Name)
		}
	}
	return m
}

// hitKeys records the dimensions of t that differ from e's where one
// config key, which holds e's value, is behind the dimension.
func (m *archMatch) hitKeys(cfg *ckpt.Config, e *arch.Tensor, t *ckpt.Tensor) {
	if len(t.Shape) != len(e.Shape) {
		return
	}
	for d := range e.Shape {
		if t.Shape[d] != e.Shape[d] && len(e.DimKeys[d]) == 1 {
			if v, ok := cfg.Get(e.DimKeys[d][0]); ok {
				if n, ok := jsonval.Int(v); ok && n == e.Shape[d] {
					m.keyHits[e.DimKeys[d][0]] = append(m.keyHits[e.DimKeys[d][0]], keyHit{t.Shape[d], e.Name, t.Shape})
				}
			}
		}
	}
}

// configFindings are the arch.config failures of config keys that every
// tensor behind them disagrees with, in the same way.
func (m *archMatch) configFindings(cfg *ckpt.Config) []ckpt.Finding {
	var out []ckpt.Finding
	keys := make([]string, 0, len(m.keyHits))
	for k := range m.keyHits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		hits := m.keyHits[k]
		agree := true
		for _, h := range hits {
			agree = agree && h.found == hits[0].found
		}
		if !agree {
			continue
		}
		v, _ := cfg.Get(k)
		ts := make([]string, len(hits))
		for i, h := range hits {
			ts[i] = h.tensor
		}
		out = append(out, ckpt.Finding{ID: ArchConfig, Status: ckpt.Fail, Tensors: ts,
			Message: fmt.Sprintf("%s = %v disagrees with the tensors: %s %d there (e.g. %s is %s)",
				k, v, ckpt.Plural(len(hits), "tensor has", "tensors have"), hits[0].found, ckpt.EscapeName(hits[0].tensor), ckpt.FormatShape(hits[0].shape))})
	}
	return out
}

// floatOnly reports whether a stored dtype and every expected one are
// plain float dtypes: the declared-dtype rule decides those.
func floatOnly(d numfmt.DType, alt []numfmt.DType) bool {
	if !arch.PlainFloat(d) {
		return false
	}
	for _, a := range alt {
		if !arch.PlainFloat(a) {
			return false
		}
	}
	return true
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func dtypeIn(d numfmt.DType, alt []numfmt.DType) bool {
	for _, a := range alt {
		if a == d {
			return true
		}
	}
	return false
}

func keyValue(cfg *ckpt.Config, key string) string {
	if v, ok := cfg.Get(key); ok {
		return fmt.Sprintf("%s = %v", key, v)
	}
	return key + " (unset, default)"
}

// shapeMessage names the config keys behind the dimensions that disagree:
// "text_config.intermediate_size = 320 implies [320, 128], found [336, 128]".
func shapeMessage(cfg *ckpt.Config, e *arch.Tensor, t *ckpt.Tensor) string {
	var ks []string
	seen := map[string]bool{}
	addKeys := func(list []string) {
		for _, k := range list {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, keyValue(cfg, k))
			}
		}
	}
	if len(t.Shape) == len(e.Shape) {
		for d := range e.Shape {
			if t.Shape[d] != e.Shape[d] {
				addKeys(e.DimKeys[d])
			}
		}
	} else {
		addKeys(e.Keys)
	}
	verb := "implies"
	if len(ks) > 1 {
		verb = "imply"
	}
	src := strings.Join(ks, ", ")
	if src == "" {
		src, verb = "the architecture", "implies"
	}
	return fmt.Sprintf("%s: %s %s %s, found %s", ckpt.EscapeName(e.Name), src, verb, ckpt.FormatShape(e.Shape), ckpt.FormatShape(t.Shape))
}

func dtypeMessage(in *inventory, e *arch.Tensor, t *ckpt.Tensor) string {
	alts := make([]string, len(e.Alt))
	for i, a := range e.Alt {
		alts[i] = string(a)
	}
	want := strings.Join(alts, " or ")
	why := ""
	switch {
	case e.FP8 && e.Linear && in.quant != nil:
		why = " with a weight_scale_inv" + convertedWhy(in, moduleOf(e.Name), arch.FP8Linear, t)
	case e.FP8:
		why = " with a weight_scale_inv (FP8 release; module not in modules_to_not_convert)"
		if _, ok := in.byName[ckpt.ScaleName(e.Name)]; !ok {
			why += "; it has no scale either"
		}
	case t.DType == numfmt.F8E4M3 && in.quant != nil:
		if e, ok := in.notConvertEntry(moduleOf(t.Name)); ok {
			why = fmt.Sprintf(" (modules_to_not_convert lists %s, which keeps it unconverted)", ckpt.Quote(e))
		} else {
			why = " (this projection stays unquantised in FP8 releases)"
		}
	}
	return fmt.Sprintf("%s is %s, expected %s%s", ckpt.EscapeName(e.Name), t.DType, want, why)
}

func describeProfile(q *arch.Qwen35, fp8 bool, block []int64, n int) string {
	form := "flat config"
	if q.TextPath != "" {
		form = "nested config (text_config)"
	}
	lin, full := 0, 0
	for _, lt := range q.LayerTypes {
		if lt == "full_attention" {
			full++
		} else {
			lin++
		}
	}
	kind := "bf16"
	if fp8 {
		kind = "block-FP8 " + ckpt.FormatShape(block)
	}
	vis := "no vision tower"
	if q.Vision != nil {
		vis = fmt.Sprintf("vision depth %d", q.Vision.Depth)
	}
	return fmt.Sprintf("qwen3_5 profile, %s, prefix %s: %d layers (%d linear_attention + %d full_attention), %d mtp, %s; %s: %d tensors expected, config "+
		"agrees with the tensors",
		form, q.TextPrefix, q.Layers, lin, full, q.MTPLayers, vis, kind, n)
}

// layerChecks compares layer counts and layer kinds with the tensors.
// describeSubset is a subset's globs as the options Match and Exclude
// would give them, in w's words.
func describeSubset(s *ckpt.Subset, w ckpt.Words) string {
	var parts []string
	for _, g := range s.Match {
		parts = append(parts, w.Of("Match")+" "+ckpt.EscapeName(g))
	}
	for _, g := range s.Exclude {
		parts = append(parts, w.Of("Exclude")+" "+ckpt.EscapeName(g))
	}
	if len(parts) == 0 {
		return "every tensor"
	}
	return strings.Join(parts, " ")
}

// layerChecks holds the layer stacks against the config's counts; a
// subset (ckpt extract of a selection) is not expected to hold every
// layer, only none beyond the counts.
func layerChecks(c *ckpt.Checkpoint, q *arch.Qwen35, subset bool) []ckpt.Finding {
	tp := q.TextPath
	type stack struct {
		prefix string
		count  int64
		key    string
		seen   map[int]bool
	}
	stacks := []*stack{{q.TextPrefix + "layers.", q.Layers, tp + "num_hidden_layers", map[int]bool{}},
		{"mtp.layers.", q.MTPLayers, tp + "mtp_num_hidden_layers", map[int]bool{}}}
	if q.Vision != nil {
		stacks = append(stacks, &stack{"model.visual.blocks.", q.Vision.Depth, "vision_config.depth", map[int]bool{}})
	}
	kinds := map[int]map[string]bool{} // text layer -> "linear_attn"/"self_attn"
	for _, t := range c.Tensors {
		for _, s := range stacks {
			if !strings.HasPrefix(t.Name, s.prefix) {
				continue
			}
			rest := t.Name[len(s.prefix):]
			dot := strings.IndexByte(rest, '.')
			if dot <= 0 {
				continue
			}
			n, err := strconv.Atoi(rest[:dot])
			if err != nil || n < 0 {
				continue
			}
			s.seen[n] = true
			if s == stacks[0] {
				for _, k := range []string{"linear_attn.", "self_attn."} {
					if strings.HasPrefix(rest[dot+1:], k) {
						if kinds[n] == nil {
							kinds[n] = map[string]bool{}
						}
						kinds[n][k[:len(k)-1]] = true
					}
				}
			}
		}
	}
	var out []ckpt.Finding
	for _, s := range stacks {
		var extra, absent []int
		for n := range s.seen {
			if int64(n) >= s.count {
				extra = append(extra, n)
			}
		}
		for n := int64(0); n < s.count; n++ {
			if !s.seen[int(n)] {
				absent = append(absent, int(n))
			}
		}
		if len(extra) > 0 {
			out = append(out, ckpt.Finding{ID: ArchConfig, Status: ckpt.Fail,
				Message: fmt.Sprintf("%s = %d, but tensors exist for %s%s", s.key, s.count, strings.TrimSuffix(s.prefix, "."), ckpt.Ranges(extra))})
		}
		if len(absent) > 0 && !subset {
			out = append(out, ckpt.Finding{ID: ArchConfig, Status: ckpt.Fail,
				Message: fmt.Sprintf("%s = %d, but no tensor exists for %s%s", s.key, s.count, strings.TrimSuffix(s.prefix, "."), ckpt.Ranges(absent))})
		}
	}
	layerKey := tp + "layer_types"
	if _, ok := c.Config.Get(layerKey); !ok {
		layerKey = tp + "full_attention_interval"
	}
	for i, lt := range q.LayerTypes {
		k := kinds[i]
		if k == nil {
			continue
		}
		want := "linear_attn"
		if lt == "full_attention" {
			want = "self_attn"
		}
		other := "self_attn"
		if want == "self_attn" {
			other = "linear_attn"
		}
		if !k[want] && k[other] {
			where := layerKey
			if strings.HasSuffix(layerKey, "layer_types") {
				where = fmt.Sprintf("%s[%d] = %s", layerKey, i, ckpt.Quote(lt))
			} else if v, ok := c.Config.Get(layerKey); ok {
				where = fmt.Sprintf("%s = %v makes layer %d %s", layerKey, v, i, lt)
			}
			out = append(out, ckpt.Finding{ID: ArchConfig, Status: ckpt.Fail,
				Message: fmt.Sprintf("%s, but %slayers.%d holds %s tensors, not %s", where, q.TextPrefix, i, other, want)})
		}
	}
	return out
}

// convertedWhy is why a float weight t of module, which transformers'
// FP8 quantizer converts to class (arch.FP8Linear, arch.FP8Experts), is
// not loaded as stored: ": quantization_config.modules_to_not_convert does
// not keep module M unconverted, so transformers builds it as an FP8Linear
// and casts these BF16 values to F8_E4M3 codes with a scale it initialises
// itself (there is none)".
func convertedWhy(in *inventory, module, class string, t *ckpt.Tensor) string {
	list := in.quant.Path + ".modules_to_not_convert"
	if in.quant.ModulesToNotConvert == nil {
		list += " (absent: transformers keeps only lm_head)"
	}
	why := fmt.Sprintf(": %s does not keep module %s unconverted, so transformers builds it as an %s and casts these %s values to F8_E4M3 codes",
		list, ckpt.EscapeName(module), class, t.DType)
	if _, ok := in.byName[ckpt.ScaleName(t.Name)]; !ok {
		return why + " with a scale it initialises itself (there is none)"
	}
	return why + " scaled by the weight_scale_inv beside it"
}

// fp8ModuleChecks are the arch.dtype findings of a block-FP8 checkpoint
// (quant_method fp8 with a weight_block_size) of a family without an
// architecture profile, from the FP8 module table (arch.FP8ModulesOf):
// each BF16, F16 or F32 weight of a module transformers' FineGrainedFP8
// quantizer converts and modules_to_not_convert does not keep fails, as the
// qwen3_5 profile fails it; with no such weight, one pass naming how many
// weights were looked at. A model type the table does not know is one skip
// saying what was not checked. nil when the checkpoint is not block-FP8.
func fp8ModuleChecks(c *ckpt.Checkpoint, in *inventory) []ckpt.Finding {
	if !in.quant.IsBlockFP8() {
		return nil
	}
	m, ok := arch.FP8ModulesOf(c.Config)
	if !ok {
		return []ckpt.Finding{{ID: ArchDType, Status: ckpt.Skip,
			Message: fmt.Sprintf("not checked: which tensors of model_type %s are the weights of modules transformers' FP8 quantizer converts is not known (no "+
				"architecture profile; the FP8 module table knows %s), so a BF16 weight modules_to_not_convert does not keep is not found here",
				ckpt.Quote(c.Config.ModelType()), strings.Join(arch.FP8ModuleTypes(), ", "))}}
	}
	var out []ckpt.Finding
	n := 0
	for _, t := range c.Tensors {
		module, class, ok := m.Module(t.Name)
		if !ok {
			continue
		}
		if _, kept := in.notConvertEntry(module); kept {
			continue
		}
		n++
		if !arch.PlainFloat(t.DType) {
			continue // F8_E4M3 (its scale: fp8.*), or another dtype (not this check's)
		}
		msg := fmt.Sprintf("%s is %s, expected F8_E4M3 with a weight_scale_inv%s", ckpt.EscapeName(t.Name), t.DType, convertedWhy(in, module, class, t))
		if class == arch.FP8Experts && m.ExpertBiases() {
			msg = fmt.Sprintf("%s is %s, expected F8_E4M3 with a weight_scale_inv or module %s kept by %s.modules_to_not_convert: transformers builds it as an "+
				"FP8Experts, which refuses %s's expert biases, so the model does not load",
				ckpt.EscapeName(t.Name), t.DType, ckpt.EscapeName(module), in.quant.Path, m.Class)
		}
		out = append(out, ckpt.Finding{ID: ArchDType, Status: ckpt.Fail, Tensors: []string{t.Name}, Message: msg})
	}
	switch {
	case len(out) > 0:
		return out
	case n == 0:
		return []ckpt.Finding{{ID: ArchDType, Status: ckpt.Skip,
			Message: fmt.Sprintf("not checked: no tensor is the weight of a module transformers' FP8 quantizer converts in %s (model_type %s: model.layers.N.* "+
				"and lm_head.weight) that modules_to_not_convert does not keep",
				m.Class, ckpt.Quote(m.ModelType))}}
	}
	return []ckpt.Finding{{ID: ArchDType, Status: ckpt.Pass,
		Message: fmt.Sprintf("model_type %s (FP8 module table of %s, no architecture profile): none of the %d weights of modules transformers' FP8 quantizer "+
			"converts and modules_to_not_convert does not keep is stored as a float (BF16, F16, F32, F64)", ckpt.Quote(m.ModelType), m.Class, n)}}
}

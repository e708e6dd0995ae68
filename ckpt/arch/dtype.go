package arch

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// FindingDType is the id of the declared-dtype rule's warnings (verify
// reports them under it, beside its own arch.dtype failures).
const FindingDType ckpt.FindingID = "arch.dtype"

// textPrefixes are the prefixes a Qwen3.5 checkpoint stores its text model
// under: model.language_model. (Qwen3_5ForConditionalGeneration, the
// releases), model. (Qwen3_5ForCausalLM, text only) and
// language_model.model. (older conversions).
var textPrefixes = []string{"model.language_model.", "model.", "language_model.model."}

// DetectTextPrefix picks the prefix of textPrefixes under which most
// decoder layers (and the embedding) are stored, keeping def when none is
// found.
func DetectTextPrefix(c *ckpt.Checkpoint, def string) string {
	best, bestN := def, 0
	for _, p := range textPrefixes {
		n := 0
		for _, t := range c.Tensors {
			if strings.HasPrefix(t.Name, p+"layers.") || t.Name == p+"embed_tokens.weight" {
				n++
			}
		}
		if n > bestN {
			best, bestN = p, n
		}
	}
	return best
}

// PlainFloat reports whether d is a dtype unquantised parameters are
// stored in: F16, BF16, F32 or F64.
func PlainFloat(d numfmt.DType) bool {
	switch d {
	case numfmt.F16, numfmt.BF16, numfmt.F32, numfmt.F64:
		return true
	}
	return false
}

// DTypeRule is the expected dtype of a checkpoint's float tensors: the
// dtype its config declares (ckpt.Config.DeclaredDType), else, for the
// qwen3_5 architecture, whose releases are bf16, BF16; the tensors the
// qwen3_5 profile also accepts in F32 (A_log, linear_attn.norm.weight, as
// the Qwen3.5 releases store them) are accepted in F32 too.
type DTypeRule struct {
	// Expected is "" when nothing is expected (no declaration, or one
	// that names no float dtype, outside the qwen3_5 architecture).
	Expected numfmt.DType
	// From says where Expected comes from, for messages.
	From string
	// Also holds the other dtypes accepted for a tensor, by name.
	Also map[string][]numfmt.DType
}

// DTypeRuleOf is the rule of c (see DTypeRule).
func DTypeRuleOf(c *ckpt.Checkpoint) DTypeRule {
	r := DTypeRule{Also: map[string][]numfmt.DType{}}
	if c.Config == nil {
		return r
	}
	d, declared := c.Config.DeclaredDType()
	if declared && d.DType != "" {
		r.Expected, r.From = d.DType, fmt.Sprintf("%s declares %s", d, d.DType)
	}
	if !Is(c.Config) {
		return r
	}
	if r.Expected == "" {
		r.Expected, r.From = numfmt.BF16, "the config declares no dtype and the qwen3_5 profile expects BF16"
		if declared {
			r.From = fmt.Sprintf("%s names no float dtype and the qwen3_5 profile expects BF16", d)
		}
	}
	q, err := ParseQwen35(c.Config)
	if err != nil {
		return r
	}
	q.TextPrefix = DetectTextPrefix(c, q.TextPrefix)
	for _, e := range q.Tensors(false, 0, 0) {
		for _, a := range e.Alt {
			if a != numfmt.BF16 && a != r.Expected {
				r.Also[e.Name] = append(r.Also[e.Name], a)
			}
		}
	}
	return r
}

// accepts reports whether the rule accepts dtype d for the tensor name.
func (r DTypeRule) accepts(name string, d numfmt.DType) bool {
	return r.Expected == "" || d == r.Expected || slices.Contains(r.Also[name], d)
}

// Findings are the rule's warnings for c: one per stored dtype that
// differs from the expected one, naming both and the tensors. Only plain
// float tensors count (PlainFloat; quantised codes and their scales,
// ckpt.IsBookkeeping, have dtypes of their own).
func (r DTypeRule) Findings(c *ckpt.Checkpoint) []ckpt.Finding {
	if r.Expected == "" {
		return nil
	}
	by := map[numfmt.DType][]string{}
	for _, t := range c.Tensors {
		if !PlainFloat(t.DType) || ckpt.IsBookkeeping(t.Name) || r.accepts(t.Name, t.DType) {
			continue
		}
		by[t.DType] = append(by[t.DType], t.Name)
	}
	dts := make([]numfmt.DType, 0, len(by))
	for d := range by {
		dts = append(dts, d)
	}
	sort.Slice(dts, func(i, j int) bool { return dts[i] < dts[j] })
	var out []ckpt.Finding
	for _, d := range dts {
		ts := by[d]
		what := fmt.Sprintf("%d float tensors are", len(ts))
		if len(ts) == 1 {
			what = "1 float tensor is"
		}
		out = append(out, ckpt.Finding{ID: FindingDType, Status: ckpt.Warn, Tensors: ts,
			Message: fmt.Sprintf("%s %s where %s: %s", what, d, r.From, abbreviate(ts, 4))})
	}
	return out
}

// abbreviate names the first n names and counts the rest.
func abbreviate(names []string, n int) string {
	out := make([]string, 0, n)
	for i, s := range names {
		if i == n {
			break
		}
		out = append(out, ckpt.EscapeName(s))
	}
	s := strings.Join(out, ", ")
	if len(names) > n {
		s += fmt.Sprintf(", ... (%d more)", len(names)-n)
	}
	return s
}

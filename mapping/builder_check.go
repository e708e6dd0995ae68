package mapping

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// checkAccounted holds the plan to its invariant (Unaccounted).
func (b *builder) checkAccounted() {
	lost := b.plan.Unaccounted(b.c)
	if len(lost) == 0 {
		return
	}
	b.plan.Unmapped = append(b.plan.Unmapped, lost...)
	sort.SliceStable(b.plan.Unmapped, func(i, j int) bool { return ckpt.NaturalLess(b.plan.Unmapped[i], b.plan.Unmapped[j]) })
	b.problem(ProblemUnaccounted, "", "", fmt.Sprintf("%d source tensor(s) are in no entry, ignore list, unmapped list or problem of the plan (a defect of "+
		"the profile or of ckpt): %s",
		len(lost), abbreviate(lost, 5)), lost...)
}

func (b *builder) checkRequired(produced []map[string]bool) {
	// Rules that write the same target are alternatives (a stacked and a
	// fused layout of the same tensors): one of them producing it is
	// enough, and a target none produces is reported once.
	byTarget := map[string][]int{}
	for i := range b.p.Rules {
		if b.applies[i] {
			byTarget[b.p.Rules[i].Target] = append(byTarget[b.p.Rules[i].Target], i)
		}
	}
	reported := map[string]bool{}
	for i := range b.p.Rules {
		r := &b.p.Rules[i]
		if !r.Required || !b.applies[i] || reported[r.Target] {
			continue
		}
		alts := byTarget[r.Target]
		made := func(l string) bool {
			for _, a := range alts {
				if produced[a][l] {
					return true
				}
			}
			return false
		}
		if r.LayerType != "" {
			var lost []string
			for l, typ := range b.layerTypes {
				if (typ == r.LayerType || r.LayerType == AnyLayer) && (r.MLP == "" || b.mlpKind(int64(l)) == r.MLP) && !made(strconv.Itoa(l)) {
					lost = append(lost, strconv.Itoa(l))
				}
			}
			if len(lost) > 0 {
				reported[r.Target] = true
			}
			if len(lost) > 0 {
				bind := binding{"L": lost[0]}
				var names []string
				for _, s := range r.Sources {
					names = append(names, b.spell(bind.expand(s)))
				}
				b.problem(ProblemMissing, r.ID, r.Target, fmt.Sprintf("rule %s (%s) is required for every %s layer but matched nothing for layer(s) %s; expected e.g. %s",
					r.ID, r.Target, r.LayerType, strings.Join(lost, ", "), strings.Join(names, ", ")), names...)
			}
			continue
		}
		any := false
		for _, a := range alts {
			any = any || len(produced[a]) > 0
		}
		if !any {
			reported[r.Target] = true
			why := ""
			if len(r.When) > 0 {
				var cs []string
				for _, c := range r.When {
					cs = append(cs, c.String())
				}
				why = fmt.Sprintf(" (it applies because %s)", strings.Join(cs, " and "))
			}
			var names []string
			for _, s := range r.Sources {
				names = append(names, b.spell(s))
			}
			b.problem(ProblemMissing, r.ID, r.Target, fmt.Sprintf("required rule %s (%s) matched nothing%s; expected %s", r.ID, r.Target, why,
				strings.Join(names, ", ")), names...)
		}
	}
}

func (b *builder) checkDuplicates() {
	seen := map[string]string{}
	for _, e := range b.plan.Entries {
		if other, ok := seen[e.File]; ok {
			b.problem(ProblemDuplicate, e.Rule, e.Target, fmt.Sprintf("rules %s and %s both write %s", other, e.Rule, e.File))
		}
		seen[e.File] = e.Rule
	}
}

package ckpt

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrEmptySelection is matched (errors.Is) by *EmptySelectionError.
var ErrEmptySelection = errors.New("no tensor matches")

// EmptySelectionError says that --match/--exclude globs select no tensor of
// a checkpoint that has tensors. A silent empty result would pass a CI gate
// ("0 differences"), so commands treat it as an error. It suggests globs
// that do select tensors (e.g. `mtp.**` for `mtp.*`) and names the prefixes
// the tensor names actually have.
type EmptySelectionError struct {
	Match, Exclude []string
	Source         string   // what was searched
	Tensors        int      // how many names were searched
	Suggest        []string // globs that select tensors
	Prefixes       []string // the leading segments of the names present, as globs
}

func (e *EmptySelectionError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no tensor matches %s in %s (%d tensors)", describeSelection(e.Match, e.Exclude), e.Source, e.Tensors)
	if len(e.Suggest) > 0 {
		q := make([]string, len(e.Suggest))
		for i, s := range e.Suggest {
			q[i] = "'" + s + "'"
		}
		fmt.Fprintf(&b, ": did you mean %s?", strings.Join(q, " or "))
	}
	b.WriteString(" (`*` stays inside one dotted segment, `**` crosses segments)")
	if len(e.Prefixes) > 0 {
		fmt.Fprintf(&b, "; the names present start with %s", strings.Join(e.Prefixes, ", "))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrEmptySelection) true.
func (e *EmptySelectionError) Is(target error) bool { return target == ErrEmptySelection }

func describeSelection(match, exclude []string) string {
	var parts []string
	for _, m := range match {
		parts = append(parts, "--match "+Quote(m))
	}
	for _, x := range exclude {
		parts = append(parts, "--exclude "+Quote(x))
	}
	return strings.Join(parts, " ")
}

// CheckSelection returns *EmptySelectionError when the globs (non-empty)
// select none of the names of the given lists (together, e.g. both sides
// of a diff), and nil when they select some, when there are no globs or
// no names. Invalid globs return NewMatcher's error.
func CheckSelection(match, exclude []string, source string, names ...[]string) error {
	if len(match) == 0 && len(exclude) == 0 {
		return nil
	}
	m, err := NewMatcher(match, exclude)
	if err != nil {
		return err
	}
	var all []string
	seen := map[string]bool{}
	for _, ns := range names {
		for _, n := range ns {
			if !seen[n] {
				seen[n] = true
				all = append(all, n)
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	for _, n := range all {
		if m.Match(n) {
			return nil
		}
	}
	e := &EmptySelectionError{Match: match, Exclude: exclude, Source: source, Tensors: len(all), Prefixes: namePrefixes(all, 8)}
	for i, p := range match {
		for _, cand := range globCandidates(p) {
			alt := append(append([]string(nil), match[:i]...), cand)
			alt = append(alt, match[i+1:]...)
			am, err := NewMatcher(alt, exclude)
			if err != nil {
				continue
			}
			for _, n := range all {
				if am.Match(n) {
					e.Suggest = append(e.Suggest, cand)
					break
				}
			}
			if len(e.Suggest) > 0 {
				break // the simplest fix of this glob
			}
		}
	}
	return e
}

// globCandidates are corrections of a glob, simplest first: `*` widened to
// `**` (the last one, then all), a plain prefix extended with `.**`, and
// `**` inserted after the first segment (a missing middle segment, as in
// model.layers.** for model.language_model.layers.*).
func globCandidates(p string) []string {
	var out []string
	add := func(s string) {
		if s != p && !containsStr(out, s) {
			out = append(out, s)
		}
	}
	single := singleStars(p)
	if len(single) > 0 {
		last := single[len(single)-1]
		add(p[:last] + "**" + p[last+1:])
		w := p
		for i := len(single) - 1; i >= 0; i-- {
			w = w[:single[i]] + "**" + w[single[i]+1:]
		}
		add(w)
	}
	if !strings.ContainsAny(p, "*?[{") {
		add(strings.TrimSuffix(p, ".") + ".**")
	}
	if i := strings.IndexByte(p, '.'); i > 0 && !strings.HasPrefix(p[i+1:], "**") {
		add(p[:i] + ".**." + p[i+1:])
		if len(single) > 0 {
			w := p
			for j := len(single) - 1; j >= 0; j-- {
				w = w[:single[j]] + "**" + w[single[j]+1:]
			}
			if k := strings.IndexByte(w, '.'); k > 0 {
				add(w[:k] + ".**." + w[k+1:])
			}
		}
	}
	return out
}

// singleStars returns the offsets of `*` that are not part of `**`.
func singleStars(p string) []int {
	var out []int
	for i := 0; i < len(p); i++ {
		if p[i] != '*' {
			continue
		}
		if i+1 < len(p) && p[i+1] == '*' {
			i++
			continue
		}
		out = append(out, i)
	}
	return out
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// namePrefixes lists the leading segments of names as `prefix.**` globs:
// the first segment, or the first two under "model" (model.language_model,
// model.visual); at most max, sorted.
func namePrefixes(names []string, max int) []string {
	set := map[string]bool{}
	for _, n := range names {
		segs := strings.SplitN(n, ".", 3)
		p := segs[0]
		if p == "model" && len(segs) > 2 {
			p += "." + segs[1]
		}
		if len(segs) == 1 {
			set[p] = true
			continue
		}
		set[p+".**"] = true
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("and %d more", len(out)-max))
	}
	return out
}

// Names returns the names of the checkpoint's tensors, in file order.
func (c *Checkpoint) Names() []string {
	out := make([]string, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = t.Name
	}
	return out
}

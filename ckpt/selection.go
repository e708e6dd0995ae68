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
// a checkpoint that has tensors, or that one of them matches no tensor
// name at all (Flag and Glob name it: a mistyped --exclude would silently
// exclude nothing, a mistyped --match among others would silently select
// less). A silent empty or unchanged result would pass a CI gate
// ("0 differences"), so commands treat it as an error. It suggests globs
// that do match tensors (e.g. `mtp.**` for `mtp.*`, `model.visual.**` for
// `visual.**`) and names the prefixes the tensor names actually have.
type EmptySelectionError struct {
	Match, Exclude []string
	// Field ("Match", "Exclude", or the option CheckGlobsMatch was given,
	// e.g. "Ignore") and Glob name the one glob that matches no tensor name
	// while the selection as a whole is not empty; both are "" when the
	// selection is empty. Flag is the caller's name of that option, when it
	// gave one (CheckGlobsMatch's flag); "" for Match and Exclude.
	Field, Flag, Glob string
	Source            string   // what was searched
	Tensors           int      // how many names were searched
	Suggest           []string // globs that match tensors
	Prefixes          []string // the leading segments of the names present, as globs
}

// Error is the message of the EmptySelectionError, the options named as
// the fields of Options ("Match", "Exclude").
func (e *EmptySelectionError) Error() string {
	return e.With(func(field string) string { return field })
}

// With is the message of the EmptySelectionError, name(field) naming the
// option of a field ("Match", "Exclude"; a Flag the caller gave is used as
// it is).
func (e *EmptySelectionError) With(name func(field string) string) string {
	var b strings.Builder
	if e.Glob != "" {
		what := "it selects nothing"
		switch e.Field {
		case "Exclude":
			what = "it excludes nothing"
		case "Ignore":
			what = "it ignores nothing"
		}
		opt := e.Flag
		if opt == "" {
			opt = name(e.Field)
		}
		fmt.Fprintf(&b, "no tensor matches %s %s in %s (%d tensors), so %s", opt, Quote(e.Glob), e.Source, e.Tensors, what)
	} else {
		fmt.Fprintf(&b, "no tensor matches %s in %s (%d tensors)", describeSelection(e.Match, e.Exclude, name), e.Source, e.Tensors)
	}
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

// Is makes errors.Is(err, ErrEmptySelection) true, and errors.Is(err,
// ErrUsage): a glob that selects nothing is a wrong request.
func (e *EmptySelectionError) Is(target error) bool {
	return target == ErrEmptySelection || target == ErrUsage
}

func describeSelection(match, exclude []string, name func(string) string) string {
	var parts []string
	for _, m := range match {
		parts = append(parts, name("Match")+" "+Quote(m))
	}
	for _, x := range exclude {
		parts = append(parts, name("Exclude")+" "+Quote(x))
	}
	return strings.Join(parts, " ")
}

// CheckSelection returns *EmptySelectionError when the globs of m
// (non-empty) select none of the names of the given lists (together, e.g.
// both sides of a diff), or when any one include or exclude glob matches
// none of those names at all (whatever the other globs select); nil when
// every glob matches some name, when there are no globs or no names, and
// for a nil Matcher.
func (m *Matcher) CheckSelection(source string, names ...[]string) error {
	if m == nil || len(m.include) == 0 && len(m.exclude) == 0 {
		return nil
	}
	match, exclude := m.Include(), m.Exclude()
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
	newErr := func() *EmptySelectionError {
		return &EmptySelectionError{Match: match, Exclude: exclude, Source: source, Tensors: len(all), Prefixes: namePrefixes(all, 8)}
	}
	if !anyMatch(m, all) {
		e := newErr()
		for i, p := range match {
			e.Suggest = append(e.Suggest, suggest(p, all, func(cand string) bool {
				alt := append(append([]string(nil), match[:i]...), cand)
				alt = append(alt, match[i+1:]...)
				am, err := NewMatcher(alt, exclude)
				return err == nil && anyMatch(am, all)
			})...)
		}
		return e
	}
	for _, g := range []struct {
		field string
		globs []Glob
	}{{"Match", m.include}, {"Exclude", m.exclude}} {
		for _, p := range g.globs {
			if anyMatch(MatcherOf([]Glob{p}, nil), all) {
				continue
			}
			e := newErr()
			e.Field, e.Glob = g.field, p.text
			e.Suggest = suggest(p.text, all, func(cand string) bool {
				cm, err := NewMatcher([]string{cand}, nil)
				return err == nil && anyMatch(cm, all)
			})
			return e
		}
	}
	return nil
}

// CheckGlobsMatch returns *EmptySelectionError (Flag flag, Glob the glob)
// when one of globs, the globs of the option flag (e.g. "--ignore"),
// matches none of names, with the globs that would match suggested; nil
// when each matches some name, or when there are no names. Invalid globs
// return CompileGlob's error.
func CheckGlobsMatch(flag string, globs []string, source string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	for _, p := range globs {
		one, err := CompileGlob(flag, p)
		if err != nil {
			return err
		}
		if anyMatch(one, names) {
			continue
		}
		return &EmptySelectionError{Field: fieldOf(flag), Flag: flag, Glob: p, Source: source, Tensors: len(names), Prefixes: namePrefixes(names, 8),
			Suggest: suggest(p, names, func(cand string) bool {
				cm, err := CompileGlob(flag, cand)
				return err == nil && anyMatch(cm, names)
			})}
	}
	return nil
}

// fieldOf is the field name of a flag ("--ignore": "Ignore").
func fieldOf(flag string) string {
	f := strings.TrimLeft(flag, "-")
	if f == "" {
		return ""
	}
	return strings.ToUpper(f[:1]) + f[1:]
}

func anyMatch(m *Matcher, names []string) bool {
	for _, n := range names {
		if m.Match(n) {
			return true
		}
	}
	return false
}

// suggest returns the corrections of glob p that work: the simplest of
// globCandidates, else p under the leading segments of the names present
// (`model.visual.**` for `visual.**`), at most three of them.
func suggest(p string, names []string, works func(string) bool) []string {
	for _, cand := range globCandidates(p) {
		if works(cand) {
			return []string{cand}
		}
	}
	set := map[string]bool{}
	for _, n := range names {
		segs := strings.SplitN(n, ".", 3)
		if len(segs) > 1 {
			set[segs[0]] = true
		}
		if len(segs) > 2 {
			set[segs[0]+"."+segs[1]] = true
		}
	}
	prefixes := make([]string, 0, len(set))
	for s := range set {
		prefixes = append(prefixes, s)
	}
	sort.Strings(prefixes)
	var out []string
	for _, s := range prefixes {
		if c := s + "." + p; !strings.HasPrefix(p, s+".") && works(c) {
			if out = append(out, c); len(out) == 3 {
				break
			}
		}
	}
	return out
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

package ckpt

import (
	"fmt"

	"github.com/gobwas/glob"
)

// Glob is one compiled glob of the Matcher syntax (`*` inside one dotted
// segment, `**` across segments), with the text it was compiled from.
type Glob struct {
	text string
	p    *glob.Pattern
}

// ParseGlob compiles one glob of the Matcher syntax. The error is the
// glob compiler's: the caller says which option held the glob.
func ParseGlob(s string) (Glob, error) {
	g, err := glob.Compile(s, '.')
	if err != nil {
		return Glob{}, err
	}
	return Glob{text: s, p: g}, nil
}

// String is the text of the glob.
func (g Glob) String() string { return g.text }

// Matcher selects tensor names by globs in which `*` stays inside one
// dotted segment and `**` crosses segments (`mtp.**`,
// `model.language_model.layers.*.mlp.*`). An empty include list matches
// everything; excludes win over includes.
type Matcher struct {
	include, exclude []Glob
}

// GlobError is NewMatcher's refusal of a glob that does not compile (Err,
// ParseGlob's error): Field names the option it was given in, "Match" for
// the include globs, "Exclude" for the exclude ones.
type GlobError struct {
	Field, Glob string
	Err         error
}

// Error is the message of the GlobError, the option named as the field of
// Options ("Options.Match").
func (e *GlobError) Error() string { return e.With(nil) }

// With is the message of the GlobError, w naming the option (Words).
func (e *GlobError) With(w Words) string {
	return fmt.Sprintf("invalid %s glob %s: %v", w.Of(e.Field), Quote(e.Glob), e.Err)
}

// Unwrap is ParseGlob's error.
func (e *GlobError) Unwrap() error { return e.Err }

// NewMatcher compiles include and exclude globs; a glob that does not
// compile is a *GlobError.
func NewMatcher(include, exclude []string) (*Matcher, error) {
	m := &Matcher{}
	for _, p := range include {
		g, err := ParseGlob(p)
		if err != nil {
			return nil, &GlobError{Field: "Match", Glob: p, Err: err}
		}
		m.include = append(m.include, g)
	}
	for _, p := range exclude {
		g, err := ParseGlob(p)
		if err != nil {
			return nil, &GlobError{Field: "Exclude", Glob: p, Err: err}
		}
		m.exclude = append(m.exclude, g)
	}
	return m, nil
}

// MatcherOf is the Matcher of globs compiled already (ParseGlob).
func MatcherOf(include, exclude []Glob) *Matcher {
	return &Matcher{include: append([]Glob(nil), include...), exclude: append([]Glob(nil), exclude...)}
}

// Include is the text of the include globs (nil for none, or for a nil
// Matcher).
func (m *Matcher) Include() []string {
	if m == nil {
		return nil
	}
	return globTexts(m.include)
}

// Exclude is the text of the exclude globs (nil for none, or for a nil
// Matcher).
func (m *Matcher) Exclude() []string {
	if m == nil {
		return nil
	}
	return globTexts(m.exclude)
}

func globTexts(gs []Glob) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.text)
	}
	return out
}

// CompileGlob compiles one glob of the --match syntax for the option
// named flag (e.g. "--ignore"): a Matcher that matches the names the glob
// matches. The error names the option.
func CompileGlob(flag, pattern string) (*Matcher, error) {
	g, err := ParseGlob(pattern)
	if err != nil {
		return nil, fmt.Errorf("invalid %s glob %s: %w", flag, Quote(pattern), err)
	}
	return &Matcher{include: []Glob{g}}, nil
}

// Match reports whether name is selected. A nil Matcher matches everything.
func (m *Matcher) Match(name string) bool {
	if m == nil {
		return true
	}
	for _, g := range m.exclude {
		if g.p.Match(name) {
			return false
		}
	}
	if len(m.include) == 0 {
		return true
	}
	for _, g := range m.include {
		if g.p.Match(name) {
			return true
		}
	}
	return false
}

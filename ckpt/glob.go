package ckpt

import (
	"fmt"

	"github.com/gobwas/glob"
)

// Matcher selects tensor names by globs in which `*` stays inside one
// dotted segment and `**` crosses segments (`mtp.**`,
// `model.language_model.layers.*.mlp.*`). An empty include list matches
// everything; excludes win over includes.
type Matcher struct {
	include, exclude []*glob.Pattern
}

// NewMatcher compiles include and exclude globs.
func NewMatcher(include, exclude []string) (*Matcher, error) {
	m := &Matcher{}
	for _, p := range include {
		g, err := glob.Compile(p, '.')
		if err != nil {
			return nil, fmt.Errorf("invalid --match glob %s: %w", Quote(p), err)
		}
		m.include = append(m.include, g)
	}
	for _, p := range exclude {
		g, err := glob.Compile(p, '.')
		if err != nil {
			return nil, fmt.Errorf("invalid --exclude glob %s: %w", Quote(p), err)
		}
		m.exclude = append(m.exclude, g)
	}
	return m, nil
}

// CompileGlob compiles one glob of the --match syntax for the option
// named flag (e.g. "--ignore"): a Matcher that matches the names the glob
// matches. The error names the option.
func CompileGlob(flag, pattern string) (*Matcher, error) {
	g, err := glob.Compile(pattern, '.')
	if err != nil {
		return nil, fmt.Errorf("invalid %s glob %s: %w", flag, Quote(pattern), err)
	}
	return &Matcher{include: []*glob.Pattern{g}}, nil
}

// Match reports whether name is selected. A nil Matcher matches everything.
func (m *Matcher) Match(name string) bool {
	if m == nil {
		return true
	}
	for _, g := range m.exclude {
		if g.Match(name) {
			return false
		}
	}
	if len(m.include) == 0 {
		return true
	}
	for _, g := range m.include {
		if g.Match(name) {
			return true
		}
	}
	return false
}

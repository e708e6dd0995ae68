package main

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/pflag"
)

// The flag values of the mapping-plan flags (--mesh, --set, --ignore) and
// of the sizes of map and the cache commands (--device-dram, --min-mem).
// Like those of flagvalue.go, they never fail in Set: the command reports
// their errors where mapping.Resolve, mapping.Run, build.Run and check.Run
// reported them, in the same words.

// meshValue is --mesh 1xN (mapping.ParseMesh). An empty text is the zero
// Mesh, no error: mapping.Resolve plans it on mapping.DefaultMesh.
type meshValue struct {
	text *string // the raw text, as given
	mesh mapping.Mesh
	err  error
}

// meshFlag registers --mesh, its text in dst (default mapping.DefaultMesh),
// its mesh in v.
func meshFlag(f interface {
	Var(pflag.Value, string, string)
}, v *meshValue, dst *string, usage string) {
	v.text = dst
	_ = v.Set(mapping.DefaultMesh.String())
	f.Var(v, "mesh", usage)
}

func (v *meshValue) Set(s string) error {
	*v.text, v.mesh, v.err = s, mapping.Mesh{}, nil
	if s == "" {
		return nil
	}
	m, err := mapping.ParseMesh(s)
	if err != nil {
		v.err = &ckpt.UsageError{Reason: err.Error()}
		return nil
	}
	v.mesh = m
	return nil
}
func (v *meshValue) String() string { return *v.text }
func (v *meshValue) Type() string   { return "string" }

// Mesh is the mesh, or the usage error of its text.
func (v *meshValue) Mesh() (mapping.Mesh, error) { return v.mesh, v.err }

// settingsValue is the repeatable --set NAME=VALUE (mapping.ParseSettings).
// Like globsValue, the flag stays pflag's stringArray (its help and man
// page), and the settings are parsed once, the first time they are asked
// for.
type settingsValue struct {
	text   *[]string // the raw assignments, as given
	parsed bool
	set    mapping.Settings
	err    error
}

// settingsFlag registers the repeatable --set, its text in dst, its
// settings in v.
func settingsFlag(f interface {
	StringArrayVar(*[]string, string, []string, string)
}, v *settingsValue, dst *[]string, usage string) {
	v.text = dst
	f.StringArrayVar(dst, "set", nil, usage)
}

// settings are the parsed settings (empty, not nil, for none), or the
// usage error of the first that does not parse.
func (v *settingsValue) settings() (mapping.Settings, error) {
	if !v.parsed {
		v.parsed = true
		s, err := mapping.ParseSettings(*v.text)
		if err != nil {
			v.err = &ckpt.UsageError{Option: "--set", Reason: err.Error()}
		} else {
			v.set = s
		}
	}
	return v.set, v.err
}

// ignores are the --ignore globs compiled (nil when none was given), or
// the usage error of the first that does not compile.
func ignores(v *globsValue) ([]ckpt.Glob, error) {
	g, err := v.values()
	if err != nil {
		return nil, &ckpt.UsageError{Reason: err.Error()}
	}
	return g, nil
}

// planValues are what the plan flags parsed into (their text stays in
// planFlags).
type planValues struct {
	mesh   meshValue
	set    settingsValue
	ignore globsValue
}

// err is the first error of the plan flags, where mapping.Resolve reported
// it: after the errors of the profile (po.LoadProfile: an unknown profile,
// a rules file that does not load, a bad device folder or tag), then
// --ignore's, --mesh's, --set's; nil when all parse.
func (v *planValues) err(po mapping.PlanOptions) error {
	_, ierr := ignores(&v.ignore)
	_, merr := v.mesh.Mesh()
	_, serr := v.set.settings()
	if ierr == nil && merr == nil && serr == nil {
		return nil
	}
	if _, err := po.LoadProfile(); err != nil {
		return err
	}
	for _, err := range []error{ierr, merr, serr} {
		if err != nil {
			return err
		}
	}
	return nil
}

// deviceDRAM is --device-dram in bytes (0 when not given), or its usage
// error.
func deviceDRAM(v *sizeValue) (int64, error) {
	s := v.String()
	if s == "" {
		return 0, nil
	}
	n, err := v.Size()
	if err != nil {
		return 0, &ckpt.UsageError{Option: "--device-dram", Reason: err.Error()}
	}
	if n <= 0 {
		return 0, &ckpt.UsageError{Option: "--device-dram", Reason: fmt.Sprintf("want a positive size, got %q", s)}
	}
	return n, nil
}

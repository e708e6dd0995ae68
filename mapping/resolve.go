package mapping

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// PlanOptions say which plan to make of a checkpoint: the profile (a
// built-in one by name, or a profile JSON file), the mesh and the cache
// directory overrides. It is what `ckpt map` and `ckpt cache build|verify`
// take on their command lines.
type PlanOptions struct {
	Profile string // built-in profile name ("" for BuiltinName); ignored when Rules is set
	Rules   string // path of a profile JSON file (the format of Profile.JSON)
	Mesh    Mesh   // 1xN (the zero Mesh for DefaultMesh)
	Device  string // device directory of the cache root ("" for MeshDevice, else the profile's)
	// MeshDevice is the serving host's MESH_DEVICE environment variable:
	// where set, upstream names the cache's device folder after it instead
	// of the number of devices. Device overrides it.
	MeshDevice string
	Tag        string // cache tag ("" for the profile's)
	// Set overrides profile variables (ParseSettings parses them from
	// the command line's NAME=VALUE).
	Set Settings
	// Base holds settings that apply unless Set overrides them (e.g. the
	// settings a cache's manifest records).
	Base Settings
	// Variant selects a variant of a directory source
	// (ckpt.Options.Variant).
	Variant string
	// Ignore are the --ignore globs, compiled (ckpt.ParseGlob): tensors
	// no rule maps that one of them matches are ignored, with the reason
	// ignoreReason(glob) (Profile.WithIgnores). Each must match a tensor
	// name of the source (else *ckpt.EmptySelectionError, a usage error).
	Ignore []ckpt.Glob
	// BaseIgnore holds the globs that apply when Ignore is nil (those a
	// cache's manifest records, as it records them), without that check.
	BaseIgnore []string
	// Words are the caller's names of the options of the plan's workflow
	// (ckpt.Words, keyed by field: "Ignore", "Device", "Rules", "DeviceDRAM"
	// of Options.DeviceDRAM), for the messages and the JSON that name one.
	Words ckpt.Words
}

// ignoreGlobs are the ignore globs the plan applies: Ignore, else BaseIgnore.
func (o PlanOptions) ignoreGlobs() []string {
	if o.Ignore != nil {
		return globTexts(o.Ignore)
	}
	return o.BaseIgnore
}

// globTexts are the texts of globs.
func globTexts(globs []ckpt.Glob) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = g.String()
	}
	return out
}

// LoadProfile returns the profile o names, with the Device and Tag
// overrides applied.
func (o PlanOptions) LoadProfile() (*Profile, error) {
	var p *Profile
	if o.Rules == "" {
		name := o.Profile
		if name == "" {
			name = BuiltinName
		}
		b, err := Builtin(name)
		if err != nil {
			return nil, usage(err)
		}
		p = b
	} else {
		f, err := os.Open(o.Rules)
		if err != nil {
			return nil, fmt.Errorf("opening rules: %w", err)
		}
		defer f.Close()
		if p, err = LoadProfile(f, o.Rules); err != nil {
			return nil, err
		}
	}
	cp := *p
	switch {
	case o.Device != "":
		cp.Device = o.Device
	case o.MeshDevice != "":
		cp.Device = o.MeshDevice
	}
	if cp.Device != "" {
		if err := checkDeviceFolder(cp.Device); err != nil {
			return nil, usage(err)
		}
		if cp.Vision != nil {
			// The vision part's folder is in the same device folder.
			v := *cp.Vision
			v.Device = cp.Device
			cp.Vision = &v
		}
	}
	if o.Tag != "" {
		cp.Tag = o.Tag
	}
	if err := checkTag(cp.Tag); cp.Tag != "" && err != nil {
		return nil, usage(err)
	}
	return &cp, nil
}

// Resolve is the one way the commands make a plan: it loads the profile
// and resolves its variables on the mesh of o (errors there come first,
// before src is read), opens src with openers and builds its plan
// (BuildWith checks the mesh is 1xN). A request that is itself wrong is a
// usage error: a *ckpt.UsageError (an unknown profile, a bad device
// folder), a *SettingError (a setting the profile refuses). On success and
// on a *PlanError (the plan is returned with its problems) the caller
// closes the checkpoint; on any other error nothing is left open.
func Resolve(ctx context.Context, src string, o PlanOptions, openers ...ckpt.SourceOpener) (*ckpt.Checkpoint, *Plan, error) {
	prof, err := o.LoadProfile()
	if err != nil {
		return nil, nil, err
	}
	prof = prof.WithIgnores(o.ignoreGlobs())
	mesh := o.Mesh
	if mesh == (Mesh{}) {
		mesh = DefaultMesh
	}
	set := Settings{}
	maps.Copy(set, o.Base)
	maps.Copy(set, o.Set) // Set overrides Base
	if err := prof.resolveAll(mesh, set); err != nil {
		return nil, nil, &SettingError{Err: err}
	}
	c, err := ckpt.Open(ctx, src, ckpt.Options{Variant: o.Variant, Words: o.Words}, openers...)
	if err != nil {
		return nil, nil, err
	}
	if err := ckpt.CheckGlobsMatch(ignoreField, globTexts(o.Ignore), src, c.Names()); err != nil {
		c.Close()
		var se *ckpt.EmptySelectionError
		if errors.As(err, &se) {
			// The option by its field (Error, and the caller's With),
			// or by the caller's word for it when it gave one.
			se.Flag = o.Words[ignoreField]
		}
		return nil, nil, err
	}
	plan, err := BuildWith(c, prof, mesh, set, o.Words)
	if plan == nil {
		c.Close()
		return nil, nil, err
	}
	plan.Ignore = append([]string(nil), o.ignoreGlobs()...)
	plan.Variant = o.Variant
	plan.words = o.Words
	if plan.Vision != nil {
		// Its manifest records them too: its plan is made with them.
		plan.Vision.Ignore = append([]string(nil), o.ignoreGlobs()...)
		plan.Vision.Variant = o.Variant
	}
	return c, plan, err
}

// ignoreField is the field of the ignore globs (PlanOptions.Ignore).
const ignoreField = "Ignore"

// SettingError is Resolve's refusal of the settings of a plan
// (PlanOptions.Set over Base): a variable the profile does not have, or a
// value it refuses. It matches ckpt.ErrUsage.
type SettingError struct {
	Err error
}

// Error is the profile's reason.
func (e *SettingError) Error() string { return e.Err.Error() }

// Unwrap is the profile's error.
func (e *SettingError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ckpt.ErrUsage) true.
func (e *SettingError) Is(target error) bool { return target == ckpt.ErrUsage }

// usage makes err, a refusal of the request itself, a *ckpt.UsageError
// with the same message.
func usage(err error) error { return &ckpt.UsageError{Reason: err.Error()} }

package mapping

import (
	"context"
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options are what `ckpt map` asks for: the plan of Source (PlanOptions:
// profile or rules file, mesh, device, tag, --set, MESH_DEVICE), or only
// the profile (Dump) or the built-in profiles (List).
type Options struct {
	Source  string
	Plan    PlanOptions
	Openers []ckpt.SourceOpener
	// Dump asks for the profile itself, List for the built-in profiles
	// (List wins); neither needs Source, nor reads Match, Exclude or
	// AgainstCache.
	Dump, List bool
	// AgainstCache is the cache the caller holds the plan against
	// (check.PlanModel, in cache/check); the result then has the plan but no document.
	AgainstCache string
	// Select selects the source tensors whose targets the document lists
	// (Document.selectBy); nil, or a Matcher of no globs, lists them all.
	Select *ckpt.Matcher
	// DeviceDRAM is the DRAM of one device in bytes (0 for the board's).
	DeviceDRAM int64
}

// Result is the outcome of Run: the profiles (List), the profile
// (Dump), or the plan with its document.
type Result struct {
	Profiles *ProfileList
	Profile  *Profile
	// Warnings are the messages of the source's warning issues (worth
	// showing even when Run fails after opening it).
	Warnings []string
	Plan     *Plan
	// Problems is set when the plan has problems: Plan and Doc are still
	// there, and the command fails (exit 1).
	Problems *PlanError
	// Doc is the map JSON document, with the DRAM per device and, with
	// Match or Exclude, only the selected targets. Nil with AgainstCache.
	Doc *Document
}

// Run is the workflow of `ckpt map`: it lists the built-in profiles,
// loads the profile, or makes the plan of the source (Resolve) and its
// document. A negative DeviceDRAM is a *ckpt.OptionError, before any work.
// The checkpoint is closed when Run returns. With a selection that matches
// nothing, the result (its Warnings) comes with the error.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.DeviceDRAM < 0 {
		return nil, &ckpt.OptionError{Field: "DeviceDRAM", Reason: fmt.Sprintf("is %d bytes; want a positive size, or 0 for the board's", opts.DeviceDRAM)}
	}
	m := opts.Select
	selecting := len(m.Include()) > 0 || len(m.Exclude()) > 0
	if opts.List {
		return &Result{Profiles: &ProfileList{Default: BuiltinName, DefaultReason: defaultReason, Profiles: builtinProfiles()}}, nil
	}
	if opts.Dump {
		prof, err := opts.Plan.LoadProfile()
		if err != nil {
			return nil, err
		}
		return &Result{Profile: prof}, nil
	}
	c, plan, err := Resolve(ctx, opts.Source, opts.Plan, opts.Openers...)
	var pe *PlanError
	if err != nil && !errors.As(err, &pe) {
		return nil, err
	}
	defer c.Close()
	res := &Result{Plan: plan, Problems: pe}
	for _, is := range c.Issues {
		if is.Status == ckpt.Warn {
			res.Warnings = append(res.Warnings, is.Message)
		}
	}
	if opts.AgainstCache != "" {
		return res, nil
	}
	doc := plan.Document()
	if mem, err := plan.Memory(opts.DeviceDRAM); err == nil {
		doc.PerDevice, doc.Memory = mem.PerDevice, &mem
	}
	if selecting {
		if err := m.CheckSelection(c.Source, c.Names()); err != nil {
			return res, err
		}
		doc = doc.selectBy(m)
	}
	res.Doc = &doc
	return res, nil
}

// ProfileList is the JSON document of ckpt map --list-profiles.
type ProfileList struct {
	SchemaVersion ckpt.Schema   `json:"schema_version"`
	Default       string        `json:"default"`
	DefaultReason string        `json:"default_reason"`
	Profiles      []ProfileInfo `json:"profiles"`
}

// ProfileListSummary is the closing JSON Lines record of
// ckpt map --list-profiles.
type ProfileListSummary struct {
	Profiles int    `json:"profiles"`
	Default  string `json:"default"`
}

// Summary is the list's closing JSON Lines record.
func (l *ProfileList) Summary() ProfileListSummary {
	return ProfileListSummary{Profiles: len(l.Profiles), Default: l.Default}
}

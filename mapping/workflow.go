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
	// Dump asks for the profile itself, List for the built-in profiles;
	// neither needs Source.
	Dump, List bool
	// AgainstCache is the cache the caller holds the plan against
	// (check.PlanModel, in cache/check); the result then has the plan but no document.
	AgainstCache string
	// Match and Exclude select the source tensors whose targets the
	// document lists (Document.Select).
	Match, Exclude []string
	// DeviceDRAM is the --device-dram value ("" for the board's DRAM).
	DeviceDRAM string
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

// Run is the workflow of `ckpt map`: it validates the options (errors
// there are *ckpt.UsageError, before any work), then lists the built-in
// profiles, loads the profile, or makes the plan of the source (Resolve)
// and its document. The checkpoint is closed when Run returns. With a
// selection that matches nothing, the result (its Warnings) comes with the
// error.
func Run(ctx context.Context, opts Options) (*Result, error) {
	m, err := ckpt.NewMatcher(opts.Match, opts.Exclude)
	if err != nil {
		return nil, usage(err)
	}
	dram, err := ParseDeviceDRAM(opts.DeviceDRAM)
	if err != nil {
		return nil, err
	}
	selecting := len(opts.Match) > 0 || len(opts.Exclude) > 0
	if selecting && (opts.Dump || opts.AgainstCache != "") {
		return nil, &ckpt.UsageError{Reason: "--match and --exclude select the targets map lists; they do not apply to --dump or --against-cache"}
	}
	if len(opts.Plan.Ignore) > 0 && (opts.Dump || opts.List) {
		return nil, &ckpt.UsageError{Reason: "--ignore leaves tensors out of the plan of SRC; it does not apply to --dump or --list-profiles"}
	}
	if opts.List {
		if opts.Dump || opts.AgainstCache != "" || selecting || opts.Source != "" {
			return nil, &ckpt.UsageError{Reason: "--list-profiles takes no SRC, --dump, --against-cache, --match or --exclude"}
		}
		return &Result{Profiles: &ProfileList{Default: BuiltinName, DefaultReason: DefaultReason, Profiles: Profiles()}}, nil
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
	if mem, err := plan.Memory(dram); err == nil {
		doc.PerDevice, doc.Memory = mem.PerDevice, &mem
	}
	if selecting {
		if err := ckpt.CheckSelection(opts.Match, opts.Exclude, c.Source, c.Names()); err != nil {
			return res, err
		}
		doc = doc.Select(m)
	}
	res.Doc = &doc
	return res, nil
}

// ParseDeviceDRAM parses a --device-dram size ("" is 0: the board's DRAM).
func ParseDeviceDRAM(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := ckpt.ParseSize(s)
	if err != nil {
		return 0, &ckpt.UsageError{Option: "--device-dram", Reason: err.Error()}
	}
	if n <= 0 {
		return 0, &ckpt.UsageError{Option: "--device-dram", Reason: fmt.Sprintf("want a positive size, got %q", s)}
	}
	return n, nil
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

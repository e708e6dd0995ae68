package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
)

// findingIDs are the ids of every finding verify reports: the integrity
// issues of opening (package ckpt) and the checks of this package.
var findingIDs = []ckpt.FindingID{
	ckpt.IndexShardName, ckpt.IndexShardMissing, ckpt.IndexDuplicateKey, ckpt.IndexTensorMissing, ckpt.IndexTensorUnlisted,
	ckpt.IndexTensorDuplicate, ckpt.IndexSingleFile, ckpt.IndexVariant, ckpt.FileSize, IndexTotalSize,
	HeaderDType, HeaderLint,
	FP8Config, FP8ScaleMissing, FP8ScaleShape, FP8ScaleDType, FP8ScaleOrphan, FP8Rank, FP8NotConvert, FP8CompressedTensors,
	SchemeConfig, SchemeWeightShape, SchemeCompanionMissing, SchemeCompanionDType, SchemeCompanionShape, SchemeCompanionOrphan,
	SchemeIgnored, SchemeScaleValues,
	ArchConfig, ArchMissing, ArchUnexpected, ArchShape, ArchDType,
	DataScaleValues, DataFP8NaN, DataFloatNonFinite, DataHash, DataRead,
	CachePartial, CacheSHA256,
	contract.ContractKeyAdded, contract.ContractKeyRemoved, contract.ContractDType, contract.ContractShape, contract.ContractHash,
	contract.ContractConfig, contract.ContractFP8Scheme, contract.ContractFP8NotConvert,
}

// Allowance is one --allow-finding ID[:SUBJECT]: it accepts the failing
// and warning findings with that id (of those, with SUBJECT, the ones
// whose every tensor, or for a finding that names no tensor every file,
// the SUBJECT glob matches; `*` within a dotted segment, `**` across, as
// --match). An accepted finding keeps its status; it no longer fails the
// report (nor does a warning under --strict). Findings lists those it
// accepted ([] when none).
type Allowance struct {
	Spec     string         `json:"spec"`
	ID       ckpt.FindingID `json:"id"`
	Subject  string         `json:"subject,omitempty"`
	Findings []ckpt.Finding `json:"findings"`
	subject  *ckpt.Matcher
}

// ParseAllowance parses an allowance, ID or ID:SUBJECT (verify
// --allow-finding); an unknown ID, an empty SUBJECT or one that is not a
// glob is an *AllowanceError.
func ParseAllowance(spec string) (Allowance, error) {
	id, subject, qualified := strings.Cut(spec, ":")
	a := Allowance{Spec: spec, ID: ckpt.FindingID(id), Subject: subject, Findings: []ckpt.Finding{}}
	if !slices.Contains(findingIDs, a.ID) {
		return a, &AllowanceError{Spec: spec, UnknownID: unknownID(id)}
	}
	if qualified {
		if subject == "" {
			return a, &AllowanceError{Spec: spec, EmptySubject: true}
		}
		g, err := ckpt.ParseGlob(subject)
		if err != nil {
			return a, &AllowanceError{Spec: spec, Subject: subject, Glob: err}
		}
		a.subject = ckpt.MatcherOf([]ckpt.Glob{g}, nil)
	}
	return a, nil
}

// AllowanceError is an allowance Spec that ParseAllowance refuses, for one
// of three causes: its ID is not a finding id (UnknownID says why, naming
// the ids there are), its SUBJECT is empty (EmptySubject), or its Subject
// is not a glob (Glob is the glob compiler's error). It matches
// ckpt.ErrUsage.
type AllowanceError struct {
	Spec         string
	UnknownID    string
	EmptySubject bool
	Subject      string
	Glob         error
}

// Error is the message of the AllowanceError.
func (e *AllowanceError) Error() string {
	switch {
	case e.UnknownID != "":
		return fmt.Sprintf("allowance %s: %s", ckpt.Quote(e.Spec), e.UnknownID)
	case e.EmptySubject:
		return fmt.Sprintf("allowance %s: empty SUBJECT (want ID or ID:SUBJECT)", ckpt.Quote(e.Spec))
	}
	return fmt.Sprintf("allowance %s: invalid SUBJECT glob %s: %v", ckpt.Quote(e.Spec), ckpt.Quote(e.Subject), e.Glob)
}

// Unwrap is the glob compiler's error, when that is the cause.
func (e *AllowanceError) Unwrap() error { return e.Glob }

// Is makes errors.Is(err, ckpt.ErrUsage) true.
func (e *AllowanceError) Is(target error) bool { return target == ckpt.ErrUsage }

// check says why a is not an allowance of ParseAllowance ("" when it is
// one): a known id, and a SUBJECT compiled.
func (a Allowance) check() string {
	switch {
	case !slices.Contains(findingIDs, a.ID):
		return unknownID(string(a.ID))
	case a.Subject != "" && a.subject == nil:
		return "has a Subject but no glob: make it with ParseAllowance"
	}
	return ""
}

// unknownID says why id is not a finding id, naming the ids of its group
// (the part before the dot), or the groups.
func unknownID(id string) string {
	if slices.Contains([]ckpt.LintID{ckpt.LintStart, ckpt.LintPadding, ckpt.LintOrder, ckpt.LintForm}, ckpt.LintID(id)) {
		return fmt.Sprintf("%s is a header lint, reported as finding %s (its message names the lint; %s:FILE accepts the lints of one file)",
			id, HeaderLint, HeaderLint)
	}
	group, _, _ := strings.Cut(id, ".")
	var same, groups []string
	for _, k := range findingIDs {
		g, _, _ := strings.Cut(string(k), ".")
		if g == group {
			same = append(same, string(k))
		}
		if !slices.Contains(groups, g+".*") {
			groups = append(groups, g+".*")
		}
	}
	if len(same) > 0 {
		return fmt.Sprintf("no finding has the id %s; the %s findings are %s", ckpt.Quote(id), group, strings.Join(same, ", "))
	}
	return fmt.Sprintf("no finding has the id %s (the ids are %s; go doc ./ckpt/verify lists them)", ckpt.Quote(id), strings.Join(groups, ", "))
}

// subjects are what an allowance's SUBJECT must match of a finding: its
// tensors, else its files.
func subjects(c ckpt.Finding) []string {
	if len(c.Tensors) > 0 {
		return c.Tensors
	}
	return c.Files
}

// covers reports whether a accepts subject s of a finding of its id.
func (a *Allowance) covers(s string) bool { return a.subject == nil || a.subject.Match(s) }

// allow applies the allowances (verify --allow-finding): a failing or
// warning finding whose id one of them names, and each of whose subjects
// one of those covers (a finding with no subject: one without SUBJECT),
// is accepted: it is listed in the allowances' Findings and does not fail
// the report. OK is recomputed; call it after every finding is added.
func (r *Result) allow(allow []Allowance) {
	r.Allowed = allow
	r.allowedBy = make([]string, len(r.Checks))
	for i, c := range r.Checks {
		if c.Status != ckpt.Fail && c.Status != ckpt.Warn {
			continue
		}
		var by []int
		for j := range allow {
			if allow[j].ID == c.ID {
				by = append(by, j)
			}
		}
		if len(by) == 0 {
			continue
		}
		subs := subjects(c)
		ok := true
		used := map[int]bool{}
		if len(subs) == 0 {
			ok = false
			for _, j := range by {
				if allow[j].subject == nil {
					ok, used[j] = true, true
					break
				}
			}
		}
		for _, s := range subs {
			hit := false
			for _, j := range by {
				if allow[j].covers(s) {
					hit, used[j] = true, true
					break
				}
			}
			ok = ok && hit
		}
		if !ok {
			continue
		}
		var specs []string
		for _, j := range by {
			if used[j] {
				allow[j].Findings = append(allow[j].Findings, c)
				specs = append(specs, allow[j].Spec)
			}
		}
		r.allowedBy[i] = strings.Join(specs, ", ")
	}
	r.OK = true
	for i, c := range r.Checks {
		if (c.Status == ckpt.Fail || r.Strict && c.Status == ckpt.Warn) && r.allowedBy[i] == "" {
			r.OK = false
		}
	}
}

// AllowedBy is the --allow-finding value(s) that accepted the i-th finding
// ("" when none did).
func (r *Result) AllowedBy(i int) string {
	if i < 0 || i >= len(r.allowedBy) {
		return ""
	}
	return r.allowedBy[i]
}

// AllowedCounts counts the accepted findings by status.
func (r *Result) AllowedCounts() map[ckpt.Status]int {
	m := map[ckpt.Status]int{}
	for i, c := range r.Checks {
		if r.AllowedBy(i) != "" {
			m[c.Status]++
		}
	}
	return m
}

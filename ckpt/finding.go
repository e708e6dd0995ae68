package ckpt

import "encoding/json"

// Status is the outcome of a finding. Only Fail makes a check, a cache or a
// plan not OK.
type Status string

// The statuses of a finding.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Warn Status = "warn"
	Skip Status = "skip"
)

// FindingID is the stable id of a finding: it names the check (JSON "id").
// Each id is a constant declared once, beside the check that emits it:
// the integrity issues of opening a checkpoint here (IndexShardMissing,
// FileSize, ...), the checks of ckpt/verify, the problems of a mapping plan
// (mapping.Problem*) and the findings of cache verify (cache/check.Finding*).
type FindingID string

// Finding is the one result type of every check in the project: an integrity
// problem found while opening a checkpoint (Checkpoint.Issues), a check of
// ckpt/verify, a problem of a mapping plan and a finding of cache verify.
//
// ID is stable and names the check (e.g. IndexShardMissing,
// FileSize, mapping.ProblemUnmapped, check.FindingTruncated); Message says what was expected and
// what was found and names the tensor, file or config key; Tensors and
// Files are the subjects concerned. In JSON, "tensors" is always a list
// and "files" is left out when empty.
type Finding struct {
	ID      FindingID `json:"id"`
	Status  Status    `json:"status"`
	Message string    `json:"message"`
	Tensors []string  `json:"tensors"`
	Files   []string  `json:"files,omitempty"`
}

// MarshalJSON writes Tensors as [] rather than null when it is empty.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	if f.Tensors == nil {
		f.Tensors = []string{}
	}
	return json.Marshal(plain(f))
}

// Failed reports whether the finding fails its check.
func (f Finding) Failed() bool { return f.Status == Fail }

// File is the first file the finding concerns, "" for none.
func (f Finding) File() string {
	if len(f.Files) == 0 {
		return ""
	}
	return f.Files[0]
}

// AppendOr appends the findings found to out, or pass when there are none:
// a check's failures, or its one passing finding.
func AppendOr(out, found []Finding, pass Finding) []Finding {
	if len(found) > 0 {
		return append(out, found...)
	}
	return append(out, pass)
}

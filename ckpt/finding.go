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

// Finding is the one result type of every check in the project: an integrity
// problem found while opening a checkpoint (Checkpoint.Issues), a check of
// ckpt/verify, a problem of a mapping plan and a finding of cache verify.
//
// ID is stable and names the check (e.g. "index.shard_missing",
// "file.size", "unmapped", "truncated"); Message says what was expected and
// what was found and names the tensor, file or config key; Tensors and
// Files are the subjects concerned. In JSON, "tensors" is always a list
// and "files" is left out when empty.
type Finding struct {
	ID      string   `json:"id"`
	Status  Status   `json:"status"`
	Message string   `json:"message"`
	Tensors []string `json:"tensors"`
	Files   []string `json:"files,omitempty"`
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

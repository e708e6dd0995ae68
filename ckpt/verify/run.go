package verify

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
)

// Request is what the verify workflow checks: the checkpoint at Source
// (opened leniently, so that integrity problems are findings), with the
// architecture profile Profile, its data too with ReadData, and, with
// Against, held against the contract in that file (only the tensors the
// globs select; AllowConfig accepts config changes at those paths).
type Request struct {
	Source  string
	Openers []ckpt.SourceOpener
	// Profile is ProfileAuto (also ""), ProfileQwen35 or ProfileNone.
	Profile  string
	ReadData bool
	Workers  int
	// Progress, if set, counts the bytes read with ReadData.
	Progress *ckpt.Progress
	// Against is the path of a contract (from contract.Run).
	Against        string
	Match, Exclude []string
	AllowConfig    []string
	// Strict makes warnings fail the report.
	Strict bool
	// AllowFinding are --allow-finding values, ID or ID:SUBJECT
	// (ParseAllowance): the findings they accept do not fail the report.
	AllowFinding []string
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate checks the request before any work; a wrong request is a
// *ckpt.UsageError.
func (r Request) Validate() error {
	switch r.Profile {
	case "", ProfileAuto, ProfileQwen35, ProfileNone:
	default:
		return ckpt.Usagef("unknown --arch %q (want auto, qwen3_5 or none)", r.Profile)
	}
	if _, err := ckpt.CheckGlobs(r.Match, r.Exclude); err != nil {
		return err
	}
	if (len(r.Match) > 0 || len(r.Exclude) > 0) && r.Against == "" {
		return ckpt.Usagef("--match and --exclude select tensors for --against; give --against FILE")
	}
	if len(r.AllowConfig) > 0 && r.Against == "" {
		return ckpt.Usagef("--allow-config accepts config changes against a contract; give --against FILE")
	}
	_, err := r.allowances()
	return err
}

// allowances parses AllowFinding.
func (r Request) allowances() ([]Allowance, error) {
	var out []Allowance
	for _, s := range r.AllowFinding {
		a, err := ParseAllowance(s)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// RunSource is the verify workflow: it validates the request, loads the
// contract (with Against), opens the source leniently (unknown dtypes are
// findings), checks the selection and the allowed config paths against
// both, runs every check (Run), compares with the contract and applies
// Strict. Problems of the checkpoint are findings of the report; an error
// means a wrong request (*ckpt.UsageError), an unreadable source or
// contract, or a cancelled context.
func RunSource(ctx context.Context, req Request) (*Report, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	m, _ := ckpt.CheckGlobs(req.Match, req.Exclude)
	var want *contract.Contract
	if req.Against != "" {
		f, err := os.Open(req.Against)
		if err != nil {
			return nil, fmt.Errorf("opening contract: %w", err)
		}
		want, err = contract.Read(f, req.Against)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	c, err := ckpt.OpenAllowingUnknown(ctx, req.Source, ckpt.Options{Workers: req.Workers, Lenient: true, Variant: req.Variant}, req.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if want != nil {
		if err := ckpt.CheckSelection(req.Match, req.Exclude, c.Source+" or "+req.Against, c.Names(), want.Names()); err != nil {
			return nil, err
		}
		if err := contract.CheckAllowConfig(want, contract.ConfigOf(c.Config), req.AllowConfig); err != nil {
			return nil, err
		}
	}
	opt := Options{Profile: req.Profile, ReadData: req.ReadData, Workers: req.Workers}
	if req.ReadData {
		opt.Progress = req.Progress
	}
	rep, err := Run(ctx, c, opt)
	if err != nil {
		return nil, err
	}
	if want != nil {
		cmp, err := contract.Compare(want, contract.New(c, rep.Hashes), contract.CompareOptions{Match: m, AllowConfig: req.AllowConfig})
		if err != nil {
			return nil, err
		}
		cmp.Contract = req.Against
		rep.AddComparison(cmp)
	}
	if req.Strict {
		rep.SetStrict()
	}
	if allow, _ := req.allowances(); len(allow) > 0 {
		rep.Allow(allow)
	}
	return rep, nil
}

// SummaryRecord is the last JSON Lines record of verify: the verdict and
// the findings per status.
type SummaryRecord struct {
	Source string `json:"source"`
	OK     bool   `json:"ok"`
	Strict bool   `json:"strict,omitempty"`
	Fail   int    `json:"fail"`
	Warn   int    `json:"warn"`
	Pass   int    `json:"pass"`
	Skip   int    `json:"skip"`
	// Allowed counts the findings --allow-finding accepted (among Fail
	// and Warn).
	Allowed int `json:"allowed,omitempty"`
}

// SummaryRecord is the report's JSON Lines summary record.
func (r *Report) SummaryRecord() SummaryRecord {
	n, a := r.Counts(), r.AllowedCounts()
	return SummaryRecord{r.Source, r.OK, r.Strict, n[Fail], n[Warn], n[Pass], n[Skip], a[Fail] + a[Warn]}
}

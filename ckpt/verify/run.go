package verify

import (
	"context"
	"fmt"
	"os"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
)

// Options is what the verify workflow checks: the checkpoint at Source
// (opened leniently, so that integrity problems are findings), with the
// architecture profile Arch, its data too with ReadData, and, with
// Against, held against the contract in that file (only the tensors the
// globs select; AllowConfig accepts config changes at those paths).
type Options struct {
	Source  string
	Openers []ckpt.SourceOpener
	// Arch is ArchAuto (also ""), ArchQwen35 or ArchNone.
	Arch     Arch
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

// Validate checks the options before any work; wrong options are a
// *ckpt.UsageError.
func (r Options) Validate() error {
	switch r.Arch {
	case "", ArchAuto, ArchQwen35, ArchNone:
	default:
		return ckpt.Usagef("unknown --arch %q (want auto, qwen3_5 or none)", r.Arch)
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
func (r Options) allowances() ([]Allowance, error) {
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

// Run is the verify workflow: it validates the options, loads the
// contract (with Against), opens the source leniently (unknown dtypes are
// findings), checks the selection and the allowed config paths against
// both, runs every check (Checkpoint), compares with the contract and applies
// Strict. Problems of the checkpoint are findings of the report; an error
// means wrong options (*ckpt.UsageError), an unreadable source or
// contract, or a cancelled context.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	m, _ := ckpt.CheckGlobs(opt.Match, opt.Exclude)
	var want *contract.Contract
	if opt.Against != "" {
		f, err := os.Open(opt.Against)
		if err != nil {
			return nil, fmt.Errorf("opening contract: %w", err)
		}
		want, err = contract.Read(f, opt.Against)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	c, err := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Workers: opt.Workers, Lenient: true, Variant: opt.Variant}, opt.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if want != nil {
		if err := ckpt.CheckSelection(opt.Match, opt.Exclude, c.Source+" or "+opt.Against, c.Names(), want.Names()); err != nil {
			return nil, err
		}
		if err := contract.CheckAllowConfig(want, contract.ConfigOf(c.Config), opt.AllowConfig); err != nil {
			return nil, err
		}
	}
	check := CheckOptions{Arch: opt.Arch, ReadData: opt.ReadData, Workers: opt.Workers}
	if opt.ReadData {
		check.Progress = opt.Progress
	}
	rep, err := Check(ctx, c, check)
	if err != nil {
		return nil, err
	}
	if want != nil {
		cmp, err := contract.Compare(want, contract.New(c, rep.Hashes), contract.CompareOptions{Match: m, AllowConfig: opt.AllowConfig})
		if err != nil {
			return nil, err
		}
		cmp.Contract = opt.Against
		rep.AddComparison(cmp)
	}
	if opt.Strict {
		rep.SetStrict()
	}
	if allow, _ := opt.allowances(); len(allow) > 0 {
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
func (r *Result) SummaryRecord() SummaryRecord {
	n, a := r.Counts(), r.AllowedCounts()
	return SummaryRecord{r.Source, r.OK, r.Strict, n[ckpt.Fail], n[ckpt.Warn], n[ckpt.Pass], n[ckpt.Skip], a[ckpt.Fail] + a[ckpt.Warn]}
}

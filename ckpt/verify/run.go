package verify

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
)

// Options is what the verify workflow checks: the checkpoint at Source
// (opened leniently, so that integrity problems are findings), with the
// architecture profile Arch, its data too with ReadData, and, with
// Against, held against the contract in that file (only the tensors
// Select selects; AllowConfig accepts config changes at those paths).
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
	Against string
	// Select, when set, selects the tensors compared with the contract
	// (nil: all); its globs need Against.
	Select *ckpt.Matcher
	// AllowConfig lists config paths whose change Against accepts.
	AllowConfig []string
	// Strict makes warnings fail the report.
	Strict bool
	// Allowances (ParseAllowance) accept findings: those they accept do
	// not fail the report. Run reports what each accepted in
	// Result.Allowed and leaves these as they are.
	Allowances []Allowance
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for the options the findings mention:
	// "Arch", "ReadData", "Match" and "Exclude" (Select's globs, and those
	// of the subset an extracted checkpoint's config records),
	// "AllowConfig", and "DType" (extract's, which refuses overflowing
	// scales); they also word a contract.Comparison's findings
	// (contract.CompareOptions.Words).
	Words ckpt.Words
}

// check refuses, before any work, the options no command line gives: a
// *ckpt.OptionError.
func (opt Options) check() error {
	if !opt.Arch.known() {
		return &ckpt.OptionError{Field: "Arch", Reason: fmt.Sprintf("is %s (want ArchAuto, ArchQwen35 or ArchNone)", ckpt.Quote(string(opt.Arch)))}
	}
	if (len(opt.Select.Include()) > 0 || len(opt.Select.Exclude()) > 0) && opt.Against == "" {
		return &ckpt.OptionError{Field: "Select", Reason: "selects the tensors compared with a contract: it needs Against"}
	}
	if len(opt.AllowConfig) > 0 && opt.Against == "" {
		return &ckpt.OptionError{Field: "AllowConfig", Reason: "accepts config changes against a contract: it needs Against"}
	}
	for i, a := range opt.Allowances {
		if err := a.check(); err != "" {
			return &ckpt.OptionError{Field: fmt.Sprintf("Allowances[%d]", i), Reason: err}
		}
	}
	return nil
}

// allowances are fresh copies of the Allowances, for one report.
func (opt Options) allowances() []Allowance {
	out := slices.Clone(opt.Allowances)
	for i := range out {
		out[i].Findings = []ckpt.Finding{}
	}
	return out
}

// Run is the verify workflow: it refuses options no command line gives
// (*ckpt.OptionError), loads the contract (with Against), opens the source
// leniently (unknown dtypes are findings), checks the selection and the
// allowed config paths against both, runs every check (Check), compares
// with the contract, applies Strict and the Allowances. Problems of the
// checkpoint are findings of the report; an error means wrong options
// (matching ckpt.ErrUsage), an unreadable source or contract, or a
// cancelled context.
func Run(ctx context.Context, opt Options) (*Result, error) {
	if err := opt.check(); err != nil {
		return nil, err
	}
	var want *contract.Contract
	if opt.Against != "" {
		f, err := os.Open(opt.Against)
		if err != nil {
			return nil, fmt.Errorf("opening contract: %w", err)
		}
		want, err = contract.Read(f, opt.Against, opt.Words)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	c, err := ckpt.OpenAllowingUnknown(ctx, opt.Source, ckpt.Options{Workers: opt.Workers, Lenient: true, Variant: opt.Variant, Words: opt.Words}, opt.Openers...)
	if c == nil {
		return nil, err
	}
	defer c.Close()
	if want != nil {
		if err := opt.Select.CheckSelection(c.Source+" or "+opt.Against, c.Names(), want.Names()); err != nil {
			return nil, err
		}
		if err := contract.CheckAllowConfig(want, contract.ConfigOf(c.Config), opt.AllowConfig); err != nil {
			return nil, err
		}
	}
	check := CheckOptions{Arch: opt.Arch, ReadData: opt.ReadData, Workers: opt.Workers, Words: opt.Words}
	if opt.ReadData {
		check.Progress = opt.Progress
	}
	rep, err := Check(ctx, c, check)
	if err != nil {
		return nil, err
	}
	if want != nil {
		cmp, err := contract.Compare(want, contract.New(c, rep.Hashes), contract.CompareOptions{Match: opt.Select, AllowConfig: opt.AllowConfig, Words: opt.Words})
		if err != nil {
			return nil, err
		}
		cmp.Contract = opt.Against
		rep.addComparison(cmp)
	}
	if opt.Strict {
		rep.setStrict()
	}
	if len(opt.Allowances) > 0 {
		rep.allow(opt.allowances())
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

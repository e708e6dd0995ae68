package main

import (
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/spf13/pflag"
)

// allowancesValue is the repeatable allowance flag (verify
// --allow-finding ID[:SUBJECT]). Like globsValue, the flag itself stays
// pflag's own stringArray (the help and the man pages do not change), and
// it never fails in Set: its values are parsed once (verify.ParseAllowance),
// the first time the command's check asks, after parsing; a value that
// does not parse is kept as the error, in the words of the command line.
type allowancesValue struct {
	name   string    // the flag, for the error
	text   *[]string // the raw values, as given
	parsed bool
	allow  []verify.Allowance
	err    error // the first value that does not parse
}

// allowancesFlag registers the repeatable allowance flag --name, its text
// in dst, its allowances in v.
func allowancesFlag(f *pflag.FlagSet, v *allowancesValue, dst *[]string, name, usage string) {
	v.name, v.text = name, dst
	f.StringArrayVar(dst, name, nil, usage)
}

// allowances is the allowances, parsed once, or the error of the first
// that does not parse: a *ckpt.UsageError naming the flag.
func (v *allowancesValue) allowances() ([]verify.Allowance, error) {
	if !v.parsed {
		v.parsed = true
		for _, s := range *v.text {
			a, err := verify.ParseAllowance(s)
			if err != nil {
				v.allow, v.err = nil, allowanceUsage("--"+v.name, err)
				break
			}
			v.allow = append(v.allow, a)
		}
	}
	return v.allow, v.err
}

// allowanceUsage words an error of verify.ParseAllowance for the flag.
func allowanceUsage(flag string, err error) error {
	var e *verify.AllowanceError
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case e.UnknownID != "":
		return &ckpt.UsageError{Option: flag, Reason: e.UnknownID}
	case e.EmptySubject:
		return &ckpt.UsageError{Option: flag,
			Reason: fmt.Sprintf("%s: want ID or ID:SUBJECT (a glob of the tensor or file names the finding names), got an empty SUBJECT", ckpt.Quote(e.Spec))}
	}
	return &ckpt.UsageError{Option: flag, Reason: fmt.Sprintf("invalid %s glob %s: %v", flag, ckpt.Quote(e.Subject), e.Glob)}
}

package main

import (
	"errors"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/spf13/pflag"
)

// allowancesValue is the repeatable allowance flag (verify
// --allow-finding ID[:SUBJECT]), parsed once (verify.ParseAllowance); a
// value that does not parse is kept as the error, in the words of the
// command line.
type allowancesValue = listValue[verify.Allowance]

// allowancesFlag registers the repeatable allowance flag --name, its text
// in dst, its allowances in v.
func allowancesFlag(f *pflag.FlagSet, v *allowancesValue, dst *[]string, name, usage string) {
	listFlag(f, v, dst, name, usage, func(name, s string) (verify.Allowance, error) {
		a, err := verify.ParseAllowance(s)
		if err != nil {
			return a, allowanceUsage("--"+name, err)
		}
		return a, nil
	})
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

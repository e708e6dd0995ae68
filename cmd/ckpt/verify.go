package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/spf13/cobra"
)

type verifyOptions struct {
	Source   string
	Format   string
	Arch     string
	Against  string
	Progress string
	ReadData bool
	Workers  int
	Match    []string
	Exclude  []string
	// AllowConfig lists config paths whose change --against accepts.
	AllowConfig []string
	// OnlyFailed lists only the failing and warning findings; Strict
	// makes warnings fail (exit 1).
	OnlyFailed bool
	Strict     bool
	Variant    string
	// AllowFinding are the --allow-finding values (ID or ID:GLOB).
	AllowFinding []string
}

// verifyValues are what verify's flags with a syntax parsed into, as they
// were set (their text stays in verifyOptions).
type verifyValues struct {
	match, exclude globsValue
	allowFinding   allowancesValue
}

// newVerifyCmd is ckpt verify; runF, when set, runs instead of the
// workflow (tests of the option parsing).
func (a *App) newVerifyCmd(runF func(context.Context, *verifyOptions) error) *cobra.Command {
	o, v := &verifyOptions{}, &verifyValues{}
	var opt verify.Options // built once, in PreRunE
	cmd := &cobra.Command{
		Use:   "verify SRC",
		Short: "Check a checkpoint's contract (index, headers, FP8 block scales, architecture; --read-data: values and hashes) and report every finding",
		Long: `verify runs every check and reports all findings, each with a stable id, a status
(pass, fail, warn, skip), a message naming the tensor, file or config key, and the
tensors concerned. Exit 0 when no check fails (warnings allowed), 1 when one fails,
2 when the input cannot be read.

With --against FILE (written by "ckpt contract"), it also compares the checkpoint with
that structural contract: added/removed keys, dtype and shape changes, config and
FP8-scheme changes, content hashes (when both sides have them), with a summary per
group (text layers, mtp, visual, other). Any difference exits 1. The config is compared
key by key (every key but bookkeeping such as transformers_version); --allow-config PATH
accepts an intended change at PATH or under it.`,
		Example: `  ckpt verify ./Qwen3.5-27B-FP8
  ckpt verify ./model --read-data --format json
  ckpt contract ./base -o base.contract.json && ckpt verify ./finetune --against base.contract.json
  ckpt verify ./finetune --against base.contract.json --allow-config text_config.rope_parameters`,
		Args: exactArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			o.Source = args[0]
			var err error
			opt, err = o.options(a, v)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return a.runVerify(cmd.Context(), o, opt)
		},
	}
	f := cmd.Flags()
	enumFlag(f, &o.Format, "format", output.Auto, verifyFormats, "output format: {} (auto: table on a terminal, text otherwise; jsonl and csv: the finding rows)")
	enumFlag(f, &o.Arch, "arch", string(verify.ArchAuto), archEnum, "architecture profile: {}")
	deprecatedAlias(f, "profile", "", "arch")
	f.StringVar(&o.Against, "against", "", "also compare with this contract (from ckpt contract)")
	f.BoolVar(&o.ReadData, "read-data", false, "also read tensor data: scale values, FP8 NaN codes, NaN/Inf, xxh3 hashes, cache SHA-256")
	f.IntVar(&o.Workers, "workers", 0, "concurrent reads (default 4)")
	addVariantFlag(f, &o.Variant)
	enumFlag(f, &o.Progress, "progress", output.ProgressAuto, progressEnum, "progress on stderr with --read-data: {}")
	globsFlag(f, &v.match, &o.Match, "match", "with --against: compare only tensors matching this glob; repeatable")
	globsFlag(f, &v.exclude, &o.Exclude, "exclude", "with --against: leave out tensors matching this glob; repeatable")
	f.StringArrayVar(&o.AllowConfig, "allow-config", nil,
		"with --against: accept a config change at this dotted path or under it (text_config.rope_parameters.rope_theta); repeatable")
	f.BoolVar(&o.OnlyFailed, "only-failed", false, "list only the findings that fail or warn (the summary line still counts all)")
	f.BoolVar(&o.Strict, "strict", false, "warnings fail too: exit 1 when any finding warns")
	allowancesFlag(f, &v.allowFinding, &o.AllowFinding, "allow-finding",
		"accept the failing or warning findings with this id (docs/cli.md \"Findings\"; go doc ./ckpt/verify), "+
			"or with ID:GLOB those whose every tensor (else file) the glob matches: they keep their status but do not fail the run, "+
			"--strict neither, and are named in the verdict and in JSON allowed; repeatable")
	return cmd
}

// check holds verify's rules of the command line, in their order; the
// first broken one is the error.
func (o *verifyOptions) check(v *verifyValues) error {
	switch verify.Arch(o.Arch) {
	case "", verify.ArchAuto, verify.ArchQwen35, verify.ArchNone:
	default:
		return ckpt.Usagef("unknown --arch %q (want auto, qwen3_5 or none)", o.Arch)
	}
	if _, err := selection(&v.match, &v.exclude); err != nil {
		return err
	}
	if (len(o.Match) > 0 || len(o.Exclude) > 0) && o.Against == "" {
		return ckpt.Usagef("--match and --exclude select tensors for --against; give --against FILE")
	}
	if len(o.AllowConfig) > 0 && o.Against == "" {
		return ckpt.Usagef("--allow-config accepts config changes against a contract; give --against FILE")
	}
	_, err := v.allowFinding.values()
	return err
}

// options checks the command line (check) and is the workflow's options.
func (o *verifyOptions) options(a *App, v *verifyValues) (verify.Options, error) {
	if err := o.check(v); err != nil {
		return verify.Options{}, err
	}
	sel, _ := selection(&v.match, &v.exclude) // checked
	allow, _ := v.allowFinding.values()       // checked
	return verify.Options{Source: o.Source, Openers: a.Openers, Arch: verify.Arch(o.Arch), ReadData: o.ReadData, Workers: o.Workers,
		Against: o.Against, Select: sel, AllowConfig: o.AllowConfig, Strict: o.Strict, Allowances: allow, Variant: o.Variant,
		Words: flagWords()}, nil
}

// runVerify runs the verify workflow (verify.Run) and renders its
// report: exit 1 when it is not OK.
func (a *App) runVerify(ctx context.Context, o *verifyOptions, req verify.Options) error {
	format, err := output.Resolve(o.Format, a.Terminal, verifyFormats.Values...)
	if err != nil {
		return usageError("%v", err)
	}
	a.proseFor(format)
	stop := func() {}
	if o.ReadData {
		if req.Progress, stop, err = a.startProgress(o.Progress, "verify"); err != nil {
			return err
		}
	}
	rep, err := verify.Run(ctx, req)
	stop()
	if err != nil {
		return err
	}
	if err := printVerify(a.Out, format, rep, o.OnlyFailed); err != nil {
		return err
	}
	// An accepted failure is said loudly; an allowance that accepted
	// nothing too (a mistyped subject, or a finding fixed since).
	for _, al := range rep.Allowed {
		for _, c := range al.Findings {
			if c.Status == ckpt.Fail {
				a.warn(fmt.Sprintf("--allow-finding %s accepts a FAILED finding: %s: %s", ckpt.EscapeName(al.Spec), c.ID, ckpt.EscapeName(c.Message)))
			}
		}
		if len(al.Findings) == 0 {
			a.warn(fmt.Sprintf("--allow-finding %s accepted nothing: no failing or warning finding %s", ckpt.EscapeName(al.Spec), allowanceWhat(al)))
		}
	}
	if !rep.OK {
		return silentExit(exitFailed)
	}
	return nil
}

func printVerify(w io.Writer, format string, res *verify.Result, onlyFailed bool) error {
	n := res.Counts()
	var listed []ckpt.Finding
	var idx []int
	for i, c := range res.Checks {
		if !onlyFailed || c.Status == ckpt.Fail || c.Status == ckpt.Warn {
			listed, idx = append(listed, c), append(idx, i)
		}
	}
	if listed == nil {
		listed = []ckpt.Finding{}
	}
	if format == output.JSON {
		if onlyFailed {
			cp := *res
			cp.Checks = listed
			res = &cp
		}
		return output.WriteJSON(w, res)
	}
	if format == output.JSONL {
		return output.WriteJSONL(w, "finding", listed, res.SummaryRecord())
	}
	g := &output.Grid{Header: []string{"status", "check", "message"}, Color: map[int]bool{0: true}}
	for k, c := range listed {
		msg := c.Message
		if by := res.AllowedBy(idx[k]); by != "" {
			msg += " [allowed by --allow-finding " + by + "]"
		}
		g.Rows = append(g.Rows, []string{string(c.Status), string(c.ID), msg})
	}
	if format == output.CSV {
		return g.Render(w, format)
	}
	if len(listed) == 0 && onlyFailed {
		fmt.Fprintln(w, "no finding fails or warns")
	} else if err := g.Render(w, format); err != nil {
		return err
	}
	// the prose lines' text copied from the inputs, escaped for the format
	esc := output.EscapeFor(format)
	if cmp := res.Against; cmp != nil {
		fmt.Fprintf(w, "\nagainst %s (contract of %s):\n", esc(cmp.Contract), esc(cmp.Source))
		for _, gd := range cmp.Groups {
			fmt.Fprintf(w, "  %s\n", esc(gd.Summary()))
		}
		fmt.Fprintf(w, "  %s\n", esc(cmp.KeySetOutside(ckpt.GroupMTP)))
		for _, c := range res.Checks {
			switch c.ID {
			case contract.ContractConfig, contract.ContractFP8Scheme, contract.ContractFP8NotConvert, contract.ContractHash:
				fmt.Fprintf(w, "  %s: %s\n", c.ID, esc(c.Message))
			}
		}
	}
	a := res.AllowedCounts()
	verdict := "OK"
	switch {
	case res.OK && a[ckpt.Fail] > 0:
		verdict = fmt.Sprintf("OK only because --allow-finding accepts %s", ckpt.Plural(a[ckpt.Fail], "FAILED finding", "FAILED findings"))
	case !res.OK && res.Strict && n[ckpt.Fail] == a[ckpt.Fail]:
		verdict = "FAILED (--strict: warnings fail)"
	case !res.OK:
		verdict = "FAILED"
	}
	failed, warns := fmt.Sprintf("%d failed", n[ckpt.Fail]), fmt.Sprintf("%d warnings", n[ckpt.Warn])
	if a[ckpt.Fail] > 0 {
		failed += fmt.Sprintf(" (%d allowed)", a[ckpt.Fail])
	}
	if a[ckpt.Warn] > 0 {
		warns += fmt.Sprintf(" (%d allowed)", a[ckpt.Warn])
	}
	allowed := ""
	if len(res.Allowed) > 0 {
		var parts []string
		for _, al := range res.Allowed {
			parts = append(parts, fmt.Sprintf("%s (%s)", esc(al.Spec), ckpt.Plural(len(al.Findings), "finding", "findings")))
		}
		allowed = "; allowed by --allow-finding: " + strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "\n%s: %s: %s, %s, %d passed, %d skipped%s\n", esc(res.Source), verdict, failed, warns, n[ckpt.Pass], n[ckpt.Skip], allowed)
	return nil
}

// allowanceWhat names what an allowance looked for.
func allowanceWhat(al verify.Allowance) string {
	if al.Subject == "" {
		return "has the id " + string(al.ID)
	}
	return fmt.Sprintf("with the id %s names only tensors (or files) matching %s", al.ID, ckpt.Quote(al.Subject))
}

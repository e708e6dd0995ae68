package main

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/output"
	"github.com/ckpt-dev/ckpt/cmd/ckpt/internal/report"
	"github.com/ckpt-dev/ckpt/diff"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// enum is the set of values of a flag such as --format, --mode or
// --progress. It is registered once, with the flag (enumFlag), and gives
// the flag its help text (the list in the usage), its check before any work
// (checkEnums, from the root's PersistentPreRunE) and its shell completion.
type enum struct {
	// Values are listed in the help and offered by completion, in order.
	Values []string
	// Hidden values are accepted and completed but not listed in the
	// help: "auto" of --format, which the usage explains apart.
	Hidden []string
	// Notes describe some values in the help: "auto" → "auto (...)".
	Notes map[string]string
	// List joins the values in the help (commaList by default).
	List func([]string) string
	// EmptyOK accepts "" (the consumer reads it as the default).
	EmptyOK bool
	// Fold compares case-insensitively (--dtype BF16).
	Fold bool
	// Unchecked leaves the check to the library, which knows more (a
	// --profile beside --rules): help and completion only.
	Unchecked bool
	// Err is the message of a value outside the set (nil: "unknown --NAME
	// %q (want a, b or c)").
	Err func(name, v string) error
}

// commaList is "a, b, c".
func commaList(v []string) string { return strings.Join(v, ", ") }

// orList is "a, b or c".
func orList(v []string) string {
	if len(v) < 2 {
		return commaList(v)
	}
	return commaList(v[:len(v)-1]) + " or " + v[len(v)-1]
}

// commaOrList is "a, or b".
func commaOrList(v []string) string {
	if len(v) < 2 {
		return commaList(v)
	}
	return commaList(v[:len(v)-1]) + ", or " + v[len(v)-1]
}

// help is the list of the values for the usage, with their notes.
func (e enum) help() string {
	items := make([]string, len(e.Values))
	for i, v := range e.Values {
		items[i] = v
		if n, ok := e.Notes[v]; ok {
			items[i] += " (" + n + ")"
		}
	}
	list := e.List
	if list == nil {
		list = commaList
	}
	return list(items)
}

// accepts reports whether v is one of the values.
func (e enum) accepts(v string) bool {
	if v == "" && e.EmptyOK {
		return true
	}
	for _, list := range [][]string{e.Hidden, e.Values} {
		for _, a := range list {
			if a == v || (e.Fold && strings.EqualFold(a, v)) {
				return true
			}
		}
	}
	return false
}

// check returns the usage error of a value outside the set.
func (e enum) check(name, v string) error {
	if e.Unchecked || e.accepts(v) {
		return nil
	}
	if e.Err != nil {
		return &exitError{code: exitUnreadable, err: e.Err(name, v)}
	}
	return usageError("unknown --%s %q (want %s)", name, v, orList(append(append([]string{}, e.Hidden...), e.Values...)))
}

// formatEnum is --format with these formats and "auto" (the terminal
// decides); its message is output.Resolve's.
func formatEnum(formats ...string) enum {
	return enum{Values: formats, Hidden: []string{output.Auto}, EmptyOK: true, Err: func(_, v string) error {
		_, err := output.Resolve(v, false, formats...)
		return err
	}}
}

// The enums several commands share.
var (
	// progressEnum is --progress (output.StartProgress).
	progressEnum = enum{Values: []string{output.ProgressAuto, output.ProgressBar, output.ProgressPlain, output.ProgressNone}, EmptyOK: true}
	// nanEnum is --nan of cache build and identify (build.NaN.Bits).
	nanEnum = enum{Values: []string{string(build.NaNVector), string(build.NaNScalar)}, List: orList, EmptyOK: true, Err: func(name, v string) error {
		_, err := build.NaN(v).Bits()
		return fmt.Errorf("--%s: %v", name, err)
	}}
	// dtypeEnum is extract --dtype (extract.TargetDType).
	dtypeEnum = enum{Values: []string{extract.Keep, extract.BF16, extract.F16, extract.F32}, List: orList, EmptyOK: true, Fold: true,
		Err: func(name, v string) error {
			_, err := extract.TargetDType(v)
			return fmt.Errorf("--%s: %v", name, err)
		}}
)

// The rows of diff --by.
const (
	byTensor = "tensor"
	byLayer  = "layer"
)

// The enums of one command each.
var (
	// The formats of --format (the command's output.Resolve takes the same
	// list).
	verifyFormats  = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	inspectFormats = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	extractFormats = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown)
	diffFormats    = formatEnum(output.Table, output.Text, output.JSON, output.JSONL, output.CSV, output.Markdown, report.HTML)

	// archEnum is verify --arch (verify.Options.Arch).
	archEnum = enum{Values: []string{string(verify.ArchAuto), string(verify.ArchQwen35), string(verify.ArchNone)},
		Notes: map[string]string{string(verify.ArchAuto): "from model_type/architectures"}}
	// modeEnum is diff --mode (diff.ParseMode).
	modeEnum = enum{Values: []string{string(diff.ModeHeader), string(diff.ModeBytes), string(diff.ModeValues)}, EmptyOK: true,
		Notes: map[string]string{string(diff.ModeHeader): "keys, dtypes, shapes; no data", string(diff.ModeBytes): "identity only",
			string(diff.ModeValues): "statistics"}}
	// byEnum is diff --by.
	byEnum = enum{Values: []string{byTensor, byLayer}, List: commaOrList, Notes: map[string]string{byLayer: "per decoder layer, mtp, visual, other"}}
	// nanBuildEnum is cache build --nan, whose help says what each style is.
	nanBuildEnum = func() enum {
		e := nanEnum
		e.Notes = map[string]string{string(build.NaNVector): "0xFFFF, AVX2/AVX-512 hosts, which serve Tenstorrent cards",
			string(build.NaNScalar): "0x7FC0, torch's scalar kernels and tt-metal's own conversion"}
		return e
	}()
)

// profileEnum is --profile of map and cache: the built-in mapping
// profiles, checked by the mapping library (which also reads --rules).
func profileEnum() enum {
	return enum{Values: mapping.BuiltinNames(), Unchecked: true}
}

// enumValue is the pflag.Value of an enum flag: it stores any string (the
// check runs after parsing, in checkEnums, so that argument errors come
// first as before) and remembers its enum.
type enumValue struct {
	dst  *string
	name string
	e    enum
	seq  int64 // registration order, for the first of several bad values
}

func (v *enumValue) Set(s string) error { *v.dst = s; return nil }
func (v *enumValue) String() string     { return *v.dst }
func (v *enumValue) Type() string       { return "string" }

// enumSeq numbers the enum flags in registration order (commands are
// built concurrently in tests).
var enumSeq atomic.Int64

// enumFlag registers the string flag --name with default def and the
// values of e: usage is the help text, with "{}" replaced by the list of
// the values (e.help).
func enumFlag(f interface {
	Var(pflag.Value, string, string)
}, dst *string, name, def string, e enum, usage string) {
	*dst = def
	f.Var(&enumValue{dst: dst, name: name, e: e, seq: enumSeq.Add(1)}, name, strings.ReplaceAll(usage, "{}", e.help()))
}

// completeAnnotation lists the values shell completion offers for a flag
// that is not an enumFlag (a repeatable one).
const completeAnnotation = "ckpt-complete"

// completeWith makes shell completion offer values for the flag name of f
// (a repeatable flag whose values the library checks, such as cache
// identify's --profile).
func completeWith(f *pflag.FlagSet, name string, values []string) {
	fl := f.Lookup(name)
	if fl == nil {
		panic("completeWith: no flag --" + name)
	}
	if fl.Annotations == nil {
		fl.Annotations = map[string][]string{}
	}
	fl.Annotations[completeAnnotation] = values
}

// checkEnums checks the enum flags of cmd before the command does any work;
// the error is that of the first bad flag in registration order.
func checkEnums(cmd *cobra.Command) error {
	var bad *enumValue
	cmd.Flags().VisitAll(func(fl *pflag.Flag) {
		if v, ok := fl.Value.(*enumValue); ok && v.e.check(v.name, *v.dst) != nil && (bad == nil || v.seq < bad.seq) {
			bad = v
		}
	})
	if bad == nil {
		return nil
	}
	return bad.e.check(bad.name, *bad.dst)
}

// completeEnums registers the shell completion of every enum flag of cmd
// and its subcommands: the values of its enum (or of completeWith).
func completeEnums(cmd *cobra.Command) {
	cmd.LocalFlags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		values, ok := fl.Annotations[completeAnnotation]
		if v, isEnum := fl.Value.(*enumValue); isEnum {
			values, ok = append(append([]string{}, v.e.Hidden...), v.e.Values...), true
		}
		if !ok {
			return
		}
		_ = cmd.RegisterFlagCompletionFunc(fl.Name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values, cobra.ShellCompDirectiveNoFileComp
		})
	})
	for _, c := range cmd.Commands() {
		completeEnums(c)
	}
}

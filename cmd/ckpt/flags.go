package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// deprecatedAnnotation marks a hidden flag kept as an old spelling of
// another; its value is the current spelling.
const deprecatedAnnotation = "ckpt-deprecated-for"

// addOutFlag registers the one spelling of an output path, -o/--out.
func addOutFlag(f *pflag.FlagSet, dst *string, usage string) {
	f.StringVarP(dst, "out", "o", "", usage)
}

// addVariantFlag registers --variant NAME, the variant of a directory SRC
// (ckpt.Options.Variant), on every command that takes SRC.
func addVariantFlag(f *pflag.FlagSet, dst *string) {
	f.StringVar(dst, "variant", "", "read the variant NAME of a checkpoint directory, as transformers' from_pretrained(variant=NAME) does: "+
		"model.NAME.safetensors, else model.safetensors.index.NAME.json with its shards "+
		"(default: the default checkpoint, or the directory's only variant, with a warning)")
}

// deprecatedAlias registers old (and its one-letter shorthand, "" for
// none) as a hidden spelling of the flag current: both set the same value,
// so existing scripts keep working; using old prints a note (noteDeprecated).
func deprecatedAlias(f *pflag.FlagSet, old, shorthand, current string) {
	cur := f.Lookup(current)
	if cur == nil {
		panic("deprecatedAlias: no flag --" + current)
	}
	fl := f.VarPF(cur.Value, old, shorthand, "deprecated spelling of --"+current)
	fl.DefValue = cur.DefValue
	fl.Hidden = true
	if fl.Annotations == nil {
		fl.Annotations = map[string][]string{}
	}
	fl.Annotations[deprecatedAnnotation] = []string{current}
}

// noteDeprecated prints a note on w for every deprecated spelling the
// command line used.
func noteDeprecated(cmd *cobra.Command, w io.Writer) {
	var notes []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if cur, ok := fl.Annotations[deprecatedAnnotation]; ok {
			old := "--" + fl.Name
			if fl.Shorthand != "" {
				old = "-" + fl.Shorthand + "/" + old
			}
			notes = append(notes, fmt.Sprintf("ckpt: note: %s is deprecated, use %s\n", old, spelling(cmd.Flags().Lookup(cur[0]))))
		}
	})
	sort.Strings(notes)
	for _, n := range notes {
		fmt.Fprint(w, n)
	}
}

// spelling is how the help shows a flag: -o/--out or --arch.
func spelling(fl *pflag.Flag) string {
	if fl.Shorthand != "" {
		return "-" + fl.Shorthand + "/--" + fl.Name
	}
	return "--" + fl.Name
}

// maxSuggestDistance is the largest edit distance of a did-you-mean
// (cobra's SuggestionsMinimumDistance for subcommands).
const maxSuggestDistance = 2

// flagError is the flag error of every command: exit 2, a did-you-mean
// for an unknown flag (--fromat: did you mean --format?) and a pointer to
// the command's help.
func flagError(c *cobra.Command, err error) error {
	// A command that only groups subcommands (ckpt, ckpt cache) parsed the
	// flags of a subcommand it did not know: the mistyped subcommand is
	// the error (ckpt cache biuld SRC -o x: did you mean build?), not
	// the flag.
	if c.HasAvailableSubCommands() {
		if args := c.Flags().Args(); len(args) > 0 {
			return subcommands(c, args)
		}
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := suggestFlag(c, name); s != "" {
			msg += "; did you mean --" + s + "?"
		}
	}
	return &exitError{code: exitUnreadable, err: fmt.Errorf("%s (see %s --help)", msg, c.CommandPath())}
}

// suggestFlag is the visible flag of c closest to name ("" when none is
// within maxSuggestDistance edits and none starts with name).
func suggestFlag(c *cobra.Command, name string) string {
	best, bestD := "", maxSuggestDistance+1
	visit := func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		d := levenshtein(strings.ToLower(name), fl.Name)
		if strings.HasPrefix(fl.Name, name) && len(name) >= 3 {
			d = min(d, 1)
		}
		if d < bestD || (d == bestD && fl.Name < best) {
			best, bestD = fl.Name, d
		}
	}
	c.LocalFlags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return best
}

// levenshtein is the edit distance of a and b (insertions, deletions,
// substitutions of runes).
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// subcommands is the Args of a command that only groups subcommands
// (ckpt, ckpt cache): an unknown subcommand is a usage error with a
// did-you-mean from cobra's suggestions.
func subcommands(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageError("%s (see %s --help)", msg, cmd.CommandPath())
}

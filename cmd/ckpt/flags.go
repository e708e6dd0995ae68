package main

import (
	"fmt"
	"io"
	"sort"

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

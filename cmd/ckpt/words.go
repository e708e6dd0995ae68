package main

import (
	"errors"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/mapping"
)

// The library's errors that a user fixes with a flag are typed there, with
// fields and no flag names (their Error() speaks of Options fields); words
// says them in the CLI's terms, as the command line names those options.

// words is msg, the message of err (as exitCode prints it), with the text of
// each typed library error in err's chain replaced by the CLI's wording of
// it; an err without one leaves msg as it is.
func words(err error, msg string) string {
	if err == nil || msg == "" {
		return msg
	}
	w := flagWords()
	reword := func(lib error, cli string) {
		msg = strings.Replace(msg, lib.Error(), cli, 1)
	}
	if ve := (*ckpt.VariantError)(nil); errors.As(err, &ve) {
		reword(ve, "--variant: "+ve.Reason)
	}
	if de := (*ckpt.AmbiguousDirError)(nil); errors.As(err, &de) {
		reword(de, de.With("--variant NAME"))
	}
	if ae := (*cache.AmbiguousCacheError)(nil); errors.As(err, &ae) {
		reword(ae, ae.Listed()+": pass one of them, or choose with --mesh, --tag or --device")
	}
	if nf := (*ckpt.NonFiniteError)(nil); errors.As(err, &nf) {
		reword(nf, nf.With(w))
	}
	if se := (*ckpt.EmptySelectionError)(nil); errors.As(err, &se) {
		reword(se, se.With(w.Of))
	}
	if re := (*atomicfile.RefusedError)(nil); errors.As(err, &re) && re.Flag == extract.OutOption {
		named := *re
		named.Flag = "--out"
		reword(re, named.Error())
	}
	if ue := (*contract.UnknownConfigPathError)(nil); errors.As(err, &ue) {
		reword(ue, ue.With(w))
	}
	if ns := (*check.NoSourceError)(nil); errors.As(err, &ns) {
		reword(ns, ns.Error()+": pass --source SRC (the checkpoint the cache is for)")
	}
	if nb := (*check.NotBuiltinError)(nil); errors.As(err, &nb) {
		reword(nb, nb.Error()+": pass the profile with --rules")
	}
	if ge := (*ckpt.GlobError)(nil); errors.As(err, &ge) {
		reword(ge, ge.With(w))
	}
	if ne := (*extract.NoMatchError)(nil); errors.As(err, &ne) {
		reword(ne, ne.With(describeGlobs(ne.Match, ne.Exclude), "--dtype"))
	}
	if se := (*mapping.SettingError)(nil); errors.As(err, &se) {
		reword(se, "--set: "+se.Error())
	}
	return msg
}

// describeGlobs names extract's globs as its flags do.
func describeGlobs(match, exclude []string) string {
	s := "--match " + strings.Join(match, ", ")
	if len(match) == 0 {
		s = "(all)"
	}
	if len(exclude) > 0 {
		s += " --exclude " + strings.Join(exclude, ", ")
	}
	return s
}

// flagWords are the CLI's names of the library options that findings,
// hints, warnings and refusals mention (ckpt.Words, given in each
// workflow's Options): every command spells an option by its flag, and no
// two commands spell one Options field differently.
func flagWords() ckpt.Words {
	return ckpt.Words{
		"Against": "--against", "AllowConfig": "--allow-config", "AllowNonFinite": "--allow-nonfinite", "Arch": "--arch", "DType": "--dtype",
		"Device": "--device", "DeviceDRAM": "--device-dram", "Exclude": "--exclude", "Ignore": "--ignore", "Match": "--match", "MinMem": "--min-mem",
		"NaN": "--nan", "NoSpaceCheck": "--no-space-check", "Out": "--out", "ReadData": "--read-data", "Rehash": "--rehash",
		"Rules": "--rules", "Variant": "--variant", "WithScales": "--with-scales",
	}
}

package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
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
		reword(nf, nf.Refusal()+" (pass --allow-nonfinite to proceed anyway)")
	}
	if se := (*ckpt.EmptySelectionError)(nil); errors.As(err, &se) {
		reword(se, se.With(func(field string) string { return "--" + strings.ToLower(field) }))
	}
	if re := (*atomicfile.RefusedError)(nil); errors.As(err, &re) && re.Flag == extract.OutOption {
		named := *re
		named.Flag = "--out"
		reword(re, named.Error())
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

// nonFiniteNote is the note of the tensors written with NaN/Inf values
// kept (--allow-nonfinite), "" for none.
func nonFiniteNote(nf []ckpt.NonFinite) string {
	if len(nf) == 0 {
		return ""
	}
	return fmt.Sprintf("%d source tensor(s) hold NaN or Inf (or overflow when converted), kept as they are (--allow-nonfinite): %s",
		len(nf), ckpt.NonFiniteKept(nf))
}

package main

import (
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/spf13/pflag"
)

// The flag values below parse their text into a typed value, but never
// fail in Set: a Set that failed would report during cobra's
// flag parsing, before Args and before the command's own checks, in
// cobra's words. They keep the raw text (in the options struct, as the
// command line gave it) and the parse error, and the command's check
// reports the error at the place and in the words it had before. Their
// Type is that of the plain flags they replace ("string", "stringArray"),
// so that the help and the generated docs do not change.

// sizeValue is a byte size flag (--max-shard-size 5G): ckpt.ParseSize's
// syntax. An empty text is no size (Size 0, no error); the command decides
// what that means.
type sizeValue struct {
	text *string // the raw text, as given
	n    int64
	err  error
}

// sizeFlag registers the size flag --name, its text in dst, its value in v.
func sizeFlag(f *pflag.FlagSet, v *sizeValue, dst *string, name, usage string) {
	v.text = dst
	_ = v.Set(*dst)
	f.Var(v, name, usage)
}

func (v *sizeValue) Set(s string) error {
	*v.text, v.n, v.err = s, 0, nil
	if s != "" {
		v.n, v.err = ckpt.ParseSize(s)
	}
	return nil
}
func (v *sizeValue) String() string { return *v.text }
func (v *sizeValue) Type() string   { return "string" }

// Size is the size in bytes, or ckpt.ParseSize's error for the text.
func (v *sizeValue) Size() (int64, error) { return v.n, v.err }

// listValue is a repeatable flag whose values have a syntax (--match
// GLOB, --allow-finding ID[:SUBJECT]). The flag itself stays pflag's own
// stringArray: pflag leaves "(default [])" out of the help only for its
// own type, and the man pages print the default ("=[]"), so no other Value
// keeps both unchanged. Its values are parsed once, the first time the
// command's check asks, after parsing; the first that does not parse is
// kept as the error, in the words parse gives it.
type listValue[T any] struct {
	name   string    // the flag, for the error
	text   *[]string // the raw values, as given
	parse  func(name, s string) (T, error)
	parsed bool
	items  []T
	err    error // the first value that does not parse
}

// listFlag registers the repeatable flag --name, its text in dst, its
// values in v, parsed by parse.
func listFlag[T any](f *pflag.FlagSet, v *listValue[T], dst *[]string, name, usage string, parse func(name, s string) (T, error)) {
	v.name, v.text, v.parse = name, dst, parse
	f.StringArrayVar(dst, name, nil, usage)
}

// values is the values, parsed once, or the error of the first that does
// not parse.
func (v *listValue[T]) values() ([]T, error) {
	if !v.parsed {
		v.parsed = true
		for _, s := range *v.text {
			x, err := v.parse(v.name, s)
			if err != nil {
				v.items, v.err = nil, err
				break
			}
			v.items = append(v.items, x)
		}
	}
	return v.items, v.err
}

// globsValue is a repeatable glob flag (--match, --exclude, --ignore): its
// globs compiled once (ckpt.ParseGlob).
type globsValue = listValue[ckpt.Glob]

// globsFlag registers the repeatable glob flag --name, its text in dst,
// its globs in v.
func globsFlag(f *pflag.FlagSet, v *globsValue, dst *[]string, name, usage string) {
	listFlag(f, v, dst, name, usage, parseGlob)
}

// parseGlob is the glob s of the flag --name, or its error in
// ckpt.NewMatcher's words.
func parseGlob(name, s string) (ckpt.Glob, error) {
	g, err := ckpt.ParseGlob(s)
	if err != nil {
		return g, fmt.Errorf("invalid --%s glob %s: %w", name, ckpt.Quote(s), err)
	}
	return g, nil
}

// selection is the one matcher of --match and --exclude, or the error of
// the first glob that does not compile (the --match ones first), as
// ckpt.NewMatcher words it, a *ckpt.UsageError.
func selection(match, exclude *globsValue) (*ckpt.Matcher, error) {
	in, err := match.values()
	if err != nil {
		return nil, &ckpt.UsageError{Reason: err.Error()}
	}
	out, err := exclude.values()
	if err != nil {
		return nil, &ckpt.UsageError{Reason: err.Error()}
	}
	return ckpt.MatcherOf(in, out), nil
}

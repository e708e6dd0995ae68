package main

import (
	"errors"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
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
	if ae := (*cache.AmbiguousCacheError)(nil); errors.As(err, &ae) {
		reword(ae, ae.Listed()+": pass one of them, or choose with --mesh, --tag or --device")
	}
	return msg
}

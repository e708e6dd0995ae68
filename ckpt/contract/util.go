package contract

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// names lists up to max quoted names, with "and N more" (as verify's
// messages do).
func names(ns []string, max int) string {
	var b strings.Builder
	for i, n := range ns {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(ns)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ckpt.EscapeName(n))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// appendOr appends found, or pass when nothing was found.
func appendOr(out, found []ckpt.Finding, pass ckpt.Finding) []ckpt.Finding {
	if len(found) > 0 {
		return append(out, found...)
	}
	return append(out, pass)
}

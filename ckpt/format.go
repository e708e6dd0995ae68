package ckpt

import (
	"fmt"
	"strconv"
	"strings"
)

// FormatShape formats a shape as "[a, b, c]" ("[]" for a scalar). It is
// the one shape formatter of messages and tables.
func FormatShape(s []int64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// FormatBytes formats a byte count for people, in binary units with one
// decimal ("512 B", "4.0 GiB").
func FormatBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

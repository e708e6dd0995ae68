package cache

import "strings"

// IsTempName reports whether n is the name of a temporary file or folder
// that an unfinished write leaves behind: ".<name>.tmp-*" (atomicfile's
// temporary names: build outputs and the manifest) or ".unpack-*" (an
// unpack's staging folder). Listings skip them, verify reports them and a
// build removes them.
func IsTempName(n string) bool {
	return strings.HasPrefix(n, ".") && (strings.Contains(n, ".tmp-") || strings.HasPrefix(n, ".unpack-"))
}

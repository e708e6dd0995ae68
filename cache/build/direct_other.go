//go:build !linux

package build

import "os"

// openDirect: direct writes are a Linux fast path; elsewhere every byte
// goes through the page cache.
func openDirect(f *os.File) (*os.File, error) { return nil, errDirectUnsupported }

//go:build !unix

package atomicfile

import "errors"

// mkfifo: FIFOs are a Unix thing; the tests that need one skip elsewhere.
func mkfifo(string, uint32) error { return errors.ErrUnsupported }

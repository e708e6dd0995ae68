//go:build !linux

package ckpt

import (
	"errors"
	"os"
)

// readCached reads nothing off Linux: every read goes through the file.
func readCached(fd uintptr, p []byte, off int64) (int, bool) { return 0, false }

// openDirectRead: direct reads are a Linux fast path.
func openDirectRead(f *os.File) (*os.File, error) { return nil, errors.ErrUnsupported }

func isDirectUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }

// allCached: no page cache queries off Linux.
func allCached(fd uintptr, off int64, n int, stat bool) (all, ok, statErr bool) {
	return false, false, false
}

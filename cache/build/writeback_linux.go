//go:build linux

package build

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages to the
// disk now, without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE): a durable build then overlaps the disk's work
// with the conversion instead of leaving it all to the fsync of each
// finished file. Errors are ignored: the fsync reports any that matter.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}

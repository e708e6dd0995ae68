//go:build linux

package archive

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange puts the folder staged at stage in place of the folder at dir
// in one atomic step (renameat2 RENAME_EXCHANGE: every reader sees the old
// folder or the new one, never neither) and returns where the old folder
// is now (stage). A file system that cannot exchange gets swapRenames.
func exchange(stage, dir string) (string, error) {
	err := unix.Renameat2(unix.AT_FDCWD, stage, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return swapRenames(stage, dir)
	}
	if err != nil {
		return "", err
	}
	return stage, nil
}

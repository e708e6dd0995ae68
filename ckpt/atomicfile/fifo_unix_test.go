//go:build unix

package atomicfile

import "syscall"

// mkfifo makes a FIFO for the policy tests (Unix only).
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }

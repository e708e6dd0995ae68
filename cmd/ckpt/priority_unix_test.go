//go:build unix

package main

import "syscall"

// lowPriority gives process pid the lowest scheduling priority (nice 19),
// best effort.
func lowPriority(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19) }

package build

import (
	"os"
	"strings"
)

// bootIDFile holds an id the Linux kernel draws at every boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// unknownBoot is bootID where the system has none: no boot counts as the
// same as it, so every unsynced file is treated as written before a
// reboot (its data is hashed again), which is safe.
const unknownBoot = "unknown"

// bootID identifies the running boot of the system, so that a file
// written without fsync can be told from one that survived a reboot
// (cache.FileRecord.UnsyncedBoot).
func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		return id
	}
	return unknownBoot
}

// sameBoot reports whether id is the running boot's (never for
// unknownBoot).
func (b *builder) sameBoot(id string) bool {
	return id == b.boot && id != unknownBoot
}

//go:build linux

package build

import (
	"fmt"
	"os"
	"syscall"
)

// openDirect opens the file f again, for direct (O_DIRECT) writes: through
// /proc/self/fd, the same file whatever its name is by now.
func openDirect(f *os.File) (*os.File, error) {
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_WRONLY|syscall.O_DIRECT, 0)
}

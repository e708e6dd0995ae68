//go:build !linux

package build

// bigBuf returns n zero bytes, aligned for direct I/O (from the heap off
// Linux).
func bigBuf(n int) (b []byte, mapped bool) { return alignedBuf(n), false }

func freeBig(b []byte, mapped bool) {}

const hugePage = 2 << 20

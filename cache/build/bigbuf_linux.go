//go:build linux

package build

import "golang.org/x/sys/unix"

// bigBuf returns n zero bytes (n rounded up to whole 2 MiB when it is at
// least 1 MiB) outside the Go heap, page-aligned, asking for huge pages:
// the buffers of direct reads and writes, whose pages the kernel pins for
// every transfer (one huge page instead of 512 small ones), and which the
// garbage collector need not track. mapped is false when it fell back to
// the heap; freeBig gives a mapped one back.
func bigBuf(n int) (b []byte, mapped bool) {
	if n >= 1<<20 {
		n = (n + hugePage - 1) &^ (hugePage - 1)
	}
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return alignedBuf(n), false
	}
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	return b, true
}

// freeBig unmaps a buffer of bigBuf that was mapped.
func freeBig(b []byte, mapped bool) {
	if mapped {
		_ = unix.Munmap(b[:cap(b)])
	}
}

const hugePage = 2 << 20

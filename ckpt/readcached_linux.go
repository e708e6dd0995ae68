package ckpt

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawReadMax caps one raw read (about 2 ms of copying): between two, the
// goroutine can be preempted, for the garbage collector or another
// goroutine.
const rawReadMax = 8 << 20

// readCached copies what the page cache holds of p's range at off into p
// with preadv2(RWF_NOWAIT), which fails with EAGAIN instead of waiting for
// the disk. Because it cannot block, it is made as a raw system call: the
// goroutine keeps its processor, as for any other copy in memory, instead
// of the scheduler handing the processor to another thread for the length
// of the call (which left a core idle in a parallel diff). It returns the
// bytes read (fewer than len(p) at the end of the file or where the cache
// stops, 0 on EAGAIN) and false when the kernel does not support the call.
func readCached(fd uintptr, p []byte, off int64) (int, bool) {
	n := 0
	for n < len(p) {
		iov := unix.Iovec{Base: &p[n]}
		iov.SetLen(min(len(p)-n, rawReadMax))
		o := off + int64(n) // low and high words, as the kernel takes them on 32-bit systems too
		r, _, e := syscall.RawSyscall6(unix.SYS_PREADV2, fd, uintptr(unsafe.Pointer(&iov)), 1, uintptr(o),
			uintptr(o>>(4*unsafe.Sizeof(uintptr(0)))>>(4*unsafe.Sizeof(uintptr(0)))), unix.RWF_NOWAIT)
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EINVAL:
			return n, false
		default: // EAGAIN: not cached; other errors: the usual read reports them
			return n, true
		}
		if r == 0 {
			return n, true // end of file
		}
		n += int(r)
	}
	return n, true
}

// openDirectRead opens f again for direct (O_DIRECT) reads, through
// /proc/self/fd: the same file whatever its name is by now.
func openDirectRead(f *os.File) (*os.File, error) {
	return os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), os.O_RDONLY|syscall.O_DIRECT, 0)
}

// isDirectUnsupported: a direct read refused (alignment the file system
// does not take, or no direct I/O at all).
func isDirectUnsupported(err error) bool { return errors.Is(err, syscall.EINVAL) }

// allCached reports whether the page cache holds every page of [off,
// off+n) of the file fd, without reading anything: with cachestat (Linux
// 6.5) where the kernel has it, else with mincore over a mapping of the
// range (a read that fails instead of waiting, as readCached's, would
// start the kernel's read-ahead of what is missing, and the direct read
// would then read it a second time while it fills the page cache). stat
// false skips cachestat (the kernel refused it before). Where mincore
// cannot tell (the kernel reports only this process's own mappings for a
// file the caller may not write), the range reads as not cached and is
// read directly: correct, without the copy from memory. ok is false when
// neither call is available; statErr is true when cachestat failed.
func allCached(fd uintptr, off int64, n int, stat bool) (all, ok, statErr bool) {
	if n <= 0 {
		return true, true, false
	}
	page := int64(os.Getpagesize())
	first, last := off/page, (off+int64(n)-1)/page
	if stat {
		r := unix.CachestatRange{Off: uint64(first * page), Len: uint64((last - first + 1) * page)}
		var st unix.Cachestat_t
		if err := unix.Cachestat(uint(fd), &r, &st, 0); err == nil {
			return int64(st.Cache) >= last-first+1, true, false
		}
		statErr = true
	}
	all, ok = mincoreAll(fd, first*page, int(last-first+1))
	return all, ok, statErr
}

// mincoreAll reports whether the page cache holds the pages pages of the
// file fd from the page-aligned offset off, by mapping them (nothing is
// read) and asking mincore.
func mincoreAll(fd uintptr, off int64, pages int) (all, ok bool) {
	m, err := unix.Mmap(int(fd), off, pages*os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return false, false
	}
	defer unix.Munmap(m)
	vec := make([]byte, pages)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		return false, false
	}
	for _, v := range vec {
		if v&1 == 0 {
			return false, true
		}
	}
	return true, true
}

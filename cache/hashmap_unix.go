//go:build unix

package cache

import (
	"os"
	"syscall"

	"github.com/zeebo/xxh3"
)

// hashOwnFile is HashFile for a file this process has just written and
// still holds (a build's temporary file, under the folder's lock): the
// bytes are hashed where they lie in the page cache through a read-only
// mapping, with no copy into a buffer. ok is false when the file cannot
// be mapped (the caller then reads it with HashFile).
func hashOwnFile(f *os.File, dataOffset, size int64) (header, data string, ok bool) {
	if size <= 0 || dataOffset < 0 || dataOffset > size || int64(int(size)) != size {
		return "", "", false
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return "", "", false
	}
	defer syscall.Munmap(m)
	return hexHash(xxh3.Hash(m[:dataOffset])), hexHash(xxh3.Hash(m[dataOffset:])), true
}

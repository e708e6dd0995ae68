//go:build unix

package build

import (
	"os"
	"syscall"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt/xxh3s"
)

// hashWindow is the most of a file mapped at a time by hashOwnFile: mapped
// pages count in the resident set while they are mapped.
const hashWindow = 8 << 20

// hashOwnFile is cache.HashFile for a file this process has just written and
// still holds (a build's temporary file, under the folder's lock), when
// its hashes as written are missing (builder.fileHashes): the
// bytes are hashed where they lie in the page cache through read-only
// mappings of at most hashWindow bytes, with no copy into a buffer. ok is
// false when the file cannot be mapped (the caller then reads it with
// cache.HashFile).
func hashOwnFile(f *os.File, dataOffset, size int64) (header, data string, ok bool) {
	if size <= 0 || dataOffset < 0 || dataOffset > size {
		return "", "", false
	}
	hh, hd := xxh3s.New(), xxh3s.New()
	for off := int64(0); off < size; off += hashWindow {
		n := min(size-off, hashWindow)
		m, err := syscall.Mmap(int(f.Fd()), off, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
		if err != nil {
			return "", "", false
		}
		if off < dataOffset {
			k := min(dataOffset-off, n)
			hh.Write(m[:k])
			hd.Write(m[k:])
		} else {
			hd.Write(m)
		}
		syscall.Munmap(m)
	}
	return cache.HexHash(hh.Sum64()), cache.HexHash(hd.Sum64()), true
}

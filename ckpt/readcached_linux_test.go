package ckpt

import (
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestFileBlobReadAt reads a file through fileBlob at many offsets and
// lengths, with its pages in the page cache (readCached copies them) and
// dropped from it (readCached reads nothing, the file read does the
// rest), and past its end, against os.File.ReadAt.
func TestFileBlobReadAt(t *testing.T) {
	t.Parallel()
	data := make([]byte, rawReadMax+1<<20+123) // more than one raw read
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	b, err := OpenFileBlob(p)
	require.NoError(t, err)
	defer b.Close()
	fb := b.(*fileBlob)
	ref, err := os.Open(p)
	require.NoError(t, err)
	defer ref.Close()
	for _, drop := range []bool{false, true} {
		for i := 0; i < 200; i++ {
			off := r.Int64N(int64(len(data)) + 100)
			n := r.IntN(1 << 20)
			switch {
			case i%10 == 0:
				off = int64(len(data)) - int64(n)/2 // across the end
			case i == 1:
				off, n = 0, len(data) // the whole file: several raw reads
			}
			if drop {
				// Clean pages leave the cache: the first part of the
				// read is not cached.
				require.NoError(t, unix.Fadvise(int(ref.Fd()), off, int64(n), unix.FADV_DONTNEED))
			}
			got := make([]byte, n)
			gn, gerr := fb.ReadAt(got, off)
			want := make([]byte, n)
			wn, werr := ref.ReadAt(want, off)
			require.Equal(t, wn, gn, "off %d n %d", off, n)
			require.Equal(t, want[:wn], got[:gn])
			if werr == io.EOF {
				assert.ErrorIs(t, gerr, io.EOF)
			} else {
				assert.NoError(t, gerr)
			}
		}
	}
	assert.True(t, fb.nowait.Load(), "this kernel reads the page cache without waiting")
}

// TestFileBlobReadStream reads a file through fileBlob.readStream at many
// offsets and lengths, cached and dropped from the page cache, against
// os.File.ReadAt; what was not cached is read directly from the disk and
// stays out of the page cache.
func TestFileBlobReadStream(t *testing.T) {
	t.Parallel()
	data := make([]byte, 3<<20+321)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	b, err := OpenFileBlob(p)
	require.NoError(t, err)
	defer b.Close()
	fb := b.(*fileBlob)
	ref, err := os.Open(p)
	require.NoError(t, err)
	defer ref.Close()
	require.NoError(t, ref.Sync())
	buf := NewStreamBuffer(1 << 20)
	for _, drop := range []bool{false, true} {
		for i := 0; i < 200; i++ {
			n := r.IntN(1 << 20)
			off := r.Int64N(int64(len(data)-n) + 1)
			if i == 0 {
				off = int64(len(data) - n) // up to the end
			}
			if drop {
				require.NoError(t, unix.Fadvise(int(ref.Fd()), 0, 0, unix.FADV_DONTNEED))
			}
			got, err := fb.readStream(buf, off, n)
			require.NoError(t, err, "off %d n %d", off, n)
			require.Equal(t, data[off:off+int64(n)], got, "off %d n %d", off, n)
		}
	}
	// Direct reads leave the page cache as it was: empty.
	require.NoError(t, unix.Fadvise(int(ref.Fd()), 0, 0, unix.FADV_DONTNEED))
	for off := 0; off+1<<20 <= len(data); off += 1 << 20 {
		_, err := fb.readStream(buf, int64(off), 1<<20)
		require.NoError(t, err)
	}
	if fb.noDirect.Load() {
		t.Skip("the file system of the test's temporary directory refuses direct reads")
	}
	m, err := unix.Mmap(int(ref.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer unix.Munmap(m)
	vec := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, e)
	cached := 0
	for _, v := range vec {
		cached += int(v & 1)
	}
	assert.LessOrEqual(t, cached, 2, "pages of %d cached after direct reads", len(vec))
}

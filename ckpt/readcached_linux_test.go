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
// stays out of the page cache, with cachestat and, as on kernels before
// 6.5, without it (mincore).
func TestFileBlobReadStream(t *testing.T) {
	t.Parallel()
	for _, noStat := range []bool{false, true} {
		t.Run(map[bool]string{false: "cachestat", true: "mincore"}[noStat], func(t *testing.T) {
			t.Parallel()
			testFileBlobReadStream(t, noStat)
		})
	}
}

func testFileBlobReadStream(t *testing.T, noStat bool) {
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
	fb.noStat.Store(noStat)
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

// TestAllCached: with some pages of a file in the page cache, allCached
// tells a range whose pages are all cached from one that misses any, with
// cachestat and with mincore alike. The file is dropped whole (the kernel
// keeps the large folios a partial drop would split) and two parts are
// read back with read-ahead off (the kernel may still read a little
// around them: no case depends on the pages beside them).
func TestAllCached(t *testing.T) {
	t.Parallel()
	page := os.Getpagesize()
	data := make([]byte, 64*page)
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Sync())
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
	require.NoError(t, unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_RANDOM))
	_, err = f.ReadAt(data[:16*page], 0)
	require.NoError(t, err)
	_, err = f.ReadAt(data[:16*page], int64(48*page))
	require.NoError(t, err)
	for _, stat := range []bool{true, false} {
		if _, _, statErr := allCached(f.Fd(), 0, 1, true); stat && statErr {
			continue // this kernel has no cachestat
		}
		for _, tc := range []struct {
			off, n int
			want   bool
		}{
			{0, 8 * page, true},
			{page + 5, 3 * page, true},
			{56*page + 1, 8*page - 1, true},
			{60*page + 3, 1, true},
			{0, 0, true},
			{0, 64 * page, false},
			{7*page + 9, 18 * page, false},
			{20 * page, 24 * page, false},
			{30*page + 1, 1, false},
			{40*page - 1, 30 * page, false},
		} {
			all, ok, _ := allCached(f.Fd(), int64(tc.off), tc.n, stat)
			require.True(t, ok)
			assert.Equal(t, tc.want, all, "stat %v [%d, %d)", stat, tc.off, tc.off+tc.n)
		}
	}
}

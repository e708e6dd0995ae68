package build_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unsafe"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestDurableBuildBypassesPageCache: a durable build writes its files
// with direct writes, so that their bytes are not copied into the page
// cache (the kernel's copy was most of a build's CPU time); with direct
// writes off, as where the file system refuses them, they are. Pages
// cached are counted with mincore over the files' whole pages (the tail
// of each file goes through the page cache).
func TestDurableBuildBypassesPageCache(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, stageFixture())
	for _, tc := range []struct {
		name   string
		opt    build.Hooked
		cached func(t *testing.T, frac float64)
	}{
		{"direct", build.Staging(build.Hook(build.WriteOptions{Workers: 2}), 64<<20, 4096), func(t *testing.T, frac float64) {
			require.Less(t, frac, 0.1, "share of the written pages in the page cache")
		}},
		{"direct writes off", build.NoDirect(build.Hook(build.WriteOptions{Workers: 2})), func(t *testing.T, frac float64) {
			require.Greater(t, frac, 0.9, "share of the written pages in the page cache")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "cache")
			if !probeDirectHere(filepath.Dir(out)) && tc.name == "direct" {
				t.Skip("the file system of the test's temporary directory refuses direct writes")
			}
			_, err := build.WriteHooked(context.Background(), c, plan, out, tc.opt)
			require.NoError(t, err)
			pages, cached := cachedPages(t, out, ".tensorbin", false)
			require.Positive(t, pages)
			t.Logf("%d of %d pages cached", cached, pages)
			tc.cached(t, float64(cached)/float64(pages))
		})
	}
}

// TestBuildReadsSourceDirect: the source bands a build reads (block-FP8
// codes, bfloat16 bits) that the page cache does not hold are read
// directly from the disk, ahead of the conversion (prefetch.go), and do
// not fill the page cache (a 27B source is larger than the memory of the
// machines it is built on). The tensors read through the page cache
// (headers, scales, small tensors, those converted through float32) start
// the kernel's read-ahead, which on this fixture of a few MiB can reach
// its neighbours (read_ahead_kb is 8 MiB on the machines the tests run
// on) as the reads happen to fall: once in several runs under load, 548
// of 816 pages. The build is made on up to three fresh fixtures and the
// best share counts; reads that all went through the page cache (the
// direct path broken) fill it every time.
func TestBuildReadsSourceDirect(t *testing.T) {
	t.Parallel()
	var shares []float64
	for range 3 {
		src, c, plan := fixture(t, stageFixture())
		if !probeDirectHere(src) {
			t.Skip("the file system of the test's temporary directory refuses direct reads")
		}
		// Dropped from the page cache (pages the kernel keeps
		// nonetheless, under load, are cached before the build and
		// copied from there).
		pages, before := cachedPages(t, src, ".safetensors", true)
		_, err := build.Write(context.Background(), c, plan, filepath.Join(t.TempDir(), "cache"), build.WriteOptions{Workers: 2, BandBytes: 8192})
		require.NoError(t, err)
		_, cached := cachedPages(t, src, ".safetensors", false)
		t.Logf("%d of %d source pages cached after the build, %d before", cached, pages, before)
		shares = append(shares, float64(cached-before)/float64(pages))
		if shares[len(shares)-1] < 0.2 {
			return
		}
	}
	require.Less(t, slices.Min(shares), 0.2, "share of the source's pages cached by the build, in each of three builds")
}

// cachedPages counts the whole pages of the files under root with the
// extension ext and those of them in the page cache (mincore); drop
// first asks the kernel to drop them (written out first).
func cachedPages(t *testing.T, root, ext string, drop bool) (pages, cached int) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ext {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if drop {
			if err := f.Sync(); err != nil {
				return err
			}
			if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
				return err
			}
		}
		whole := int(st.Size()) &^ (os.Getpagesize() - 1)
		if whole == 0 {
			return nil
		}
		m, err := unix.Mmap(int(f.Fd()), 0, whole, unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			return err
		}
		defer unix.Munmap(m)
		vec := make([]byte, whole/os.Getpagesize())
		if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
			return e
		}
		for _, v := range vec {
			pages++
			if v&1 != 0 {
				cached++
			}
		}
		return nil
	}))
	return pages, cached
}

// probeDirectHere reports whether dir's file system takes O_DIRECT writes.
func probeDirectHere(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "probe"), os.O_CREATE|os.O_WRONLY|unix.O_DIRECT, 0o644)
	if err != nil {
		return false
	}
	defer os.Remove(f.Name())
	defer f.Close()
	b := make([]byte, 2*4096)
	o := 4096 - int(unsafePointer(b)&4095)
	_, err = f.WriteAt(b[o%4096:o%4096+4096], 0)
	return err == nil
}

func unsafePointer(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

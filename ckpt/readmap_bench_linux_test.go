package ckpt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkCachedCopyVsMap measures what it costs to get the bytes of
// files the page cache holds into the process: copied by a file blob's
// ReadAt (readCached, into a 1 MiB buffer, as the diff engine reads), or
// mapped read-only in 8 MiB windows, populated with MAP_POPULATE, with
// madvise(MADV_POPULATE_READ) or by page faults (the kernel's fault-around),
// one byte read per page, then unmapped. Mapping saves the copy but pays
// per page table entry, which costs about as much as copying the page
// unless the page cache holds the file in PMD-size folios; compare the
// ns/op of the sub-benchmarks (MB/s counts the file bytes). The files
// are those of the directory $CKPT_BENCH_DIR (e.g. a fixture of
// go run ./cmd/internal/bench: the folios are then whatever that
// machine's page cache made of them), else one 256 MiB file written here.
func BenchmarkCachedCopyVsMap(b *testing.B) {
	var files []string
	if d := os.Getenv("CKPT_BENCH_DIR"); d != "" {
		m, err := filepath.Glob(filepath.Join(d, "*.safetensors"))
		if err != nil || len(m) == 0 {
			b.Fatalf("no .safetensors files in %s (%v)", d, err)
		}
		files = m
	} else {
		p := filepath.Join(b.TempDir(), "data")
		buf := []byte(strings.Repeat("ckpt", 1<<18)) // 1 MiB
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		for range 256 {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		files = []string{p}
	}
	var total int64
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			b.Fatal(err)
		}
		total += st.Size()
	}
	const window = 8 << 20
	page := os.Getpagesize()
	var sink byte
	mapped := func(how string) func(b *testing.B) {
		return func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				for _, p := range files {
					f, err := os.Open(p)
					if err != nil {
						b.Fatal(err)
					}
					st, err := f.Stat()
					if err != nil {
						b.Fatal(err)
					}
					for off := int64(0); off < st.Size(); off += window {
						n := int(min(st.Size()-off, window))
						flags := unix.MAP_SHARED
						if how == "populate" {
							flags |= unix.MAP_POPULATE
						}
						m, err := unix.Mmap(int(f.Fd()), off, n, unix.PROT_READ, flags)
						if err != nil {
							b.Fatal(err)
						}
						if how == "populate-read" {
							if err := unix.Madvise(m, unix.MADV_POPULATE_READ); err != nil {
								b.Skipf("madvise(MADV_POPULATE_READ): %v", err)
							}
						}
						for i := 0; i < n; i += page {
							sink += m[i]
						}
						if err := unix.Munmap(m); err != nil {
							b.Fatal(err)
						}
					}
					f.Close()
				}
			}
		}
	}
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(total)
		buf := make([]byte, 1<<20)
		for b.Loop() {
			for _, p := range files {
				bl, err := OpenFileBlob(p)
				if err != nil {
					b.Fatal(err)
				}
				for off := int64(0); off < bl.Size(); off += int64(len(buf)) {
					n := min(bl.Size()-off, int64(len(buf)))
					if _, err := bl.ReadAt(buf[:n], off); err != nil {
						b.Fatal(err)
					}
					sink += buf[0]
				}
				bl.Close()
			}
		}
	})
	b.Run("map-populate", mapped("populate"))
	b.Run("map-populate-read", mapped("populate-read"))
	b.Run("map-fault", mapped("fault"))
	_ = sink
}

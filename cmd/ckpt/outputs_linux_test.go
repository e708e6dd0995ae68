package main

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// charDevice makes a character device node in dir with the numbers of
// /dev/full (1, 7) or /dev/null (1, 3), so that a regression replaces the
// test's node, never the machine's. It skips the test where mknod is not
// permitted (not root, or a container without CAP_MKNOD).
func charDevice(t *testing.T, dir, name string, minor uint32) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, minor))); err != nil {
		t.Skipf("cannot make a character device node here (%v): the stream cases need one", err)
	}
	return p
}

// isCharDevice reports whether p (not followed) is still a character
// device.
func isCharDevice(t *testing.T, p string) bool {
	st, err := os.Lstat(p)
	require.NoError(t, err)
	return st.Mode()&os.ModeCharDevice != 0
}

// TestOutputStreams: an -o that is a character device or a FIFO is written
// through, never replaced: a FIFO's reader gets the report, the archive or
// the contract; a full device (as /dev/full) fails the write, exit 3
// "cannot write output", and stays a device; a null device takes the
// output, exit as usual. extract, which writes its file at offsets,
// refuses both (exit 2); a block device is refused by all (exit 2). (Before: the device node and the FIFO were
// replaced by regular files and the command said "wrote …".)
func TestOutputStreams(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	dir := t.TempDir()
	root, _ := builtCache(t)

	// FIFOs: the reader gets what was written.
	for _, tc := range []struct {
		name string
		args func(out string) []string
		code int
		want string
	}{
		{"diff", func(out string) []string { return []string{"diff", base, ft, "--format", "json", "-o", out} }, 1, `"schema_version"`},
		{"contract", func(out string) []string { return []string{"contract", base, "-o", out} }, 0, `"contract_version"`},
		{"pack", func(out string) []string { return []string{"cache", "pack", root, "-o", out} }, 0, "\x28\xb5\x2f\xfd"}, // the zstd magic
	} {
		fifo := filepath.Join(dir, tc.name+".fifo")
		require.NoError(t, syscall.Mkfifo(fifo, 0o644))
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo)
			if err != nil {
				got <- "open: " + err.Error()
				return
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			got <- string(b)
		}()
		code, stdout, stderr := runApp(t, append(tc.args(fifo), "--progress", "none")...)
		assert.Equal(t, tc.code, code, "%s: %s%s", tc.name, stdout, stderr)
		st, err := os.Lstat(fifo)
		require.NoError(t, err)
		if !assert.Equal(t, os.ModeNamedPipe, st.Mode()&os.ModeNamedPipe, "%s: the FIFO is still a FIFO", tc.name) {
			continue // its reader waits for ever: do not wait for it
		}
		select {
		case b := <-got:
			assert.Contains(t, b, tc.want, tc.name)
		case <-time.After(30 * time.Second):
			t.Errorf("%s: the FIFO's reader got nothing in 30 s", tc.name)
		}
	}

	full := charDevice(t, dir, "full", 7)
	null := charDevice(t, dir, "null", 3)
	for _, args := range [][]string{
		{"diff", base, ft, "-o", full},
		{"diff", base, ft, "--format", "html", "-o", full},
		{"contract", base, "-o", full},
		{"cache", "pack", root, "-o", full},
	} {
		code, stdout, stderr := runApp(t, append(args, "--progress", "none")...)
		assert.Equal(t, 3, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, "ckpt: cannot write output", "%v", args)
		assert.Contains(t, stderr, "no space left on device", "%v", args)
		assert.NotContains(t, stderr, "wrote", "%v", args)
		assert.True(t, isCharDevice(t, full), "%v: the device is still a device", args)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"diff", base, ft, "-o", null}, 1},
		{[]string{"contract", base, "-o", null}, 0},
		{[]string{"cache", "pack", root, "-o", null}, 0},
	} {
		code, stdout, stderr := runApp(t, append(tc.args, "--progress", "none")...)
		assert.Equal(t, tc.code, code, "%v: %s%s", tc.args, stdout, stderr)
		assert.True(t, isCharDevice(t, null), "%v: the device is still a device", tc.args)
	}
	// extract writes at offsets: a device or FIFO is refused, also
	// through a link; nothing replaces them.
	fifo := filepath.Join(dir, "x.safetensors")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	link := filepath.Join(dir, "null.safetensors")
	require.NoError(t, os.Symlink(null, link))
	for _, out := range []string{fifo, link, full} {
		code, stdout, stderr := runApp(t, "extract", base, "--match", "mtp.**", "--out", out, "--progress", "none")
		assert.Equal(t, 2, code, "%s: %s%s", out, stdout, stderr)
		assert.Regexp(t, "is a (FIFO|character device)", stderr)
	}
	assert.True(t, isCharDevice(t, full))
	assert.True(t, isCharDevice(t, null))
	st, err := os.Lstat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, st.Mode()&os.ModeNamedPipe)

	// A block device is refused by every writer, exit 2, and stays one
	// (numbers 0, 0: no device answers them, so a regression could not
	// write anywhere).
	blk := filepath.Join(dir, "blk")
	require.NoError(t, syscall.Mknod(blk, syscall.S_IFBLK|0o600, int(unix.Mkdev(0, 0))))
	for _, args := range [][]string{
		{"diff", base, ft, "-o", blk},
		{"contract", base, "-o", blk},
		{"cache", "pack", root, "-o", blk},
		{"extract", base, "--match", "mtp.**", "--out", blk},
	} {
		code, stdout, stderr := runApp(t, append(args, "--progress", "none")...)
		assert.Equal(t, 2, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, "is a block device", "%v", args)
		st, err := os.Lstat(blk)
		require.NoError(t, err)
		assert.True(t, st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0, "%v: the block device is still one", args)
	}
}

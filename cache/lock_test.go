package cache_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/stretchr/testify/require"
)

// TestLockReportsHolderWriteFailure: a lock whose holder's info cannot be
// written is an error (*atomicfile.WriteError), not a lock held silently without
// it. The lock file is a link to /dev/full, which opens and flocks but
// cannot be truncated or written.
func TestLockReportsHolderWriteFailure(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("needs /dev/full")
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/dev/full", filepath.Join(dir, cache.LockName)))
	l, err := cache.LockFolder(dir)
	if err == nil {
		l.Release()
	}
	require.ErrorIs(t, err, atomicfile.ErrWrite)
	require.ErrorContains(t, err, "writing lock "+filepath.Join(dir, cache.LockName))
}

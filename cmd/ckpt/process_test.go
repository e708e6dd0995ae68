package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The ckpt binary for tests that need real processes (locks, signals),
// built once per test run; TestMain removes binDir.
var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func ckptBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "ckpt-test-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ckpt")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if binErr = cmd.Run(); binErr != nil {
			binErr = &goBuildError{err: binErr, out: out.String()}
		}
	})
	require.NoError(t, binErr)
	return binPath
}

type goBuildError struct {
	err error
	out string
}

func (e *goBuildError) Error() string { return e.err.Error() + ": " + e.out }

// runBin runs the binary and returns its exit code, stdout and stderr.
func runBin(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(ckptBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), o.String(), e.String()
	}
	require.NoError(t, err)
	return 0, o.String(), e.String()
}

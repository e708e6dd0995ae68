package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// Tests that need real processes (locks, signals) share one ckpt binary
// and one medium fixture, made once per test run in binDir (TestMain
// removes it).
var (
	dirOnce sync.Once
	binDir  string
	dirErr  error

	binOnce sync.Once
	binPath string
	binErr  error

	medOnce sync.Once
	medPath string
	medErr  error
)

func sharedDir(t *testing.T) string {
	t.Helper()
	dirOnce.Do(func() { binDir, dirErr = os.MkdirTemp("", "ckpt-test-shared-") })
	require.NoError(t, dirErr)
	return binDir
}

// ckptBinary builds the command once.
func ckptBinary(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t)
	binOnce.Do(func() {
		binPath = filepath.Join(dir, "ckpt")
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

// mediumSource writes mediumFixture once (read-only for its users).
func mediumSource(t *testing.T) string {
	t.Helper()
	dir := sharedDir(t)
	medOnce.Do(func() {
		medPath = filepath.Join(dir, "medium")
		medErr = synth.Write(medPath, mediumFixture())
	})
	require.NoError(t, medErr)
	return medPath
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

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/stretchr/testify/require"
)

// TestInterrupt sends SIGINT and SIGTERM to real long-running commands:
// exit 130 / 143 with "interrupted: N of M files done; rerun to resume"
// for a cache build (and the rerun resumes), a plain "interrupted" line
// for others, never "context canceled".
func TestInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a ~130 MB fixture")
	}
	t.Parallel()
	dir := t.TempDir()
	src := mediumSource(t)
	out := filepath.Join(dir, "cache")
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	bin := ckptBinary(t)

	// start runs the command and signals it once ready() is true (or
	// after a delay), returning the exit code and stderr.
	start := func(sig syscall.Signal, ready func(pid int) bool, args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		// One thread at the lowest priority: on a loaded machine the
		// command must not finish between two polls of ready (it did,
		// once, at a load average of 10).
		cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
		require.NoError(t, cmd.Start())
		lowPriority(cmd.Process.Pid)
		deadline := time.Now().Add(60 * time.Second)
		for !ready(cmd.Process.Pid) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.NoError(t, cmd.Process.Signal(sig))
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the command finished before the signal: %s", stderr.String())
		return ee.ExitCode(), stderr.String()
	}
	// The build holds the folder's lock and has committed some files (the
	// journal has lines).
	journaled := func(pid int) bool {
		var li struct{ PID int }
		b, _ := os.ReadFile(filepath.Join(folder, ".ckpt-cache.lock"))
		if json.Unmarshal(b, &li) != nil || li.PID != pid {
			return false
		}
		b, _ = os.ReadFile(filepath.Join(folder, ".ckpt-cache-journal.jsonl"))
		return bytes.Count(b, []byte("\n")) >= 5
	}
	code, stderr := start(syscall.SIGINT, journaled, "cache", "build", src, "--out", out, "--progress", "none", "--workers", "1")
	require.Equal(t, 130, code, stderr)
	m := regexp.MustCompile(`ckpt: interrupted: (\d+) of (\d+) files done; rerun to resume\n$`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	require.NotContains(t, stderr, "context canceled")
	done, _ := strconv.Atoi(m[1])
	require.GreaterOrEqual(t, done, 5)
	require.NoFileExists(t, filepath.Join(folder, ".ckpt-cache.lock"))

	// SIGTERM: 143, the same line; the files done so far are kept.
	require.NoError(t, os.RemoveAll(out))
	code, stderr = start(syscall.SIGTERM, journaled, "cache", "build", src, "--out", out, "--progress", "none", "--workers", "1")
	require.Equal(t, 143, code, stderr)
	m = regexp.MustCompile(`ckpt: interrupted: (\d+) of (\d+) files done; rerun to resume\n$`).FindStringSubmatch(stderr)
	require.NotNil(t, m, stderr)
	done, _ = strconv.Atoi(m[1])

	// The rerun resumes and verifies.
	code, stdout, stderr := runBin(t, nil, "cache", "build", src, "--out", out, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var res build.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.GreaterOrEqual(t, res.Skipped, done)
	code, stdout, _ = runBin(t, nil, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout)

	// A command without resume: extract, signalled once its temporary
	// output grows; nothing is left behind.
	xdir := filepath.Join(dir, "x")
	require.NoError(t, os.MkdirAll(xdir, 0o755))
	writing := func(int) bool {
		ms, _ := filepath.Glob(filepath.Join(xdir, ".*tmp-*"))
		for _, m := range ms {
			if st, err := os.Stat(m); err == nil && st.Size() > 1<<20 {
				return true
			}
		}
		return false
	}
	code, stderr = start(syscall.SIGINT, writing, "extract", src, "--match", "**", "--dtype", "f32", "--out", filepath.Join(xdir, "all.safetensors"), "--progress", "none")
	require.Equal(t, 130, code, stderr)
	require.Equal(t, "ckpt: interrupted\n", stderr)
	left, err := os.ReadDir(xdir)
	require.NoError(t, err)
	require.Empty(t, left)
}

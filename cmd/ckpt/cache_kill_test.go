package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// mediumFixture is a ~130M-element FP8 checkpoint (Large's layout at
// hidden 768, 8 layers) whose cache build takes a second or more on one
// core.
func mediumFixture() synth.Options {
	o := synth.Large()
	o.Hidden, o.Intermediate, o.Layers, o.Heads, o.KVHeads, o.HeadDim = 768, 3072, 8, 8, 2, 128
	o.LinKHeads, o.LinVHeads, o.LinKDim, o.LinVDim, o.Vocab = 4, 8, 128, 128, 16384
	o.LayersPerShard = 2
	return o
}

// TestCacheBuildKilled kills a real `ckpt cache build` process at several
// points and checks that `ckpt cache verify` never accepts what is left,
// and that the next build completes (resuming) and verifies.
func TestCacheBuildKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and a ~130 MB fixture")
	}
	t.Parallel()
	tmp := t.TempDir()
	bin := ckptBinary(t)
	src := mediumSource(t)
	out := filepath.Join(tmp, "cache")
	files := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")

	run := func(args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), buf.String()
		}
		require.NoError(t, err)
		return 0, buf.String()
	}
	verify := func() (int, string) { return run("cache", "verify", out, "--source", src, "--progress", "none") }
	// countFiles counts committed .tensorbin files written since `since`.
	countFiles := func(since time.Time) int {
		n := 0
		filepath.WalkDir(files, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(p) == ".tensorbin" {
				if info, err := d.Info(); err == nil && !info.ModTime().Before(since) {
					n++
				}
			}
			return nil
		})
		return n
	}
	buildArgs := []string{"cache", "build", src, "--out", out, "--progress", "none", "--workers", "1", "--force", "--format", "json"}

	// fresh: start from an empty cache root; otherwise --force over the
	// complete cache of the previous round.
	type point struct {
		name  string
		fresh bool
		wait  func(start time.Time) bool // true: kill now
		after time.Duration
	}
	points := []point{
		{name: "fresh, 50ms", fresh: true, after: 50 * time.Millisecond},
		{name: "fresh, 200ms", fresh: true, after: 200 * time.Millisecond},
		{name: "fresh, 500ms", fresh: true, after: 500 * time.Millisecond},
		{name: "fresh, after 40 files", fresh: true, wait: func(st time.Time) bool { return countFiles(st) >= 40 }},
		{name: "over a complete cache, 10ms", after: 10 * time.Millisecond},
		{name: "over a complete cache, 300ms", after: 300 * time.Millisecond},
		{name: "over a complete cache, after 100 files", wait: func(st time.Time) bool { return countFiles(st) >= 100 }},
	}
	killedMidway := 0
	for _, p := range points {
		var before os.FileInfo
		if p.fresh {
			require.NoError(t, os.RemoveAll(out))
		} else {
			var err error
			before, err = os.Stat(filepath.Join(files, "manifest.json"))
			require.NoError(t, err, "%s: the previous round left no complete cache", p.name)
		}
		cmd := exec.Command(bin, buildArgs...)
		require.NoError(t, cmd.Start())
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var finished bool
	poll:
		for {
			select {
			case err := <-done:
				require.NoError(t, err, p.name)
				finished = true
				break poll
			case <-time.After(2 * time.Millisecond):
				if (p.wait == nil && time.Since(start) >= p.after) || (p.wait != nil && p.wait(start)) {
					require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
					if err := <-done; err == nil {
						finished = true // it completed just before the signal
					}
					break poll
				}
			}
		}
		t.Logf("%s: killed=%v after %v", p.name, !finished, time.Since(start).Round(time.Millisecond))
		code, msg := verify()
		if finished {
			require.Equal(t, 0, code, "%s: the build finished, verify must pass: %s", p.name, msg)
			continue
		}
		if code == 0 {
			// Only acceptable when the build was killed before it changed
			// anything: the previous complete cache and its manifest.
			require.NotNil(t, before, "%s: verify accepted a killed fresh build: %s", p.name, msg)
			after, err := os.Stat(filepath.Join(files, "manifest.json"))
			require.NoError(t, err)
			require.True(t, os.SameFile(before, after) && before.ModTime().Equal(after.ModTime()),
				"%s: verify accepted a cache whose manifest a killed build rewrote", p.name)
			continue
		}
		killedMidway++
		require.Equal(t, 1, code, "%s: verify accepted a killed build: %s", p.name, msg)

		// The next build completes, resuming what was finished, and verifies.
		code, msg = run("cache", "build", src, "--out", out, "--progress", "none", "--format", "json", "-q") // -q: the plan's warnings go to stderr, merged here
		require.Equal(t, 0, code, "%s: rebuild: %s", p.name, msg)
		var res build.Document
		require.NoError(t, json.Unmarshal([]byte(msg), &res), msg)
		require.Equal(t, res.Files, res.Skipped+len(res.Built), p.name)
		t.Logf("%s: the next build built %d files and kept %d", p.name, len(res.Built), res.Skipped)
		if p.wait != nil {
			require.Positive(t, res.Skipped, "%s: the rebuild did not resume from the journal", p.name)
		}
		code, msg = verify()
		require.Equal(t, 0, code, "%s: verify after rebuild: %s", p.name, msg)
	}
	require.Positive(t, killedMidway, "no kill landed mid-build: the fixture is too small for this machine")
}

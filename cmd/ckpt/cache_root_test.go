package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// TestCacheRootKeepsFolders: a 1x2 then a 1x1 build into one root (real
// processes) keep both caches; each verifies; a root with two folders
// is verified folder by folder.
func TestCacheRootKeepsFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "mm")
	for _, mesh := range []string{"1x2", "1x1"} {
		code, stdout, stderr := runBin(t, nil, "cache", "build", src, "--out", out, "--mesh", mesh, "--progress", "none")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, " built, 0 unchanged, 0 removed", mesh)
	}
	for _, mesh := range []string{"1x2", "1x1"} {
		folder := filepath.Join(out, map[string]string{"1x1": "P150", "1x2": "P300"}[mesh], "tensor_cache_bfp8_mesh"+mesh)
		require.FileExists(t, filepath.Join(folder, "manifest.json"))
		code, stdout, stderr := runBin(t, nil, "cache", "verify", folder, "--source", src, "--progress", "none")
		require.Equal(t, 0, code, "%s: %s%s", mesh, stdout, stderr)
		code, stdout, stderr = runBin(t, nil, "cache", "verify", out, "--mesh", mesh, "--source", src, "--progress", "none")
		require.Equal(t, 0, code, "%s: %s%s", mesh, stdout, stderr)
	}
	// Without --mesh, every folder of the root is verified, one verdict each.
	code, stdout, stderr := runBin(t, nil, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	require.Contains(t, stdout, "ok: 82 files")
	require.Contains(t, stdout, filepath.Join(out, "P150", "tensor_cache_bfp8_mesh1x1")+" match")
	require.Contains(t, stdout, filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")+" match")
	require.Contains(t, stdout, "4 cache folders in "+out+" checked: all ok") // each mesh's text and vision folder
	// Rebuilding 1x2 keeps everything of 1x1 and changes nothing.
	code, stdout, stderr = runBin(t, nil, "cache", "build", src, "--out", out, "--mesh", "1x2", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "0 built, 82 unchanged, 0 removed")
	code, stdout, _ = runBin(t, nil, "cache", "verify", out, "--mesh", "1x1", "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout)
}

// TestCacheConcurrentBuilds starts two builds into one root at once: one
// builds, the other exits 2 with one message naming the holder's pid, and
// the cache verifies.
func TestCacheConcurrentBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a ~130 MB fixture")
	}
	t.Parallel()
	dir := t.TempDir()
	src := mediumSource(t)
	out := filepath.Join(dir, "cache")
	bin := ckptBinary(t)
	type proc struct {
		cmd      *exec.Cmd
		out, err bytes.Buffer
	}
	var ps [2]*proc
	for i := range ps {
		p := &proc{cmd: exec.Command(bin, "cache", "build", src, "--out", out, "--progress", "none", "--workers", "1")}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.err
		require.NoError(t, p.cmd.Start())
		ps[i] = p
	}
	codes := map[int]int{}
	for i, p := range ps {
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			codes[i] = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
	}
	require.ElementsMatch(t, []int{0, 2}, []int{codes[0], codes[1]}, "stderr: %q / %q", ps[0].err.String(), ps[1].err.String())
	winner, loser := ps[0], ps[1]
	if codes[0] != 0 {
		winner, loser = ps[1], ps[0]
	}
	msg := loser.err.String()
	require.Contains(t, msg, "is being changed by another process (pid "+strconv.Itoa(winner.cmd.Process.Pid))
	require.Contains(t, msg, "cache build")
	require.Equal(t, 1, bytes.Count([]byte(msg), []byte("\n")), "one line: %q", msg)
	require.Empty(t, loser.out.String())
	code, stdout, stderr := runBin(t, nil, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	_, err := os.Stat(filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2", ".ckpt-cache.lock"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

package check_test

// Builds of several folders into one cache root, each verified: moved
// from package cache's tests (cache sits below cache/build and cache/check).

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/require"
)

func planFor(t *testing.T, c *ckpt.Checkpoint, mesh mapping.Mesh, tag string) *mapping.Plan {
	t.Helper()
	p, err := mapping.Builtin(mapping.BuiltinName)
	require.NoError(t, err)
	prof := *p
	if tag != "" {
		prof.Tag = tag
	}
	plan, err := mapping.BuildWith(c, &prof, mesh, nil, nil)
	require.NoError(t, err)
	return plan
}

func verifyFolder(t *testing.T, c *ckpt.Checkpoint, plan *mapping.Plan, out string) *check.FilesReport {
	t.Helper()
	f, err := cache.ResolveFolder(out, cache.Selector{Mesh: plan.Mesh.String(), Tag: plan.Profile.Tag})
	require.NoError(t, err)
	require.Equal(t, plan.CacheDir, f.Dir)
	m, err := cache.ReadManifest(f.Path())
	require.NoError(t, err)
	rep, err := check.Files(context.Background(), f.Root, m, c, plan, check.FilesOptions{})
	require.NoError(t, err)
	return rep
}

// TestFoldersCoexist: builds for other meshes and tags into one root keep
// each other's files; each folder verifies; a rebuild removes only what its
// own earlier build recorded and reports unknown files without deleting
// them.
func TestFoldersCoexist(t *testing.T) {
	t.Parallel()
	_, c, _ := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	ctx := context.Background()
	plans := []*mapping.Plan{
		planFor(t, c, mapping.Mesh{Rows: 1, Cols: 2}, ""),
		planFor(t, c, mapping.Mesh{Rows: 1, Cols: 1}, ""),
		planFor(t, c, mapping.Mesh{Rows: 1, Cols: 2}, "other"),
	}
	for _, p := range plans {
		res, err := build.Write(ctx, c, p, out, build.WriteOptions{Workers: 2})
		require.NoError(t, err, p.CacheDir)
		require.Empty(t, res.Removed, p.CacheDir)
		require.Len(t, res.Built, len(p.Entries), p.CacheDir)
	}
	folders, err := cache.Folders(out)
	require.NoError(t, err)
	require.Len(t, folders, 3)
	for _, p := range plans {
		rep := verifyFolder(t, c, p, out)
		require.True(t, rep.OK(), "%s: %+v", p.CacheDir, rep.Findings)
	}
	_, err = cache.ResolveFolder(out, cache.Selector{})
	var amb *cache.AmbiguousCacheError
	require.ErrorAs(t, err, &amb)
	require.Len(t, amb.Folders, 3)
	_, err = cache.ResolveFolder(out, cache.Selector{Mesh: "1x8"})
	var none *cache.NoCacheError
	require.ErrorAs(t, err, &none)
	require.Contains(t, none.Error(), "P150/tensor_cache_bfp8_mesh1x1")

	// An unknown file in a folder is reported by build and verify, never
	// deleted; files the earlier build recorded but the plan no longer has
	// are removed.
	dir := cache.FolderOf(out, plans[0].CacheDir).Path()
	mine := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(mine, []byte("mine"), 0o644))
	res, err := build.Write(ctx, c, plans[0], out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	require.Equal(t, []string{plans[0].CacheDir + "/notes.txt"}, res.Unknown)
	require.FileExists(t, mine)
	rep := verifyFolder(t, c, plans[0], out)
	require.Len(t, rep.Findings, 1)
	require.Equal(t, check.FindingExtra, rep.Findings[0].ID)
	require.NoError(t, os.Remove(mine))
	for _, p := range plans[1:] {
		require.True(t, verifyFolder(t, c, p, out).OK(), p.CacheDir)
	}
}

// TestBuildLock: a held lock refuses a second build naming the holder; a
// lock left by a dead process is taken over with a note.
func TestBuildLock(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	l, err := cache.LockFolder(dir)
	require.NoError(t, err)
	_, err = build.Write(context.Background(), c, plan, out, build.WriteOptions{})
	var le *cache.LockedError
	require.ErrorAs(t, err, &le)
	require.Equal(t, os.Getpid(), le.Holder.PID)
	require.Contains(t, le.Error(), "pid ")
	_, err = os.Stat(filepath.Join(dir, cache.ManifestName))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused build changed the folder")
	h, held := cache.LockHolder(dir)
	require.True(t, held)
	require.Equal(t, os.Getpid(), h.PID)
	l.Release()
	l.Release()
	_, held = cache.LockHolder(dir)
	require.False(t, held)

	// A lock file nobody holds (its process died).
	dead := cache.LockInfo{PID: 999999999, Command: "ckpt cache build gone"}
	b, _ := json.Marshal(dead)
	require.NoError(t, os.WriteFile(filepath.Join(dir, cache.LockName), b, 0o644))
	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	require.NotNil(t, res.StaleLock)
	require.Equal(t, dead.PID, res.StaleLock.PID)
	require.NoFileExists(t, filepath.Join(dir, cache.LockName))
	require.True(t, verifyFolder(t, c, plan, out).OK())

	// verify reports a build in progress.
	l, err = cache.LockFolder(dir)
	require.NoError(t, err)
	defer l.Release()
	rep := verifyFolder(t, c, plan, out)
	require.Len(t, rep.Findings, 1)
	require.Contains(t, rep.Findings[0].Message, "a build is changing the cache now (pid ")
}

// TestLegacyRootManifest: a cache built when the manifest lived at the
// cache root is taken over by the next build (nothing rebuilt) and the root
// manifest moves into the folder.
func TestLegacyRootManifest(t *testing.T) {
	t.Parallel()
	_, c, plan := fixture(t, synth.Small())
	out := filepath.Join(t.TempDir(), "cache")
	_, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	dir := cache.FolderOf(out, plan.CacheDir).Path()
	require.NoError(t, os.Rename(filepath.Join(dir, cache.ManifestName), filepath.Join(out, cache.ManifestName)))
	res, err := build.Write(context.Background(), c, plan, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	require.Empty(t, res.Built)
	require.Len(t, res.Skipped, len(plan.Entries))
	require.NoFileExists(t, filepath.Join(out, cache.ManifestName))
	require.FileExists(t, filepath.Join(dir, cache.ManifestName))
}

// TestBuildOtherSource: a build of another checkpoint into the same cache
// folder (same device, tag and mesh: the same file names) says whose cache
// it replaced; under another tag both stay.
func TestBuildOtherSource(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base, ft, err := synth.Pair(dir)
	require.NoError(t, err)
	cb, pb := openPlan(t, base)
	cf, pf := openPlan(t, ft)
	out := filepath.Join(dir, "cache")
	_, err = build.Write(context.Background(), cb, pb, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	res, err := build.Write(context.Background(), cf, planFor(t, cf, pf.Mesh, "ft"), out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	require.Empty(t, res.Replaced)
	require.True(t, verifyFolder(t, cb, pb, out).OK())
	res, err = build.Write(context.Background(), cf, pf, out, build.WriteOptions{Workers: 2})
	require.NoError(t, err)
	require.Equal(t, base, res.Replaced)
	require.True(t, verifyFolder(t, cf, pf, out).OK())
}

package check_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A build of a vision model writes both folders of the model, each with
// its manifest (the vision one marked as the vision part, each naming the
// other); cache verify of the root, of the main folder and of the vision
// folder checks both, --read-data included; a damaged vision file fails
// the check; the root resolves to the main folder (one model).
func TestVisionModelBuildAndVerify(t *testing.T) {
	t.Parallel()
	o := synth.Small4()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	for _, mesh := range []string{"1x2", "1x4"} {
		t.Run(mesh, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "cache")
			rep, err := build.Run(context.Background(), build.Options{Source: src, Out: out, Plan: mapping.PlanOptions{Mesh: mustMesh(t, mesh)}})
			require.NoError(t, err)
			require.Nil(t, rep.Problems)
			require.NotNil(t, rep.Document.Vision)
			vp := rep.Plan.Vision
			require.NotNil(t, vp)
			assert.Equal(t, 33, rep.Document.Vision.Files, "2 blocks of 12, the merger's 6, the embedding's 3")
			mm, err := cache.ReadManifest(cache.FolderOf(out, rep.Plan.CacheDir).Path())
			require.NoError(t, err)
			vm, err := cache.ReadManifest(cache.FolderOf(out, vp.CacheDir).Path())
			require.NoError(t, err)
			assert.Equal(t, "", mm.Part)
			assert.Equal(t, vp.CacheDir, mm.Companion)
			assert.Equal(t, mapping.PartVision, vm.Part)
			assert.Equal(t, rep.Plan.CacheDir, vm.Companion)
			assert.Equal(t, mapping.BuiltinName, vm.Profile, "the vision manifest names the main profile")
			assert.Equal(t, mesh, vm.Mesh)

			f, err := cache.ResolveFolder(out, cache.Selector{})
			require.NoError(t, err, "the root holds one model")
			assert.Equal(t, rep.Plan.CacheDir, f.Dir)
			f, err = cache.ResolveFolder(out, cache.Selector{Mesh: mesh})
			require.NoError(t, err)
			assert.Equal(t, rep.Plan.CacheDir, f.Dir)

			for _, dir := range []string{out, cache.FolderOf(out, rep.Plan.CacheDir).Path(), cache.FolderOf(out, vp.CacheDir).Path()} {
				res, err := check.Run(context.Background(), check.Options{Dir: dir, Source: src, ReadData: true})
				require.NoError(t, err, dir)
				assert.True(t, res.OK, "%s: %+v", dir, res)
			}
			res, err := check.Run(context.Background(), check.Options{Dir: out, Source: src, Select: cache.Selector{Mesh: mesh}})
			require.NoError(t, err)
			require.Len(t, res.Folders, 2, "--mesh selects the vision folder by its manifest's mesh")

			// A flipped byte in a vision file fails the check of the root.
			p := filepath.Join(out, filepath.FromSlash(vp.Entries[0].File))
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)-1] ^= 0x40
			require.NoError(t, os.WriteFile(p, b, 0o644))
			res, err = check.Run(context.Background(), check.Options{Dir: out, Source: src})
			require.NoError(t, err)
			assert.False(t, res.OK)
			var named bool
			for _, r := range res.Folders {
				for _, fi := range r.Findings {
					named = named || fi.Status == ckpt.Fail && fi.File() == vp.Entries[0].File
				}
			}
			assert.True(t, named, "the finding names the vision file")
		})
	}
}

// visionModel writes the tiny vision model (heads that divide by 4) and
// builds its cache on mesh; it returns the source, the cache root and the
// build's plan (Plan.Vision the vision part).
func visionModel(t *testing.T, mesh string) (string, string, *mapping.Plan) {
	t.Helper()
	o := synth.Small4()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	out := filepath.Join(t.TempDir(), "cache")
	rep, err := build.Run(context.Background(), build.Options{Source: src, Out: out, Plan: mapping.PlanOptions{Mesh: mustMesh(t, mesh)}, WriteOptions: build.WriteOptions{NoSync: true}})
	require.NoError(t, err)
	require.NotNil(t, rep.Plan.Vision)
	return src, out, rep.Plan
}

// cache verify of a text folder whose manifest names a vision folder that
// is not there passes, saying the vision folder was not verified (a
// warning, VisionNotVerified), and fails under Strict; of the cache root
// or device folder (the whole model) it fails with a companion finding
// naming the folder. Before, all three passed without a word.
func TestVerifyMissingVisionFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, out, plan := visionModel(t, "1x2")
	text, vision := cache.FolderOf(out, plan.CacheDir).Path(), cache.FolderOf(out, plan.Vision.CacheDir).Path()
	require.NoError(t, os.RemoveAll(vision))
	for _, dir := range []string{out, filepath.Dir(text)} {
		res, err := check.Run(ctx, check.Options{Dir: dir, Source: src})
		require.NoError(t, err, dir)
		assert.False(t, res.OK, dir)
		one := res.Single()
		require.NotNil(t, one)
		require.Len(t, one.Findings, 1)
		f := one.Findings[0]
		assert.Equal(t, check.FindingCompanion, f.ID)
		assert.Equal(t, ckpt.Fail, f.Status)
		assert.Equal(t, []string{plan.Vision.CacheDir}, f.Files)
		assert.Contains(t, f.Message, "is not there ("+vision+")")
		assert.Empty(t, one.VisionNotVerified)
	}
	res, err := check.Run(ctx, check.Options{Dir: text, Source: src})
	require.NoError(t, err)
	assert.True(t, res.OK)
	one := res.Single()
	assert.Equal(t, vision, one.VisionNotVerified)
	require.Len(t, one.Findings, 1)
	assert.Equal(t, check.FindingCompanion, one.Findings[0].ID)
	assert.Equal(t, ckpt.Warn, one.Findings[0].Status)
	res, err = check.Run(ctx, check.Options{Dir: text, Source: src, Strict: true})
	require.NoError(t, err)
	assert.False(t, res.OK, "--strict: the warning fails")
	assert.Equal(t, ckpt.Fail, res.Single().Findings[0].Status)
}

// mustMesh is the mesh of s ("1x4").
func mustMesh(t *testing.T, s string) mapping.Mesh {
	t.Helper()
	m, err := mapping.ParseMesh(s)
	require.NoError(t, err)
	return m
}

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
	o := synth.Small()
	o.Heads, o.KVHeads, o.LinKHeads, o.LinVHeads, o.Intermediate = 8, 4, 4, 8, 512
	o.VisionSize = synth.TinyVision()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	for _, mesh := range []string{"1x2", "1x4"} {
		t.Run(mesh, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "cache")
			rep, err := build.RunSource(context.Background(), build.Request{Source: src, Out: out, Plan: mapping.PlanOptions{Mesh: mesh}})
			require.NoError(t, err)
			require.Nil(t, rep.Problems)
			require.NotNil(t, rep.Summary.Vision)
			vp := rep.Plan.Vision
			require.NotNil(t, vp)
			assert.Equal(t, 33, rep.Summary.Vision.Files, "2 blocks of 12, the merger's 6, the embedding's 3")
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
				res, err := check.RunAll(context.Background(), check.Request{Dir: dir, Source: src, ReadData: true})
				require.NoError(t, err, dir)
				assert.True(t, res.OK, "%s: %+v", dir, res)
			}
			res, err := check.RunAll(context.Background(), check.Request{Dir: out, Source: src, Select: cache.Selector{Mesh: mesh}})
			require.NoError(t, err)
			require.Len(t, res.Folders, 2, "--mesh selects the vision folder by its manifest's mesh")

			// A flipped byte in a vision file fails the check of the root.
			p := filepath.Join(out, filepath.FromSlash(vp.Entries[0].File))
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[len(b)-1] ^= 0x40
			require.NoError(t, os.WriteFile(p, b, 0o644))
			res, err = check.RunAll(context.Background(), check.Request{Dir: out, Source: src})
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

// cache identify of a vision folder holds each candidate's vision part
// against it (not the text plan, which shares no file with it): a build's
// vision folder is exactly the built-in profile's, by names and headers and
// by data; the instruct folder is identified with instruct=true; a flipped
// byte is a data difference; without a source it is a usage error (names
// alone do not plan a vision folder). Before this, every vision file was
// "extra" and no candidate matched.
func TestIdentifyVisionFolder(t *testing.T) {
	t.Parallel()
	o := synth.Small()
	o.Heads, o.KVHeads, o.LinKHeads, o.LinVHeads, o.Intermediate = 8, 4, 4, 8, 512
	o.VisionSize = synth.TinyVision()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	ctx := context.Background()
	for _, instruct := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "cache")
		po := mapping.PlanOptions{Mesh: "1x4"}
		if instruct {
			po.Set = []string{"instruct=true"}
		}
		rep, err := build.RunSource(ctx, build.Request{Source: src, Out: out, Plan: po})
		require.NoError(t, err)
		vdir := cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()
		res, err := check.RunIdentify(ctx, check.IdentifyRequest{Dir: vdir, Source: src})
		require.NoError(t, err)
		require.NotNil(t, res.Best, "instruct=%v: %+v", instruct, res.Candidates)
		assert.True(t, res.Exact, "instruct=%v: %+v", instruct, res.Candidates)
		assert.True(t, res.DataCompared)
		assert.Equal(t, mapping.PartVision, res.Part)
		assert.Equal(t, 33, res.Files)
		assert.Equal(t, mapping.BuiltinName, res.Best.Profile)
		assert.Equal(t, "bfp8", res.Tag, "the text tag of the build that writes the folder")
		if instruct {
			assert.Equal(t, []string{"instruct=true"}, res.Best.Overrides)
		} else {
			assert.Empty(t, res.Best.Overrides)
		}
		if instruct {
			continue
		}
		_, err = check.IdentifyNames(ctx, vdir, check.IdentifyOptions{})
		var ue *ckpt.UsageError
		require.ErrorAs(t, err, &ue)
		assert.Contains(t, ue.Error(), "--source SRC")

		p := filepath.Join(out, filepath.FromSlash(rep.Plan.Vision.Entries[0].File))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)-1] ^= 0x40
		require.NoError(t, os.WriteFile(p, b, 0o644))
		res, err = check.RunIdentify(ctx, check.IdentifyRequest{Dir: vdir, Source: src})
		require.NoError(t, err)
		assert.False(t, res.Exact)
		assert.Equal(t, 1, res.Best.Data, "the flipped byte")
		assert.Equal(t, 0, res.Best.Differences, "names and headers still the plan's")
	}
}

package identify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/identify"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cache identify of a vision folder holds each candidate's vision part
// against it (not the text plan, which shares no file with it): a build's
// vision folder is exactly the built-in profile's, by names and headers and
// by data; the instruct folder is identified with instruct=true; a flipped
// byte is a data difference; without a source it is identified by names
// and headers alone (before, a usage error). Before this, every vision
// file was "extra" and no candidate matched.
func TestIdentifyVisionFolder(t *testing.T) {
	t.Parallel()
	o := synth.Small4()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	ctx := context.Background()
	for _, instruct := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "cache")
		po := mapping.PlanOptions{Mesh: mapping.Mesh{Rows: 1, Cols: 4}}
		if instruct {
			po.Set = mapping.Settings{"instruct": true}
		}
		rep, err := build.Run(ctx, build.Options{Source: src, Out: out, Plan: po})
		require.NoError(t, err)
		vdir := cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()
		res, err := identify.Run(ctx, identify.Options{Dir: vdir, Source: src})
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
		// By names and headers alone (the mesh from the manifest).
		res, err = identify.DirNames(ctx, vdir, identify.DirOptions{})
		require.NoError(t, err)
		assert.True(t, res.Exact, "%+v", res.Candidates)
		assert.True(t, res.NamesOnly)
		assert.Equal(t, mapping.BuiltinName, res.Best.Profile)
		assert.Empty(t, res.MeshFrom, "the manifest gives the mesh")

		p := filepath.Join(out, filepath.FromSlash(rep.Plan.Vision.Entries[0].File))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)-1] ^= 0x40
		require.NoError(t, os.WriteFile(p, b, 0o644))
		res, err = identify.Run(ctx, identify.Options{Dir: vdir, Source: src})
		require.NoError(t, err)
		assert.False(t, res.Exact)
		assert.Equal(t, 1, res.Best.Data, "the flipped byte")
		assert.Equal(t, 0, res.Best.Differences, "names and headers still the plan's")
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

// stackLike removes every file of the cache root that is not a
// .tensorbin file, as the serving stack writes only those: the build
// leaves nothing else but its two manifests.
func stackLike(t *testing.T, root string) {
	t.Helper()
	var removed []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == mapping.FileExt {
			return err
		}
		removed = append(removed, filepath.Base(p))
		return os.Remove(p)
	}))
	assert.Equal(t, []string{cache.ManifestName, cache.ManifestName}, removed, "ckpt's only files of its own")
}

// cache identify of a cache root or device folder names both folders of a
// vision model (the vision one under Vision, Exact covering both); of the
// text folder only that folder. A vision folder the text manifest names
// that is not there makes the root's identification not exact
// (VisionMissing). Before, the root's result was the text folder's alone.
func TestIdentifyModelRoot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, out, plan := visionModel(t, "1x2")
	text, vision := cache.FolderOf(out, plan.CacheDir).Path(), cache.FolderOf(out, plan.Vision.CacheDir).Path()
	for _, dir := range []string{out, filepath.Dir(text)} {
		res, err := identify.Run(ctx, identify.Options{Dir: dir, HeadersOnly: true})
		require.NoError(t, err, dir)
		assert.True(t, res.Exact, dir)
		assert.Equal(t, text, res.Dir)
		require.NotNil(t, res.Vision, dir)
		assert.Equal(t, vision, res.Vision.Dir)
		assert.Equal(t, mapping.PartVision, res.Vision.Part)
		assert.True(t, res.Vision.Exact)
		assert.Equal(t, src, res.Vision.Source, "the vision manifest's source")
		require.NotNil(t, res.SummaryRecord().Vision)
		assert.True(t, res.SummaryRecord().Vision.Exact)
	}
	res, err := identify.Run(ctx, identify.Options{Dir: text})
	require.NoError(t, err)
	assert.Nil(t, res.Vision, "a folder is that folder only")
	// The text manifest removed: the vision folder whose manifest names
	// the text folder is still its companion.
	bare := filepath.Join(t.TempDir(), "bare")
	require.NoError(t, os.CopyFS(bare, os.DirFS(out)))
	require.NoError(t, os.Remove(filepath.Join(cache.FolderOf(bare, plan.CacheDir).Path(), cache.ManifestName)))
	res, err = identify.Run(ctx, identify.Options{Dir: bare})
	require.NoError(t, err)
	assert.True(t, res.Exact)
	assert.True(t, res.NamesOnly)
	require.NotNil(t, res.Vision)
	assert.Equal(t, cache.FolderOf(bare, plan.Vision.CacheDir).Path(), res.Vision.Dir)

	// The vision folder damaged: the root is not exact, the text folder is.
	p := filepath.Join(out, filepath.FromSlash(plan.Vision.Entries[0].File))
	require.NoError(t, os.Remove(p))
	res, err = identify.Run(ctx, identify.Options{Dir: out})
	require.NoError(t, err)
	assert.False(t, res.Exact)
	assert.True(t, res.FolderExact())
	assert.Equal(t, 1, res.Vision.Best.Missing)
	// Not there at all: named, not identified, not exact.
	require.NoError(t, os.RemoveAll(vision))
	res, err = identify.Run(ctx, identify.Options{Dir: out})
	require.NoError(t, err)
	assert.False(t, res.Exact)
	assert.Nil(t, res.Vision)
	assert.Equal(t, vision, res.VisionMissing)
	assert.Equal(t, vision, res.SummaryRecord().VisionMissing)
	res, err = identify.Run(ctx, identify.Options{Dir: text})
	require.NoError(t, err)
	assert.True(t, res.Exact, "the text folder alone")
}

// A vision folder as the serving stack writes it (only the .tensorbin
// files, no manifest) is identified by its names and headers alone, its
// mesh inferred from its .tpN names and the text folder beside it (said
// in MeshFrom): alone, or with the text folder from the root or device
// folder. A removed file and a changed header are differences naming the
// file; names and a text folder that disagree on the mesh are refused
// (*cache.MeshError). Before, the folder had no mesh (an error), and
// without a source a vision folder was a usage error.
func TestIdentifyStackVisionFolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ mesh, tp, device string }{{"1x2", "tp2", "P300"}, {"1x4", "tp4", "P150x4"}} {
		t.Run(tc.mesh, func(t *testing.T) {
			t.Parallel()
			_, out, plan := visionModel(t, tc.mesh)
			stackLike(t, out)
			text, vision := cache.FolderOf(out, plan.CacheDir).Path(), cache.FolderOf(out, plan.Vision.CacheDir).Path()
			res, err := identify.Run(ctx, identify.Options{Dir: vision})
			require.NoError(t, err)
			require.NotNil(t, res.Best, "%+v", res.Candidates)
			assert.True(t, res.Exact, "%+v", res.Report)
			assert.True(t, res.NamesOnly)
			assert.Equal(t, mapping.PartVision, res.Part)
			assert.Equal(t, mapping.BuiltinName, res.Best.Profile)
			assert.Empty(t, res.Best.Overrides)
			assert.Equal(t, tc.mesh, res.Mesh)
			assert.Equal(t, tc.device, res.Device)
			assert.Equal(t, "the ."+tc.tp+" file names and the text folder "+plan.CacheDir+" beside it", res.MeshFrom)
			assert.Equal(t, 33, res.Files)

			for _, dir := range []string{out, filepath.Dir(text)} {
				res, err := identify.Run(ctx, identify.Options{Dir: dir})
				require.NoError(t, err, dir)
				assert.True(t, res.Exact, dir)
				assert.Equal(t, text, res.Dir)
				require.NotNil(t, res.Vision)
				assert.Equal(t, vision, res.Vision.Dir)
				assert.Equal(t, tc.mesh, res.Vision.Mesh)
				assert.NotEmpty(t, res.Vision.MeshFrom)
			}

			// Alone in another cache root: the names alone tell the mesh.
			alone := filepath.Join(t.TempDir(), tc.device, "tensor_cache_bfp8")
			require.NoError(t, os.CopyFS(alone, os.DirFS(vision)))
			res, err = identify.Run(ctx, identify.Options{Dir: alone})
			require.NoError(t, err)
			assert.True(t, res.Exact)
			assert.Equal(t, tc.mesh, res.Mesh)
			assert.Equal(t, "the ."+tc.tp+" file names (no text folder beside it)", res.MeshFrom)

			// Damaged: a file removed, a header changed; each named.
			removed := strings.TrimPrefix(plan.Vision.Entries[0].File, plan.Vision.CacheDir+"/")
			changed := strings.TrimPrefix(plan.Vision.Entries[1].File, plan.Vision.CacheDir+"/")
			require.NoError(t, os.Remove(filepath.Join(vision, removed)))
			require.NoError(t, cachetest.RewriteHeader(filepath.Join(vision, changed), func(h *tensorbin.Header) {
				h.Spec.Memory = tensorbin.WidthShardedConfig(int(h.Spec.Shape[len(h.Spec.Shape)-2]), int(h.Spec.Shape[len(h.Spec.Shape)-1]))
			}))
			for _, dir := range []string{vision, out} {
				res, err = identify.Run(ctx, identify.Options{Dir: dir})
				require.NoError(t, err)
				assert.False(t, res.Exact, dir)
				v := res
				if dir == out {
					assert.True(t, res.FolderExact(), "the text folder is undamaged")
					v = res.Vision
				}
				assert.Equal(t, 1, v.Best.Missing)
				assert.Equal(t, 1, v.Best.Headers)
				got := map[string]string{}
				for _, d := range v.ClosestReport().Diffs {
					got[d.File] = string(d.Kind) + ":" + d.Field
				}
				assert.Equal(t, map[string]string{removed: "missing:", changed: "header:memory_config"}, got)
			}

			// The names and the text folder beside it disagree: refused.
			other := "tp2"
			if tc.tp == "tp2" {
				other = "tp4"
			}
			wrong := filepath.Join(t.TempDir(), "wrong")
			require.NoError(t, os.CopyFS(wrong, os.DirFS(out)))
			wtext := filepath.Join(wrong, filepath.FromSlash(plan.CacheDir))
			require.NoError(t, os.Rename(wtext, strings.TrimSuffix(wtext, tc.mesh)+"1x"+strings.TrimPrefix(other, "tp")))
			for _, dir := range []string{wrong, filepath.Join(wrong, filepath.FromSlash(plan.Vision.CacheDir))} {
				_, err = identify.Run(ctx, identify.Options{Dir: dir})
				var me *cache.MeshError
				require.ErrorAs(t, err, &me, dir)
				assert.Equal(t, filepath.Join(wrong, filepath.FromSlash(plan.Vision.CacheDir)), me.Dir)
				assert.Contains(t, err.Error(), "its file names end in ."+tc.tp)
			}
		})
	}
}

// A vision folder built with host_vision_embed=true (no embedding files)
// is identified with that switch, by names and headers alone and with the
// source: each profile's vision part is tried with every setting of its
// switches (instruct as the folder's name says). Before, only the
// defaults were tried: three embedding files "missing", not exact.
func TestIdentifyVisionSwitches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := synth.Small()
	o.VisionSize = synth.TinyVision()
	src := t.TempDir()
	require.NoError(t, synth.Write(src, o))
	out := filepath.Join(t.TempDir(), "cache")
	rep, err := build.Run(ctx, build.Options{Source: src, Out: out, WriteOptions: build.WriteOptions{NoSync: true},
		Plan: mapping.PlanOptions{Mesh: mapping.DefaultMesh, Set: mapping.Settings{mapping.VarHostVisionEmbed: true}}})
	require.NoError(t, err)
	vision := cache.FolderOf(out, rep.Plan.Vision.CacheDir).Path()
	res, err := identify.Run(ctx, identify.Options{Dir: vision, Source: src})
	require.NoError(t, err)
	assert.True(t, res.Exact, "%+v", res.Candidates)
	assert.Equal(t, []string{mapping.VarHostVisionEmbed + "=true"}, res.Best.Overrides)
	assert.Equal(t, true, res.Best.Settings[mapping.VarHostVisionEmbed])
	stackLike(t, out)
	res, err = identify.Run(ctx, identify.Options{Dir: out})
	require.NoError(t, err)
	assert.True(t, res.Exact)
	require.NotNil(t, res.Vision)
	assert.True(t, res.Vision.NamesOnly)
	assert.Equal(t, []string{mapping.VarHostVisionEmbed + "=true"}, res.Vision.Best.Overrides)
	assert.Equal(t, 30, res.Vision.Files, "33 less the three embedding files")
}

// mustMesh is the mesh of s ("1x4").
func mustMesh(t *testing.T, s string) mapping.Mesh {
	t.Helper()
	m, err := mapping.ParseMesh(s)
	require.NoError(t, err)
	return m
}

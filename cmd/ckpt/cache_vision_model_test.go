package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/cachetest"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/mapping"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// visionModelCache writes the tiny vision model (heads that divide by 4,
// synth.TinyVision) and builds its cache on mesh into a new root; it
// returns the source, the root, the device folder, the text folder and the
// vision folder.
func visionModelCache(t *testing.T, mesh string) (src, root, device, text, vision string) {
	t.Helper()
	dir := t.TempDir()
	src = visionSource(t, dir)
	root = filepath.Join(dir, "cache")
	code, _, stderr := runApp(t, "cache", "build", src, "--out", root, "--mesh", mesh, "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, stderr)
	dev := map[string]string{"1x2": "P300", "1x4": "P150x4"}[mesh]
	device = filepath.Join(root, dev)
	return src, root, device, filepath.Join(device, "tensor_cache_bfp8_mesh"+mesh), filepath.Join(device, "tensor_cache_bfp8")
}

// visionSource writes the tiny vision model (synth.Small4: heads that divide by 4,
// synth.TinyVision) as dir/base and returns that path.
func visionSource(t *testing.T, dir string) string {
	t.Helper()
	o := synth.Small4()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, o))
	return src
}

// stackLikeCache removes every file that is not a .tensorbin file under
// root, as the serving stack writes only those; a ckpt build leaves
// nothing of its own there but its two manifests.
func stackLikeCache(t *testing.T, root string) {
	t.Helper()
	var removed []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) == mapping.FileExt {
			return err
		}
		removed = append(removed, filepath.Base(p))
		return os.Remove(p)
	}))
	require.Equal(t, []string{cache.ManifestName, cache.ManifestName}, removed)
}

// modelIdentifyDoc is the part of the cache identify JSON document of a
// whole model that these tests read.
type modelIdentifyDoc struct {
	Dir    string `json:"dir"`
	Mesh   string `json:"mesh"`
	Exact  bool   `json:"exact"`
	Vision *struct {
		Dir       string `json:"dir"`
		Part      string `json:"part"`
		Mesh      string `json:"mesh"`
		MeshFrom  string `json:"mesh_from"`
		Exact     bool   `json:"exact"`
		NamesOnly bool   `json:"names_only"`
		Best      struct {
			Profile string `json:"profile"`
		} `json:"best"`
	} `json:"vision"`
	VisionMissing string `json:"vision_missing"`
}

// cache identify of a vision model's cache root or device folder reports
// both folders, one closing line for both, the vision result under vision
// in JSON; the exit code covers both (a damaged vision folder: 1, though
// the text folder is exact), and a vision folder the manifest names that
// is not there is said to be not there and not identified (exit 1). On
// main the root's report was the text folder's alone, exit 0 in every
// case, and a device folder held "no cache folder" (exit 2).
func TestCacheIdentifyModelFolders(t *testing.T) {
	t.Parallel()
	_, root, device, text, vision := visionModelCache(t, "1x2")
	for _, dir := range []string{root, device} {
		code, stdout, stderr := runApp(t, "cache", "identify", dir, "--format", "text")
		require.Equal(t, 0, code, stdout+stderr)
		assert.Contains(t, stdout, text+" (82 files, mesh 1x2): exactly qwen36-mtp@pr55548, by names and headers\n")
		assert.Contains(t, stdout, "\nvision folder of the model: "+vision+"\n")
		assert.Contains(t, stdout, vision+" (33 files, mesh 1x2): exactly qwen36-mtp@pr55548, by names and headers\n")
		assert.Contains(t, stdout, "\nthe model's 2 cache folders: both folders reproduced: text folder "+text+" exact; vision folder "+vision+" exact\n")
		code, stdout, stderr = runApp(t, "cache", "identify", dir, "--format", "json")
		require.Equal(t, 0, code, stderr)
		var doc modelIdentifyDoc
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
		assert.True(t, doc.Exact)
		assert.Equal(t, text, doc.Dir)
		require.NotNil(t, doc.Vision)
		assert.Equal(t, vision, doc.Vision.Dir)
		assert.Equal(t, mapping.PartVision, doc.Vision.Part)
		assert.True(t, doc.Vision.Exact)
		code, stdout, _ = runApp(t, "cache", "identify", dir, "--format", "jsonl")
		require.Equal(t, 0, code)
		assert.Contains(t, stdout, `"vision":{"dir":"`+vision+`"`)
	}
	// The text folder named: that folder only.
	code, stdout, _ := runApp(t, "cache", "identify", text, "--format", "text")
	require.Equal(t, 0, code, stdout)
	assert.NotContains(t, stdout, "vision folder")

	// A vision file removed: exit 1 for the model, the text folder exact.
	files, err := cache.TensorbinFiles(vision)
	require.NoError(t, err)
	require.NoError(t, os.Remove(filepath.Join(vision, files[0])))
	code, stdout, _ = runApp(t, "cache", "identify", root, "--format", "text")
	require.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, files[0])
	assert.Contains(t, stdout, "the model's 2 cache folders: NOT both reproduced: text folder "+text+" exact; vision folder "+vision+" NOT reproduced (closest: 1 difference(s))\n")
	code, _, _ = runApp(t, "cache", "identify", text)
	assert.Equal(t, 0, code, "the text folder alone is exact")

	// The vision folder not there.
	require.NoError(t, os.RemoveAll(vision))
	code, stdout, _ = runApp(t, "cache", "identify", root, "--format", "text")
	require.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "vision folder "+vision+" (named by the manifest of "+text+") is not there: not identified; the model is not complete\n")
	code, stdout, _ = runApp(t, "cache", "identify", device, "--format", "json")
	require.Equal(t, 1, code, stdout)
	var doc modelIdentifyDoc
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.False(t, doc.Exact)
	assert.Nil(t, doc.Vision)
	assert.Equal(t, vision, doc.VisionMissing)
}

// A vision model's cache as the serving stack writes it (only .tensorbin
// files), at 1x2 and 1x4: cache identify of its vision folder, its root
// and its device folder names the profile and the mesh, the vision
// folder's mesh inferred from its .tpN names and the text folder beside it
// (said so); a removed file and a changed header are differences naming
// the file (exit 1); names and a text folder that disagree on the mesh are
// refused naming the folder (exit 2). On main the vision folder exited 2
// (no mesh), and the root was ambiguous (two cache folders, exit 2).
func TestCacheIdentifyStackVisionFolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ mesh, tp, other, device string }{{"1x2", "tp2", "1x4", "P300"}, {"1x4", "tp4", "1x2", "P150x4"}} {
		t.Run(tc.mesh, func(t *testing.T) {
			t.Parallel()
			_, root, device, text, vision := visionModelCache(t, tc.mesh)
			stackLikeCache(t, root)
			inferred := "mesh " + tc.mesh + " inferred from the ." + tc.tp + " file names and the text folder " + tc.device + "/tensor_cache_bfp8_mesh" + tc.mesh + " beside it\n"
			code, stdout, stderr := runApp(t, "cache", "identify", vision, "--format", "text")
			require.Equal(t, 0, code, stdout+stderr)
			assert.Contains(t, stdout, inferred)
			assert.Contains(t, stdout, vision+" (33 files, mesh "+tc.mesh+"): qwen36-mtp@pr55548 plans these names and headers for the vision blocks and parts the names show, by names and headers alone (no source)")
			assert.Contains(t, stdout, "reproduce it with: ckpt cache build SRC --out "+root+" --profile qwen36-mtp@pr55548 --mesh "+tc.mesh+" --device "+tc.device+"\n")
			for _, dir := range []string{root, device} {
				code, stdout, stderr = runApp(t, "cache", "identify", dir, "--format", "text")
				require.Equal(t, 0, code, stdout+stderr)
				assert.Contains(t, stdout, text+" (82 files, mesh "+tc.mesh+"): qwen36-mtp@pr55548 plans these names and headers")
				assert.Contains(t, stdout, inferred)
				assert.Contains(t, stdout, "the model's 2 cache folders: both folders reproduced: text folder "+text+
					" names and headers as planned (no source); vision folder "+vision+" names and headers as planned (no source)\n")
				code, stdout, _ = runApp(t, "cache", "identify", dir, "--format", "json")
				require.Equal(t, 0, code)
				var doc modelIdentifyDoc
				require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
				require.NotNil(t, doc.Vision)
				assert.True(t, doc.Vision.NamesOnly)
				assert.Equal(t, tc.mesh, doc.Vision.Mesh)
				assert.Equal(t, strings.TrimSuffix(strings.TrimPrefix(inferred, "mesh "+tc.mesh+" inferred from "), "\n"), doc.Vision.MeshFrom)
				assert.Equal(t, mapping.ProfileMTP, doc.Vision.Best.Profile)
			}

			// Damaged: one file removed, one header changed.
			files, err := cache.TensorbinFiles(vision)
			require.NoError(t, err)
			removed, changed := files[0], files[1]
			require.NoError(t, os.Remove(filepath.Join(vision, removed)))
			require.NoError(t, cachetest.RewriteHeader(filepath.Join(vision, changed), func(h *tensorbin.Header) {
				h.Spec.Memory = tensorbin.WidthShardedConfig(int(h.Spec.Shape[len(h.Spec.Shape)-2]), int(h.Spec.Shape[len(h.Spec.Shape)-1]))
			}))
			for _, dir := range []string{vision, root} {
				code, stdout, _ = runApp(t, "cache", "identify", dir, "--format", "text")
				require.Equal(t, 1, code, stdout)
				assert.Regexp(t, `(?m)^missing +`+removed, stdout)
				assert.Regexp(t, `(?m)^header +`+changed+` +memory_config`, stdout)
			}

			// The names and the text folder beside it disagree: exit 2,
			// naming the folder.
			require.NoError(t, os.Rename(text, filepath.Join(device, "tensor_cache_bfp8_mesh"+tc.other)))
			for _, dir := range []string{vision, root} {
				code, stdout, stderr = runApp(t, "cache", "identify", dir)
				require.Equal(t, 2, code, stdout+stderr)
				assert.Contains(t, stderr, "ckpt: vision folder "+vision+": cannot tell its mesh: its file names end in ."+tc.tp)
				assert.Contains(t, stderr, "and the text folder beside it, "+tc.device+"/tensor_cache_bfp8_mesh"+tc.other+", is for mesh "+tc.other+"\n")
			}
		})
	}
}

// cache verify of a text folder whose vision folder (named by its
// manifest) is missing passes, saying plainly that the vision folder was
// not found and not verified (JSON vision_not_verified) and claiming
// nothing of the model; --strict fails it; verify of the cache root or
// device folder (the whole model) fails with a companion finding naming
// the folder. On main all of these exited 0 with a plain "ok".
func TestCacheVerifyMissingVisionFolder(t *testing.T) {
	t.Parallel()
	src, root, device, text, vision := visionModelCache(t, "1x2")
	require.NoError(t, os.RemoveAll(vision))
	code, stdout, stderr := runApp(t, "cache", "verify", text, "--source", src, "--progress", "none", "--format", "text")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "companion (warning): P300/tensor_cache_bfp8: the vision folder "+vision+" that this folder's manifest names is not there: not verified;")
	assert.Contains(t, stdout, "ok (text folder only: the vision folder "+vision+" was not found and not verified): 82 files")
	assert.NotContains(t, stdout, "\nok: ")
	code, stdout, _ = runApp(t, "cache", "verify", text, "--source", src, "--progress", "none", "--format", "json")
	require.Equal(t, 0, code)
	var doc struct {
		OK                bool   `json:"ok"`
		VisionNotVerified string `json:"vision_not_verified"`
		Findings          []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"findings"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.True(t, doc.OK)
	assert.Equal(t, vision, doc.VisionNotVerified)
	require.Len(t, doc.Findings, 1)
	assert.Equal(t, "companion", doc.Findings[0].ID)
	assert.Equal(t, "warn", doc.Findings[0].Status)
	code, stdout, _ = runApp(t, "cache", "verify", text, "--source", src, "--progress", "none", "--format", "text", "--strict")
	require.Equal(t, 1, code, stdout)
	assert.Contains(t, stdout, "FAILED: 1 problem(s) in "+text)

	for _, dir := range []string{root, device} {
		code, stdout, _ = runApp(t, "cache", "verify", dir, "--source", src, "--progress", "none", "--format", "text")
		require.Equal(t, 1, code, stdout)
		assert.Contains(t, stdout, "companion: P300/tensor_cache_bfp8: the vision folder P300/tensor_cache_bfp8 that the manifest of P300/tensor_cache_bfp8_mesh1x2 names is not there ("+vision+"): the model's cache is incomplete\n")
		assert.Contains(t, stdout, "FAILED: 1 problem(s) in "+dir)
		assert.NotRegexp(t, `(?m)^ok`, stdout)
	}
	// With the vision folder there the root checks both folders.
	_, root2, device2, _, _ := visionModelCache(t, "1x2")
	for _, dir := range []string{root2, device2} {
		code, stdout, _ = runApp(t, "cache", "verify", dir, "--progress", "none", "--format", "text")
		require.Equal(t, 0, code, stdout)
		assert.Contains(t, stdout, "2 cache folders in "+dir+" checked: all ok\n")
	}
}

// A device folder that opens both meshes holds one vision folder (the
// stack's naming has no mesh in it): a 1x4 build after a 1x2 build into
// the same device folder replaces the vision folder the 1x2 text folder's
// manifest names. The 1x4 build says so, and verify of the 1x2 model does
// not call it complete: of the text folder alone a warning (a failure with
// --strict) that its vision folder holds another model's vision part, of
// the device folder a failure. On main the build said nothing and both
// verifies were "ok" (the vision folder checked against its own, 1x4,
// manifest).
func TestCacheVisionFolderOfAnotherMesh(t *testing.T) {
	dir := t.TempDir()
	src := visionSource(t, dir)
	root := filepath.Join(dir, "cache")
	build := func(mesh string) string {
		code, stdout, stderr := runApp(t, "cache", "build", src, "--out", root, "--mesh", mesh, "--device", "P150x4", "--progress", "none", "--fsync=false")
		require.Equal(t, 0, code, stderr)
		return stdout + stderr
	}
	out := build("1x2")
	assert.NotContains(t, out, "vision part of")
	out = build("1x4")
	assert.Contains(t, out, "held the vision part of P150x4/tensor_cache_bfp8_mesh1x2")

	text := filepath.Join(root, "P150x4", "tensor_cache_bfp8_mesh1x2")
	code, stdout, stderr := runApp(t, "cache", "verify", text, "--progress", "none")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout+stderr, "holds the vision part of P150x4/tensor_cache_bfp8_mesh1x4")
	assert.Contains(t, stdout, "ok (text folder only: the vision folder "+filepath.Join(root, "P150x4", "tensor_cache_bfp8")+" holds the vision part of P150x4/tensor_cache_bfp8_mesh1x4 and was not verified)")
	assert.NotContains(t, stdout, "all ok")
	code, stdout, _ = runApp(t, "cache", "verify", text, "--progress", "none", "--format", "json")
	assert.Equal(t, 0, code)
	var doc struct {
		VisionNotVerified string `json:"vision_not_verified"`
		VisionOwner       string `json:"vision_owner"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, filepath.Join(root, "P150x4", "tensor_cache_bfp8"), doc.VisionNotVerified)
	assert.Equal(t, "P150x4/tensor_cache_bfp8_mesh1x4", doc.VisionOwner)
	code, _, stderr = runApp(t, "cache", "verify", text, "--progress", "none", "--strict")
	assert.Equal(t, 1, code, stderr)

	code, stdout, stderr = runApp(t, "cache", "verify", filepath.Join(root, "P150x4"), "--progress", "none")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout+stderr, "holds the vision part of P150x4/tensor_cache_bfp8_mesh1x4")

	// The 1x4 model itself is complete.
	code, stdout, stderr = runApp(t, "cache", "verify", filepath.Join(root, "P150x4", "tensor_cache_bfp8_mesh1x4"), "--progress", "none", "--strict")
	assert.Equal(t, 0, code, stdout+stderr)
}

// The same for another model under another tag: a fine-tune built with
// --tag ft beside the base takes the device folder's one vision folder
// over (said, and the base's model is then incomplete); the same model
// under another tag writes the same vision files (no note, both ok).
func TestCacheVisionFolderOfAnotherTag(t *testing.T) {
	dir := t.TempDir()
	o := synth.Small()
	o.VisionSize = synth.TinyVision()
	base, ft := filepath.Join(dir, "base"), filepath.Join(dir, "ft")
	require.NoError(t, synth.Write(base, o))
	require.NoError(t, synth.Write(ft, o))
	root := filepath.Join(dir, "cache")
	build := func(src, tag string) string {
		code, stdout, stderr := runApp(t, "cache", "build", src, "--out", root, "--mesh", "1x2", "--tag", tag, "--progress", "none", "--fsync=false")
		require.Equal(t, 0, code, stderr)
		return stdout + stderr
	}
	verifyDevice := func() (int, string) {
		code, stdout, stderr := runApp(t, "cache", "verify", filepath.Join(root, "P300"), "--progress", "none")
		return code, stdout + stderr
	}
	build(base, "bfp8")
	assert.NotContains(t, build(base, "again"), "held the vision part of")
	code, out := verifyDevice()
	assert.Equal(t, 0, code, out)

	assert.Contains(t, build(ft, "ft"), "held the vision part of P300/tensor_cache_again_mesh1x2")
	code, out = verifyDevice()
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "holds the vision part of P300/tensor_cache_ft_mesh1x2, not of this folder")
}

// cache identify of a whole model (root or device folder, --mesh
// choosing the text folder) whose device folder's one vision folder is
// another model's: a later build of another mesh took it over (its
// manifest names that folder), or, written by the stack, its .tpN names
// are of another mesh. The vision folder reproduces, but the model is not
// complete: exit 1, the closing line says so, JSON and JSON Lines carry
// vision_other (and vision_owner when a manifest names the owner). The
// model that owns it is exact. On main both exited 0, "both folders
// reproduced", while cache verify of the same device folder failed.
func TestCacheIdentifyVisionFolderOfAnotherModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := visionSource(t, dir)
	root := filepath.Join(dir, "cache")
	for _, mesh := range []string{"1x4", "1x2"} { // the 1x2 build takes the vision folder over
		code, _, stderr := runApp(t, "cache", "build", src, "--out", root, "--mesh", mesh, "--device", "P150x4", "--progress", "none", "--fsync=false")
		require.Equal(t, 0, code, stderr)
	}
	device := filepath.Join(root, "P150x4")
	text4, vision := filepath.Join(device, "tensor_cache_bfp8_mesh1x4"), filepath.Join(device, "tensor_cache_bfp8")
	check := func(t *testing.T, other, owner string) {
		for _, d := range []string{root, device} {
			code, stdout, stderr := runApp(t, "cache", "identify", d, "--mesh", "1x4", "--format", "text")
			assert.Equal(t, 1, code, stdout+stderr)
			assert.Contains(t, stdout, "the model's 2 cache folders: NOT both reproduced: text folder "+text4)
			assert.Contains(t, stdout, "vision folder "+vision+" is another model's ("+other+"): the model is not complete\n")
			assert.NotContains(t, stdout, "both folders reproduced")
			code, stdout, _ = runApp(t, "cache", "identify", d, "--mesh", "1x4", "--format", "json")
			assert.Equal(t, 1, code)
			var doc struct {
				Exact       bool   `json:"exact"`
				VisionOther string `json:"vision_other"`
				VisionOwner string `json:"vision_owner"`
				Vision      *struct {
					Mesh string `json:"mesh"`
				} `json:"vision"`
			}
			require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
			assert.False(t, doc.Exact)
			assert.Equal(t, other, doc.VisionOther)
			assert.Equal(t, owner, doc.VisionOwner)
			require.NotNil(t, doc.Vision)
			assert.Equal(t, "1x2", doc.Vision.Mesh)
			code, stdout, _ = runApp(t, "cache", "identify", d, "--mesh", "1x4", "--format", "jsonl")
			assert.Equal(t, 1, code)
			assert.Contains(t, stdout, `"exact":false`)
			assert.Contains(t, stdout, `"vision_other":"`+other+`"`)
			// The model that owns it is complete.
			code, stdout, stderr = runApp(t, "cache", "identify", d, "--mesh", "1x2", "--format", "text")
			assert.Equal(t, 0, code, stdout+stderr)
			assert.Contains(t, stdout, "the model's 2 cache folders: both folders reproduced")
		}
	}
	t.Run("manifest", func(t *testing.T) {
		check(t, "its manifest says it holds the vision part of P150x4/tensor_cache_bfp8_mesh1x2, not of this folder", "P150x4/tensor_cache_bfp8_mesh1x2")
	})
	t.Run("stack", func(t *testing.T) {
		require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(p) == mapping.FileExt {
				return err
			}
			return os.Remove(p)
		}))
		check(t, "it is for mesh 1x2, not this folder's 1x4", "")
	})
}

// cache identify of a whole model whose vision folder (named by the text
// folder's manifest) holds no .tensorbin file any more: the model is not
// complete, a difference (exit 1, as cache verify fails it), said in the
// text and in JSON / JSON Lines (vision_empty), the text folder still
// identified. On main it exited 2 ("holds no .tensorbin file: nothing to
// identify"), the text folder's result not printed.
func TestCacheIdentifyEmptyVisionFolder(t *testing.T) {
	t.Parallel()
	_, root, device, text, vision := visionModelCache(t, "1x2")
	files, err := cache.TensorbinFiles(vision)
	require.NoError(t, err)
	for _, f := range files {
		require.NoError(t, os.Remove(filepath.Join(vision, f)))
	}
	for _, dir := range []string{root, device} {
		code, stdout, stderr := runApp(t, "cache", "identify", dir, "--format", "text")
		assert.Equal(t, 1, code, stdout+stderr)
		assert.Contains(t, stdout, text+" (82 files, mesh 1x2): exactly qwen36-mtp@pr55548")
		assert.Contains(t, stdout, "vision folder "+vision+" of the model holds no .tensorbin file: not identified; the model is not complete\n")
		code, stdout, _ = runApp(t, "cache", "identify", dir, "--format", "json")
		assert.Equal(t, 1, code)
		var doc struct {
			Exact       bool   `json:"exact"`
			VisionEmpty string `json:"vision_empty"`
		}
		require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
		assert.False(t, doc.Exact)
		assert.Equal(t, vision, doc.VisionEmpty)
		code, stdout, _ = runApp(t, "cache", "identify", dir, "--format", "jsonl")
		assert.Equal(t, 1, code)
		assert.Contains(t, stdout, `"exact":false`)
		assert.Contains(t, stdout, `"vision_empty":"`+vision+`"`)
	}
	code, _, _ := runApp(t, "cache", "verify", root, "--progress", "none")
	assert.Equal(t, 1, code, "verify agrees")
}

// cache identify of a whole model built with a vision switch (instruct,
// host_vision_embed) and another tag, as ckpt and as the stack writes it:
// the text folder's line lacks the vision switch and the vision folder's
// lacks the tag, so neither rebuilds the model; one closing line with
// both does (and is not printed when the text folder's line covers
// both). On main there was no such line: the closest to it, the vision
// folder's, built tensor_cache_bfp8_mesh1x2, not the tag's text folder.
func TestCacheIdentifyModelBuildLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := visionSource(t, dir)
	for _, tc := range []struct{ name, set string }{{"instruct", "instruct=true"}, {"hve", "host_vision_embed=true"}, {"plain", ""}} {
		root := filepath.Join(dir, tc.name)
		args := []string{"cache", "build", src, "--out", root, "--mesh", "1x4", "--tag", "ft", "--progress", "none", "--fsync=false"}
		if tc.set != "" {
			args = append(args, "--set", tc.set)
		}
		code, _, stderr := runApp(t, args...)
		require.Equal(t, 0, code, stderr)
		want := "reproduce the model (both folders) with: ckpt cache build " + src + " --out " + root +
			" --profile qwen36-mtp@pr55548 --mesh 1x4 --device P150x4 --tag ft --set " + tc.set + "\n"
		code, stdout, stderr := runApp(t, "cache", "identify", root, "--format", "text")
		require.Equal(t, 0, code, stdout+stderr)
		if tc.set == "" {
			assert.NotContains(t, stdout, "reproduce the model", tc.name)
			continue
		}
		assert.Contains(t, stdout, want, tc.name)
		// As the stack writes it: the same line, SRC for the source.
		stackLikeCache(t, root)
		code, stdout, stderr = runApp(t, "cache", "identify", root, "--format", "text")
		require.Equal(t, 0, code, stdout+stderr)
		assert.Contains(t, stdout, strings.Replace(want, "build "+src, "build SRC", 1), tc.name)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/cache/list"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt/source"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of issue #25 (daily use II): streams, guard rails, hints.

// buildSmall builds the small fixture's cache for mesh into out.
func buildSmall(t *testing.T, src, out, mesh string) {
	t.Helper()
	code, stdout, stderr := runApp(t, "cache", "build", src, "--out", out, "--mesh", mesh, "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
}

// TestQuietStreams: map and cache build print their warnings and notes on
// stderr, prefixed "ckpt: ", never on stdout; -q leaves stderr empty; a
// -q run that fails prints its error and nothing else.
func TestQuietStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))

	// map: the small fixture's plan has TILE padding warnings.
	code, stdout, stderr := runApp(t, "map", src, "--mesh", "1x2", "--format", "text")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "warning:")
	assert.Contains(t, stderr, "ckpt: warning: gdn.A_log (3 targets): per-device width 2 is not a multiple of 32 (TILE pads it)\n")
	code, stdout, stderr = runApp(t, "map", src, "--mesh", "1x2", "--format", "text", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	assert.Contains(t, stdout, ": complete\n")

	// cache build: the same warnings, and a note about a file no build
	// recorded.
	out := filepath.Join(dir, "cache")
	buildSmall(t, src, out, "1x2")
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.WriteFile(filepath.Join(folder, "stray.txt"), []byte("x"), 0o644))
	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--progress", "plain")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "note:")
	assert.NotContains(t, stdout, "warning:")
	assert.Contains(t, stdout, "0 built, 82 unchanged, 0 removed")
	assert.Contains(t, stderr, "ckpt: note: 1 file(s) in the cache folder are not from a ckpt build and were left alone (first: P300/tensor_cache_bfp8_mesh1x2/stray.txt)\n")
	assert.Contains(t, stderr, "ckpt: warning: gdn.A_log")
	for _, args := range [][]string{
		{"cache", "build", src, "--out", out, "--progress", "plain", "-q"},
		{"cache", "build", src, "--out", out, "--progress", "plain", "-q", "--format", "json"},
		{"cache", "pack", out, "--output", filepath.Join(dir, "c.tar.zst"), "--progress", "plain", "-q"}, // deprecated spelling: no note either
	} {
		code, stdout, stderr = runApp(t, args...)
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stderr, args)
		assert.NotEmpty(t, stdout, args)
	}
	// The JSON document keeps the warnings and notes.
	code, stdout, _ = runApp(t, "cache", "build", src, "--out", out, "--progress", "none", "-q", "--format", "json")
	require.Equal(t, 0, code)
	var doc struct{ Warnings []string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Contains(t, strings.Join(doc.Warnings, "\n"), "not from a ckpt build")

	// Errors stay.
	code, stdout, stderr = runApp(t, "map", filepath.Join(dir, "missing"), "-q")
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	assert.True(t, strings.HasPrefix(stderr, "ckpt: "), stderr)
}

// TestCacheBuildRefusesCheckpointDir: swapped arguments (the checkpoint
// as the cache root) are refused with exit 2 before anything is written.
func TestCacheBuildRefusesCheckpointDir(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	before := listTree(t, src)
	for _, args := range [][]string{
		{"cache", "build", src, "--out", src},
		{"cache", "build", src, "-o", src + "/", "--mesh", "1x1", "--format", "json"},
	} {
		code, stdout, stderr := runApp(t, append(args, "--progress", "plain")...)
		assert.Equal(t, 2, code, args)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, "refusing to build a cache into "+args[4]+": it holds a checkpoint (model.safetensors.index.json), not a cache root; are the source and the output swapped?")
		assert.NotContains(t, stderr, "cache build:", "no progress line")
		assert.Equal(t, before, listTree(t, src), "nothing written")
	}
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	}))
	return out
}

// TestCacheUnfinishedNamed: a cache folder whose build did not finish (no
// manifest, the build journal left behind) is named as such by cache ls,
// verify and pack, exit 1, with no raw "open .../manifest.json" and no
// stray progress line.
func TestCacheUnfinishedNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "cache")
	buildSmall(t, src, out, "1x2")
	folder := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	// What a build killed before its end leaves: files, a journal, no manifest.
	require.NoError(t, os.Remove(filepath.Join(folder, cache.ManifestName)))
	require.NoError(t, os.WriteFile(filepath.Join(folder, cache.JournalName), nil, 0o644))
	want := folder + " is an unfinished build: no manifest.json, a build there stopped before it finished (82 .tensorbin file(s) so far); run cache build again to resume it"

	for _, target := range []string{folder, out} {
		code, stdout, stderr := runApp(t, "cache", "ls", target, "--format", "text")
		assert.Equal(t, 1, code, target)
		n := "82 files, "
		if target == out {
			n = "103 files, " // the root holds the vision folder's 21 too
		}
		assert.Contains(t, stdout, n)
		assert.Contains(t, stdout, "(UNFINISHED build: no manifest)\n")
		assert.Equal(t, "ckpt: "+want+"\n", stderr)
		code, stdout, _ = runApp(t, "cache", "ls", target, "--format", "json")
		assert.Equal(t, 1, code)
		var ls struct{ Unfinished []string }
		require.NoError(t, json.Unmarshal([]byte(stdout), &ls))
		assert.Equal(t, []string{want}, ls.Unfinished)
	}

	code, stdout, stderr := runApp(t, "cache", "verify", out, "--source", src, "--format", "text", "--progress", "none")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stdout, "manifest: manifest.json: "+want+"\n")

	arch := filepath.Join(dir, "c.tar.zst")
	code, stdout, stderr = runApp(t, "cache", "pack", out, "-o", arch, "--progress", "plain")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "ckpt: "+want+"\n", stderr, "one line: no raw open error, no 0 B progress line")
	assert.NoFileExists(t, arch)

	// A folder without manifest or journal (another tool's cache) is no
	// unfinished build: ls lists it, pack says what is missing.
	require.NoError(t, os.Remove(filepath.Join(folder, cache.JournalName)))
	code, _, stderr = runApp(t, "cache", "ls", folder)
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = runApp(t, "cache", "pack", folder, "-o", arch, "--progress", "plain")
	assert.Equal(t, 2, code)
	assert.Equal(t, "ckpt: "+folder+" has no manifest.json: it was not built by ckpt cache build (or its manifest was removed)\n", stderr)
}

// TestCacheRootSelect: cache pack, ls and verify of a root with two
// meshes take --mesh/--tag/--device; verify without them checks every
// folder, one verdict each (exit 1 when one fails).
func TestCacheRootSelect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "cache")
	buildSmall(t, src, out, "1x2")
	buildSmall(t, src, out, "1x1")

	arch := filepath.Join(dir, "c.tar.zst")
	code, stdout, stderr := runApp(t, "cache", "pack", out, "--mesh", "1x2", "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "packed 82 files")
	code, _, stderr = runApp(t, "cache", "pack", out, "-o", arch, "--progress", "none")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "holds 2 cache folders (P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2): pass one of them, or choose with --mesh, --tag or --device")
	code, _, stderr = runApp(t, "cache", "pack", out, "--device", "P150", "--tag", "bfp8", "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)

	code, stdout, stderr = runApp(t, "cache", "ls", out, "--mesh", "1x1", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var ls list.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &ls))
	assert.Equal(t, filepath.Join(out, "P150", "tensor_cache_bfp8_mesh1x1"), ls.Dir)
	assert.NotEmpty(t, ls.Files)
	code, _, stderr = runApp(t, "cache", "ls", out, "--mesh", "1x8")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "holds no cache folder for mesh 1x8; it has P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2")

	code, stdout, stderr = runApp(t, "cache", "verify", out, "--source", src, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var all struct {
		OK      bool
		Folders []check.DirResult
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	// Each mesh's text folder and vision folder (tensor_cache_bfp8).
	require.Len(t, all.Folders, 4)
	assert.True(t, all.OK)
	for i, mesh := range []string{"1x1", "1x1", "1x2", "1x2"} {
		assert.Equal(t, mesh, all.Folders[i].Mesh, all.Folders[i].Dir)
	}

	// Damage one folder: its verdict fails, the other's stays ok.
	p300 := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	ents, err := filepath.Glob(filepath.Join(p300, "*", "*.tensorbin"))
	require.NoError(t, err)
	require.NotEmpty(t, ents)
	require.NoError(t, os.Truncate(ents[0], 10))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--format", "text", "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "ok: ")
	assert.Contains(t, stdout, filepath.Join(out, "P150", "tensor_cache_bfp8_mesh1x1")+" match the plan")
	assert.Contains(t, stdout, "FAILED: ")
	assert.Contains(t, stdout, "4 cache folders in "+out+" checked: 1 FAILED\n")
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--format", "jsonl", "--progress", "none")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, `"dir":"`+p300+`"`)
	assert.Contains(t, stdout, `"folders":4,"failed":1`)
	// --mesh keeps that mesh's model: its text and vision folders.
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--mesh", "1x1", "--format", "json", "--progress", "none")
	assert.Equal(t, 0, code)
	var two check.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &two))
	require.Len(t, two.Folders, 2)
	for _, f := range two.Folders {
		assert.Equal(t, "1x1", f.Mesh, f.Dir)
	}
}

// failWriter fails every write, as stdout on a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestStdoutWriteErrorExit3: a report that cannot be written exits 3,
// whatever command wrote it.
func TestStdoutWriteErrorExit3(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	for _, args := range [][]string{
		{"version"},
		{"version", "--format", "json"},
		{"map", src, "--format", "text"},
		{"inspect", src, "--format", "text"},
		{"cache", "ls", filepath.Dir(src)}, // an empty listing: still a report
	} {
		var errb strings.Builder
		app := &App{Out: failWriter{}, Err: &errb, Getenv: os.Getenv}
		code := app.Run(context.Background(), args)
		assert.Equal(t, 3, code, args)
		// Warnings (map's) may come first, on stderr; the error ends it.
		assert.True(t, strings.HasSuffix(errb.String(), "ckpt: cannot write output: writing to stdout: no space left on device\n"), "%v: %s", args, errb.String())
		assert.Equal(t, 1, strings.Count(errb.String(), "cannot write"), args)
	}
}

// TestCacheLockWriteErrorExit3: a lock file that cannot be written is our
// own output failing: exit 3.
func TestCacheLockWriteErrorExit3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	folder := filepath.Join(dir, "cache", "P300", "tensor_cache_bfp8_mesh1x2")
	// A directory where the lock file goes cannot be opened for writing
	// (running as root, permission bits would not stop us).
	require.NoError(t, os.MkdirAll(filepath.Join(folder, cache.LockName), 0o755))
	code, stdout, stderr := runApp(t, "cache", "build", src, "--out", filepath.Join(dir, "cache"), "--progress", "none")
	assert.Equal(t, 3, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "ckpt: cannot write output: locking "+folder+": ")
}

// TestHintsNameHfCLI: the hints name huggingface_hub's current CLI, hf
// (hf download, hf auth login), never the retired huggingface-cli.
func TestHintsNameHfCLI(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HF_HUB_CACHE": t.TempDir()}
	code, _, stderr := runSources(t, env, source.Options{}, "inspect", "hf:org/missing@v1")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "download it with `hf download org/missing --revision v1`")
	assert.NotContains(t, stderr, "huggingface-cli")

	lfs := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.WriteFile(lfs, []byte("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146\nsize 5368709120\n"), 0o644))
	code, _, stderr = runApp(t, "inspect", lfs)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "download the file with `hf download`")
	assert.NotContains(t, stderr, "huggingface-cli")
}

// TestVersionModuleAndCommit: ckpt version reports the module version
// from the build information, takes the commit from a pseudo-version or an
// -ldflags stamp when the toolchain stamped none, and says how to stamp it
// when there is nothing.
func TestVersionModuleAndCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		bi     *debug.BuildInfo
		commit string
		from   string
		text   []string
	}{
		{"tagged", &debug.BuildInfo{Main: debug.Module{Path: "github.com/ckpt-dev/ckpt", Version: "v0.2.0"}}, "", "",
			[]string{"module: github.com/ckpt-dev/ckpt v0.2.0\n", "commit: unknown (not stamped: ", "Stamp it with: go build -ldflags \"-X main.stampedCommit=$(git rev-parse HEAD)\" ./cmd/ckpt)\n"}},
		{"pseudo", &debug.BuildInfo{Main: debug.Module{Path: "github.com/ckpt-dev/ckpt", Version: "v0.0.0-20261201093000-0123456789ab"}}, "0123456789ab", "module_version",
			[]string{"commit: 0123456789ab (from the module version)\n", "module: github.com/ckpt-dev/ckpt v0.0.0-20261201093000-0123456789ab\n"}},
		{"pseudo after tag", &debug.BuildInfo{Main: debug.Module{Path: "github.com/ckpt-dev/ckpt", Version: "v0.1.1-0.20261201093000-0123456789ab"}}, "0123456789ab", "module_version", nil},
		{"devel", &debug.BuildInfo{Main: debug.Module{Path: "github.com/ckpt-dev/ckpt", Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210fedcba9876543210fedcba98"}}},
			"fedcba9876543210fedcba9876543210fedcba98", "vcs", []string{"module: github.com/ckpt-dev/ckpt (devel): built from a source tree, not a released version\n"}},
	} {
		v, err := buildVersionInfo(tc.bi)
		require.NoError(t, err)
		assert.Equal(t, tc.commit, v.Commit, tc.name)
		assert.Equal(t, tc.from, v.CommitFrom, tc.name)
		assert.Equal(t, tc.bi.Main.Version, v.ModuleVersion, tc.name)
		var b strings.Builder
		require.NoError(t, printVersion(&b, &v))
		for _, want := range tc.text {
			assert.Contains(t, b.String(), want, tc.name)
		}
	}
	// The command itself: the test binary's module and version.
	code, stdout, stderr := runApp(t, "version", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Contains(t, doc, "module_version")
	code, stdout, _ = runApp(t, "version")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "\nmodule: ")
}

// TestMapBytesPerDevice: map and cache build give the DRAM each device
// holds (equal to the shards the built files place on it), the largest
// file, and whether the plan fits the board's DRAM or --device-dram.
func TestMapBytesPerDevice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	type doc struct {
		PerDevice []struct {
			Device        int
			Coord         []int
			Bytes         int64
			Tensors       int
			LargestTarget string `json:"largest_target"`
			Headroom      *int64
			Fits          *bool
		} `json:"per_device"`
		Memory *struct {
			LargestFile      string `json:"largest_file"`
			LargestFileBytes int64  `json:"largest_file_bytes"`
			DRAM             int64
			DRAMFrom         string `json:"dram_from"`
			Fits             *bool
			Headroom         *int64
		}
	}
	code, stdout, stderr := runApp(t, "map", src, "--mesh", "1x2", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var m doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &m))
	require.Len(t, m.PerDevice, 2)
	require.NotNil(t, m.Memory)
	assert.Equal(t, int64(32<<30), m.Memory.DRAM, "P300: 32 GiB per chip")
	assert.Contains(t, m.Memory.DRAMFrom, "Blackhole p300")
	require.NotNil(t, m.Memory.Fits)
	assert.True(t, *m.Memory.Fits)

	// The bytes are what the built files place on each device.
	out := filepath.Join(dir, "cache")
	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--mesh", "1x2", "--progress", "none", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var b doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &b))
	assert.Equal(t, m.PerDevice, b.PerDevice, "cache build reports what map plans")
	var files []string
	for _, p := range listTree(t, out) {
		if strings.HasSuffix(p, ".tensorbin") {
			files = append(files, p)
		}
	}
	require.Len(t, files, 82+21, "the text folder's and the vision folder's")
	onDevice := make([]int64, 2)
	var largest int64
	largestFile := ""
	for _, f := range files {
		h, err := tensorbin.ReadTensorbinFile(f)
		require.NoError(t, err)
		var data int64
		for _, s := range h.Shards {
			data += int64(s.Size)
		}
		if len(h.Shards) == 1 { // replicated: every device holds it
			onDevice[0] += int64(h.Shards[0].Size)
			onDevice[1] += int64(h.Shards[0].Size)
		} else {
			for _, s := range h.Shards {
				onDevice[s.Coord[1]] += int64(s.Size)
			}
		}
		if data > largest {
			largest, largestFile = data, f
		}
	}
	for d := range 2 {
		assert.Equal(t, onDevice[d], m.PerDevice[d].Bytes, "device %d", d)
		assert.Equal(t, 82+21, m.PerDevice[d].Tensors, "the text and vision folders")
		assert.Equal(t, []int{0, d}, m.PerDevice[d].Coord)
		require.NotNil(t, m.PerDevice[d].Headroom)
		assert.Equal(t, int64(32<<30)-onDevice[d], *m.PerDevice[d].Headroom)
	}
	assert.Equal(t, largest, m.Memory.LargestFileBytes)
	assert.Equal(t, filepath.Join(out, filepath.FromSlash(m.Memory.LargestFile)), largestFile)

	// --device-dram below the need: does not fit, short by the difference.
	code, stdout, stderr = runApp(t, "map", src, "--mesh", "1x2", "--device-dram", "512KiB", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var small doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &small))
	assert.False(t, *small.Memory.Fits)
	assert.Equal(t, int64(512<<10)-onDevice[0], *small.Memory.Headroom)
	assert.Equal(t, "--device-dram", small.Memory.DRAMFrom)
	code, stdout, _ = runApp(t, "map", src, "--mesh", "1x2", "--device-dram", "512KiB", "--format", "text", "--summary")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "DOES NOT FIT: 808.9 KiB per device, 512.0 KiB DRAM (--device-dram), short by 296.9 KiB\n")
	code, stdout, _ = runApp(t, "cache", "build", src, "--out", out, "--mesh", "1x2", "--progress", "none")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "fits: 808.9 KiB per device of 32.0 GiB DRAM (Blackhole p300, 32 GiB GDDR6 per chip (two chips)), headroom 32.0 GiB\n")
	assert.Contains(t, stdout, "per device (DRAM)\n")
	// Wormhole: N150 has 12 GiB (for a profile of that architecture: the
	// built-in ones plan for Blackhole).
	dump := filepath.Join(t.TempDir(), "wormhole.json")
	code, stdout, _ = runApp(t, "map", "--dump")
	require.Equal(t, 0, code)
	require.NoError(t, os.WriteFile(dump, []byte(strings.Replace(stdout, `"arch": "blackhole"`, `"arch": "wormhole_b0"`, 1)), 0o644))
	code, stdout, stderr = runApp(t, "map", src, "--mesh", "1x1", "--device", "N150", "--rules", dump, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var wh doc
	require.NoError(t, json.Unmarshal([]byte(stdout), &wh))
	assert.Equal(t, int64(12<<30), wh.Memory.DRAM)
	// An unknown board: no verdict, and how to get one.
	code, stdout, _ = runApp(t, "map", src, "--mesh", "1x2", "--device", "LAB7", "--summary", "--format", "text")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "fit not judged: 808.9 KiB per device, DRAM of device folder LAB7 unknown (pass --device-dram SIZE)\n")
	code, _, stderr = runApp(t, "map", src, "--device-dram", "lots")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--device-dram: ")
}

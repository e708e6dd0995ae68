package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The output policy of every command that writes a file it was asked to
// (docs/cli.md "What ckpt trusts", Outputs): atomicfile.Place.

// builtCache builds the small fixture's cache into a new root and returns
// the root and one of its .tensorbin files.
func builtCache(t *testing.T) (root, tensorbin string) {
	t.Helper()
	base, _ := fixturePair(t)
	root = filepath.Join(t.TempDir(), "cache")
	code, _, stderr := runApp(t, "cache", "build", base, "--out", root, "--mesh", "1x2", "--progress", "none", "-q")
	require.Equal(t, 0, code, stderr)
	bins, err := filepath.Glob(filepath.Join(root, "*", "*", "*.tensorbin"))
	require.NoError(t, err)
	require.NotEmpty(t, bins)
	return root, bins[0]
}

// TestOutputNeverOverInput: diff -o onto a shard, the index or config.json
// of either side (directly, through a link or a hard link), and cache pack
// -o onto a file of the cache it packs or as a new file inside its folder
// (directly, through a link to the folder or its root, a dangling link
// into it), are
// refused with exit 2 before anything is written; every input is
// untouched. (Before: diff replaced the shard with its report, pack
// replaced the .tensorbin with the archive and exited 0, and wrote a new
// archive into the folder, left there as a file of the cache.)
func TestOutputNeverOverInput(t *testing.T) {
	t.Parallel()
	pair := t.TempDir()
	base, ft := copyDir(t, mustFixture(t, 0)), copyDir(t, mustFixture(t, 1))
	shard := firstShard(t, ft)
	link := filepath.Join(pair, "link.md")
	require.NoError(t, os.Symlink(shard, link))
	hard := filepath.Join(pair, "hard.md")
	require.NoError(t, os.Link(filepath.Join(base, "config.json"), hard))
	root, bin := builtCache(t)
	manifest := filepath.Join(filepath.Dir(bin), "manifest.json")
	binLink := filepath.Join(pair, "archive.tar.zst")
	require.NoError(t, os.Symlink(bin, binLink))
	folder := filepath.Dir(bin)
	folderLink := filepath.Join(pair, "folder-link")
	require.NoError(t, os.Symlink(folder, folderLink))
	rootLink := filepath.Join(pair, "root-link")
	require.NoError(t, os.Symlink(root, rootLink))
	intoFolder := filepath.Join(pair, "into-folder.tar.zst")
	require.NoError(t, os.Symlink(filepath.Join(folder, "new.tar.zst"), intoFolder))
	before := []map[string]string{snapshot(t, base), snapshot(t, ft), snapshot(t, root)}
	for _, tc := range []struct {
		args []string
		what string
	}{
		{[]string{"diff", base, ft, "-o", firstShard(t, base)}, "a file of the checkpoint being read: refusing to write over an input"},
		{[]string{"diff", base, ft, "-o", shard}, "a file of the checkpoint being read"},
		{[]string{"diff", base, ft, "-o", link, "--format", "markdown"}, "a file of the checkpoint being read"},
		{[]string{"diff", base, ft, "-o", hard}, "a file of the checkpoint being read"},
		{[]string{"diff", base, ft, "-o", filepath.Join(ft, "model.safetensors.index.json"), "--mode", "header"}, "a file of the checkpoint being read"},
		{[]string{"diff", base, ft, "-o", filepath.Join(ft, "config.json"), "--format", "json"}, "a file of the checkpoint being read"},
		{[]string{"cache", "pack", root, "-o", bin}, "a file of the cache being packed: refusing to write over an input"},
		{[]string{"cache", "pack", root, "-o", binLink}, "a file of the cache being packed"},
		{[]string{"cache", "pack", filepath.Dir(bin), "-o", manifest}, "a file of the cache being packed"},
		{[]string{"cache", "pack", root, "-o", filepath.Join(folder, "cache.tar.zst")}, "is inside " + folder + ", the folder of the cache being packed: refusing to write into an input"},
		{[]string{"cache", "pack", folder, "-o", filepath.Join(folderLink, "cache.tar.zst")}, "the folder of the cache being packed"},
		{[]string{"cache", "pack", rootLink, "-o", filepath.Join(folder, "cache.tar.zst")}, "the folder of the cache being packed"},
		{[]string{"cache", "pack", root, "-o", intoFolder}, "the folder of the cache being packed"},
	} {
		code, stdout, stderr := runApp(t, append(tc.args, "--progress", "none")...)
		assert.Equal(t, 2, code, "%v: %s%s", tc.args, stdout, stderr)
		assert.Contains(t, stderr, tc.what, "%v", tc.args)
		assert.NotContains(t, stderr, "wrote", "%v", tc.args)
	}
	after := []map[string]string{snapshot(t, base), snapshot(t, ft), snapshot(t, root)}
	assert.Equal(t, before, after, "every input is as it was, no temporary file left")
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink, "the link is still a link")
	code, stdout, _ := runApp(t, "cache", "verify", root, "--source", base, "--progress", "none")
	assert.Equal(t, 0, code, stdout)
}

// TestOutputThroughLinks: an -o that is a symbolic link is written through
// to the file it names (a dangling link's target is created), atomically;
// the link stays a link. (Before: the link was replaced by a regular file
// and its target left as it was.)
func TestOutputThroughLinks(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   func(out string) []string
		exists bool // the link's target exists before
		want   string
	}{
		{"diff report over a file", func(out string) []string { return []string{"diff", base, ft, "--format", "json", "-o", out} }, true, `"schema_version"`},
		{"diff report, dangling link", func(out string) []string { return []string{"diff", base, ft, "--format", "csv", "-o", out} }, false, "name,relation,"},
		{"contract", func(out string) []string { return []string{"contract", base, "-o", out} }, true, `"contract_version"`},
		{"extract", func(out string) []string {
			return []string{"extract", base, "--match", "mtp.**", "--out", out}
		}, true, "mtp."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
			require.NoError(t, os.MkdirAll(filepath.Join(sub, "real"), 0o755))
			target := filepath.Join(sub, "real", "out.safetensors")
			if tc.exists {
				require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
			}
			link := filepath.Join(sub, "link.safetensors")
			require.NoError(t, os.Symlink(filepath.Join("real", "out.safetensors"), link))
			code, stdout, stderr := runApp(t, append(tc.args(link), "--progress", "none")...)
			require.Contains(t, []int{0, 1}, code, "%s%s", stdout, stderr)
			st, err := os.Lstat(link)
			require.NoError(t, err)
			assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink, "the link is still a link")
			b, err := os.ReadFile(target)
			require.NoError(t, err)
			assert.Contains(t, string(b), tc.want, "the output went to the link's target")
			left, err := filepath.Glob(filepath.Join(sub, "*", ".*.tmp-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "no temporary file left")
		})
	}
	// cache pack -o through a link.
	root, _ := builtCache(t)
	target := filepath.Join(dir, "pack.tar.zst")
	link := filepath.Join(dir, "pack-link.tar.zst")
	require.NoError(t, os.Symlink(target, link))
	code, _, stderr := runApp(t, "cache", "pack", root, "-o", link, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	st, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, st.Mode()&os.ModeSymlink)
	st, err = os.Stat(target)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
}

// TestOutputRefusesNonFiles: an output that is a directory, a socket or
// (for a directory output) a file is refused with exit 2, naming what it
// is, and left as it was. (Before: diff and contract failed only after the
// work, exit 3, "renaming into"; cache build --out FILE exit 3.)
func TestOutputRefusesNonFiles(t *testing.T) {
	t.Parallel()
	base, ft := fixturePair(t)
	dir := t.TempDir()
	sub := filepath.Join(dir, "a-directory")
	require.NoError(t, os.MkdirAll(filepath.Join(sub, "inside"), 0o755))
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("keep"), 0o644))
	// A socket (short path: sun_path is 108 bytes).
	sdir, err := os.MkdirTemp("", "sock")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock := filepath.Join(sdir, "s")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	for _, tc := range []struct {
		args []string
		what string
	}{
		{[]string{"diff", base, ft, "-o", sub}, "is a directory, not a file: refusing to write over it"},
		{[]string{"contract", base, "-o", sub}, "is a directory, not a file"},
		{[]string{"cache", "pack", base, "-o", sub}, "is a directory, not a file"},
		{[]string{"diff", base, ft, "-o", sock}, "is a socket"},
		{[]string{"contract", base, "-o", sock}, "is a socket"},
		{[]string{"cache", "build", base, "--out", file, "--mesh", "1x2"}, "is a regular file, not a directory: refusing to replace it"},
		{[]string{"demo", "--dir", file}, "is a regular file, not a directory"},
	} {
		args := tc.args
		if args[0] != "demo" {
			args = append(args, "--progress", "none")
		}
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s%s", tc.args, stdout, stderr)
		assert.Contains(t, stderr, tc.what, "%v", tc.args)
	}
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(b))
	ents, err := os.ReadDir(sub)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "the directory is as it was")
	st, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, st.Mode()&os.ModeSocket, "the socket is still a socket")
}

// TestDemoDirRefusesNonEmpty: demo --dir onto a directory that holds
// anything (here a checkpoint) is refused with exit 2 and nothing in it
// changes. (Before: the demo overwrote its config.json and index.)
func TestDemoDirRefusesNonEmpty(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	dir := t.TempDir()
	ck := copyDir(t, base)
	require.NoError(t, os.Rename(ck, filepath.Join(dir, "base")))
	before := snapshot(t, dir)
	code, stdout, stderr := runApp(t, "demo", "--dir", dir)
	assert.Equal(t, 2, code, stdout)
	assert.Contains(t, stderr, "is a directory that is not empty (1 entries, \"base\" first): refusing to write into it")
	assert.Empty(t, stdout)
	assert.Equal(t, before, snapshot(t, dir))
	// A link to a non-empty directory is the directory.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(dir, link))
	code, _, stderr = runApp(t, "demo", "--dir", link)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "not empty")
	assert.Equal(t, before, snapshot(t, dir))
}

// TestDemoWriteFailureExit3: the demo failing to write its own files is
// our side's failure, exit 3 "cannot write output". (Before: exit 2.)
func TestDemoWriteFailureExit3(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	code, _, stderr := runApp(t, "demo", "--dir", filepath.Join(blocker, "sub"))
	assert.Equal(t, 3, code, stderr)
	assert.Contains(t, stderr, "ckpt: cannot write output")
}

// mustFixture returns the base (0) or fine-tune (1) of fixturePair.
func mustFixture(t *testing.T, i int) string {
	base, ft := fixturePair(t)
	return []string{base, ft}[i]
}

// firstShard is the first .safetensors file of a checkpoint directory.
func firstShard(t *testing.T, dir string) string {
	t.Helper()
	shards, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	return shards[0]
}

// TestBuildOutputs: cache build never writes through a link planted at
// its journal's name (os.Create followed it and truncated the file it
// named), and refuses a cache folder that holds the checkpoint it reads
// (exit 2, nothing written).
func TestBuildOutputs(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	root := filepath.Join(t.TempDir(), "cache")
	folder := filepath.Join(root, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.MkdirAll(folder, 0o755))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep me"), 0o644))
	require.NoError(t, os.Symlink(victim, filepath.Join(folder, ".ckpt-cache-journal.jsonl")))
	code, _, stderr := runApp(t, "cache", "build", base, "--out", root, "--mesh", "1x2", "--progress", "none", "-q")
	require.Equal(t, 0, code, stderr)
	b, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(b), "the file the link named is untouched")

	// The checkpoint inside the cache folder it would be built into.
	root2 := filepath.Join(t.TempDir(), "cache")
	inside := filepath.Join(root2, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.MkdirAll(filepath.Dir(inside), 0o755))
	require.NoError(t, os.Rename(copyDir(t, base), inside))
	before := snapshot(t, root2)
	code, stdout, stderr := runApp(t, "cache", "build", inside, "--out", root2, "--mesh", "1x2", "--progress", "none")
	assert.Equal(t, 2, code, stdout+stderr)
	assert.Contains(t, stderr, "a file of the checkpoint being read: refusing to build into it")
	assert.Equal(t, before, snapshot(t, root2))
}

// TestOutputNeverOverVariantIndex: the index a --variant opens (and
// hf_quant_config.json, config.json) are inputs too: an -o onto them is
// refused, exit 2.
func TestOutputNeverOverVariantIndex(t *testing.T) {
	t.Parallel()
	base, _ := fixturePair(t)
	dir := copyDir(t, base)
	idx := filepath.Join(dir, "model.safetensors.index.fp16.json")
	require.NoError(t, os.Rename(filepath.Join(dir, "model.safetensors.index.json"), idx))
	before := snapshot(t, dir)
	for _, args := range [][]string{
		{"contract", dir, "--variant", "fp16", "-o", idx},
		{"diff", dir, dir, "--variant", "fp16", "--mode", "header", "-o", idx, "--progress", "none"},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, "a file of the checkpoint being read: refusing to write over an input", "%v", args)
	}
	assert.Equal(t, before, snapshot(t, dir))
	// ModelOpt's hf_quant_config.json, read beside an NVFP4 checkpoint's
	// config.json, is an input of diff, contract and extract.
	nv := filepath.Join(t.TempDir(), "nvfp4")
	require.NoError(t, synth.WriteScheme(nv, quant.NVFP4, synth.SchemeOptions{}))
	hfq := filepath.Join(nv, "hf_quant_config.json")
	require.FileExists(t, hfq)
	before = snapshot(t, nv)
	for _, args := range [][]string{
		{"contract", nv, "-o", hfq},
		{"diff", nv, nv, "--mode", "header", "-o", hfq, "--progress", "none"},
		{"extract", nv, "--match", "**", "--out", hfq, "--progress", "none"},
	} {
		code, stdout, stderr := runApp(t, args...)
		assert.Equal(t, 2, code, "%v: %s%s", args, stdout, stderr)
		assert.Contains(t, stderr, "a file of the checkpoint being read: refusing to write over an input", "%v", args)
	}
	assert.Equal(t, before, snapshot(t, nv))
}

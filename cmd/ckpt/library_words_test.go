package main

import (
	"encoding/binary"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/ckpttest"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLibraryErrorWords holds, byte for byte, the stderr of library errors
// the CLI words with its flag names (words.go): the variant of a source,
// the cache folder of a root with several.
func TestLibraryErrorWords(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "variants")
	o := bf16Save()
	o.Variant = "fp16"
	require.NoError(t, synth.Write(dir, o))
	plain := filepath.Join(tmp, "plain")
	require.NoError(t, synth.Write(plain, synth.Small()))
	cacheOut := filepath.Join(tmp, "cache")
	buildSmall(t, plain, cacheOut, "1x2")
	buildSmall(t, plain, cacheOut, "1x1")
	shard := filepath.Join(dir, "model.fp16-00001-of-00003.safetensors")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"variant name", []string{"inspect", dir, "--variant", "../x"},
			`ckpt: --variant: "../x" is not a variant name (model.NAME.safetensors, model.safetensors.index.NAME.json)` + "\n"},
		{"variant of a file", []string{"inspect", shard, "--variant", "fp16"},
			"ckpt: --variant: fp16 selects model.fp16.safetensors or model.safetensors.index.fp16.json of a checkpoint directory, but the source names the file " +
				shard + "\n"},
		{"two cache folders", []string{"cache", "pack", cacheOut, "-o", filepath.Join(tmp, "c.tar.zst"), "--progress", "none"},
			"ckpt: " + cacheOut + " holds 2 cache folders (P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2): " +
				"pass one of them, or choose with --mesh, --tag or --device\n"},
		{"two cache folders, ls", []string{"cache", "ls", cacheOut, "--tag", "bfp8"},
			"ckpt: " + cacheOut + " holds 2 cache folders (P150/tensor_cache_bfp8_mesh1x1, P300/tensor_cache_bfp8_mesh1x2): " +
				"pass one of them, or choose with --mesh, --tag or --device\n"},
	}
	for _, tc := range tests {
		code, stdout, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, tc.name)
		assert.Empty(t, strings.TrimSpace(stdout), tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

// TestNonFiniteWords holds, byte for byte, the stderr of the NaN/Inf
// refusals of cache build and extract (*ckpt.NonFiniteError: NaN codes, a
// finite value that overflows the output dtype), and extract's note of the
// tensors --allow-nonfinite kept.
func TestNonFiniteWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "ft")
	require.NoError(t, synth.Write(src, synth.Small()))
	const bad = "model.language_model.layers.0.mlp.down_proj.weight"
	require.NoError(t, ckpttest.SetNaN(src, bad, 1666))
	big := filepath.Join(dir, "big.safetensors")
	bf := make([]byte, 8)
	for i, v := range []float32{1, 1e5, 2, 3} {
		binary.LittleEndian.PutUint16(bf[2*i:], numfmt.F32ToBF16(v))
	}
	require.NoError(t, ckpt.WriteFile(big, []ckpt.MemTensor{{WriteSpec: ckpt.WriteSpec{Name: "a", DType: numfmt.BF16, Shape: []int64{4}}, Data: bf}}, nil))
	const mlp = "model.language_model.layers.0.mlp.**"
	const nan = `tensor "` + bad + `" (F8_E4M3) has 1666 NaN codes (0x7f/0xff) of 40960 values: `
	const hint = " (pass --allow-nonfinite to proceed anyway)\n"
	x, a := filepath.Join(dir, "x.safetensors"), filepath.Join(dir, "a.safetensors")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"build", []string{"cache", "build", src, "--out", filepath.Join(dir, "cache"), "--progress", "none"}, exitFailed,
			"ckpt: " + nan + "refusing to build a cache from it" + hint},
		{"extract", []string{"extract", src, "--match", mlp, "--out", x, "--progress", "none"}, exitFailed,
			"ckpt: writing " + x + ": " + nan + "refusing to extract it" + hint},
		{"overflow", []string{"extract", big, "--match", "a", "--dtype", "f16", "--out", a, "--progress", "none"}, exitFailed,
			"ckpt: writing " + a + `: tensor "a" (BF16): 1 of 4 values are finite but overflow to Inf when converted to F16 (F16 holds at most 65504): ` +
				"refusing to extract it" + hint},
		{"note", []string{"extract", src, "--match", mlp, "--out", filepath.Join(dir, "y.safetensors"), "--progress", "none", "--allow-nonfinite",
			"--format", "json"}, exitOK,
			"ckpt: note: 1 source tensor(s) hold NaN or Inf (or overflow when converted), kept as they are (--allow-nonfinite): " + bad + " (1666 NaN, 0 Inf)\n"},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, tc.code, code, tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

// TestExtractNoMatchWords holds, byte for byte, extract's refusal of globs
// that select only quantisation scales under a float --dtype, and of globs
// over a checkpoint without tensors.
func TestExtractNoMatchWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "ft")
	require.NoError(t, synth.Write(src, synth.Small()))
	empty := filepath.Join(dir, "empty.safetensors")
	require.NoError(t, ckpt.WriteFile(empty, nil, nil))
	out := filepath.Join(dir, "x.safetensors")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"scales only", []string{"extract", src, "--match", "**.weight_scale_inv", "--exclude", "mtp.**", "--dtype", "f32", "--out", out, "--progress", "none"},
			"ckpt: no tensor matches --match **.weight_scale_inv --exclude mtp.** in " + src + " but quantisation scales, which are not values under --dtype f32 " +
				"(select their weights to dequantise them)\n"},
		{"no tensors", []string{"extract", empty, "--match", "a.*", "--match", "b", "--out", out, "--progress", "none"},
			"ckpt: no tensor matches --match a.*, b in " + empty + " (0 tensors)\n"},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

// TestVariantDirWords holds, byte for byte, the refusal of a checkpoint
// directory that holds several variants and nothing else, or several
// .safetensors files besides a variant.
func TestVariantDirWords(t *testing.T) {
	t.Parallel()
	two := filepath.Join(t.TempDir(), "two")
	for _, v := range []string{"fp16", "bf16"} {
		o := bf16Save()
		o.Variant = v
		require.NoError(t, synth.Write(two, o))
	}
	mixed := filepath.Join(t.TempDir(), "mixed")
	o := bf16Save()
	o.Variant = "fp16"
	require.NoError(t, synth.Write(mixed, o))
	for _, n := range []string{"b.safetensors", "a.safetensors"} {
		require.NoError(t, ckpt.WriteFile(filepath.Join(mixed, n), nil, nil))
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"two variants", []string{"inspect", two}, "ckpt: " + two + ": ambiguous checkpoint directory: no model.safetensors.index.json and no model.safetensors, " +
			"but 2 variants: bf16 (model.safetensors.index.bf16.json), fp16 (model.safetensors.index.fp16.json); pass --variant NAME\n"},
		{"files and a variant", []string{"inspect", mixed}, "ckpt: " + mixed +
			": ambiguous checkpoint directory: 2 .safetensors files (a.safetensors, b.safetensors) " +
			"and no model.safetensors.index.json (besides the variants fp16 (model.safetensors.index.fp16.json): --variant NAME opens one)\n"},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, tc.name)
		assert.Equal(t, tc.want, stderr, tc.name)
	}
}

// TestEmptySelectionWords holds, byte for byte, the refusal of
// --match/--exclude globs that select nothing (*ckpt.EmptySelectionError),
// as a whole or one glob of them, on the commands that take them.
func TestEmptySelectionWords(t *testing.T) {
	t.Parallel()
	_, base, ft := small(t)
	out := filepath.Join(t.TempDir(), "x.safetensors")
	const hint = " (`*` stays inside one dotted segment, `**` crosses segments); " +
		"the names present start with lm_head.**, model.language_model.**, model.visual.**, mtp.**\n"
	in := " in " + base + " (124 tensors)"
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"inspect", base, "--match", "mtp.*"}, `ckpt: no tensor matches --match "mtp.*"` + in + ": did you mean 'mtp.**'?" + hint},
		{[]string{"diff", base, ft, "--exclude", "**"}, `ckpt: no tensor matches --exclude "**" in ` + base + " or " + ft + " (124 tensors)" + hint},
		{[]string{"inspect", base, "--exclude", "visual.**"},
			`ckpt: no tensor matches --exclude "visual.**"` + in + ", so it excludes nothing: did you mean 'model.visual.**'?" + hint},
		{[]string{"extract", base, "--match", "mtp.**", "--match", "lm_head", "--out", out},
			`ckpt: no tensor matches --match "lm_head"` + in + ", so it selects nothing: did you mean 'lm_head.**'?" + hint},
		{[]string{"map", base, "--match", "mtp.**", "--exclude", "mtp.layers.*"},
			`ckpt: no tensor matches --exclude "mtp.layers.*"` + in + ", so it excludes nothing: did you mean 'mtp.layers.**'?" + hint},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, tc.args...)
		assert.Equal(t, exitUnreadable, code, "%v", tc.args)
		assert.Equal(t, tc.want, stderr, "%v", tc.args)
	}
}

// TestExtractOutWords holds, byte for byte, extract's refusals of an --out
// it never writes: a file of the source, a directory that is not empty, a
// socket.
func TestExtractOutWords(t *testing.T) {
	t.Parallel()
	_, base, _ := small(t)
	shards, err := filepath.Glob(filepath.Join(base, "*.safetensors"))
	require.NoError(t, err)
	require.NotEmpty(t, shards)
	full := filepath.Join(t.TempDir(), "full")
	require.NoError(t, os.MkdirAll(filepath.Join(full, "x"), 0o755))
	sdir, err := os.MkdirTemp("", "sock") // short: sun_path is 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock := filepath.Join(sdir, "s.safetensors")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	tests := []struct {
		out, want string
	}{
		{shards[0], "ckpt: --out " + shards[0] + " is " + shards[0] + ", a file of the checkpoint being read: refusing to write over an input\n"},
		{full, "ckpt: --out " + full + ` is a directory that is not empty (1 entries, "x" first): refusing to write into it` + "\n"},
		{sock, "ckpt: --out " + sock + " is a socket: an output is written to a regular file, a character device or a FIFO, never over anything else\n"},
	}
	for _, tc := range tests {
		code, _, stderr := runApp(t, "extract", base, "--match", "mtp.**", "--out", tc.out, "--progress", "none")
		assert.Equal(t, exitUnreadable, code, tc.out)
		assert.Equal(t, tc.want, stderr, tc.out)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/check"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/require"
)

// runApp and golden (-update) are shared with map_test.go.

func TestCacheCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "base")
	require.NoError(t, synth.Write(src, synth.Small()))
	out := filepath.Join(dir, "cache")

	// Usage errors.
	code, _, stderr := runApp(t, "cache", "build", src)
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--out")
	code, _, stderr = runApp(t, "cache", "verify", out, "--rules", "r.json", "--min-mem", "lots")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "--min-mem")
	code, _, _ = runApp(t, "cache", "build", src, "--out", out, "--mesh", "2x2")
	require.Equal(t, 2, code)

	// Nothing built yet: verify fails closed.
	code, stdout, _ := runApp(t, "cache", "verify", out, "--source", src)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "not a cache directory")
	require.NoError(t, os.MkdirAll(out, 0o755))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "holds no cache folder")
	require.NoError(t, os.MkdirAll(filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"), 0o755))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src)
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "has no manifest.json")

	code, stdout, stderr = runApp(t, "cache", "build", src, "--out", out, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var res build.Document
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Equal(t, 82, res.Files)
	require.Len(t, res.Built, 82)
	require.Equal(t, "1x2", res.Mesh)
	require.NotEmpty(t, res.Warnings)

	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout)
	require.Contains(t, stdout, "ok: 82 files")

	// ls, text and JSON (golden).
	code, stdout, _ = runApp(t, "cache", "ls", filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2"), "--format", "text")
	require.Equal(t, 0, code)
	golden(t, "cache_ls.golden", stdout)
	code, stdout, _ = runApp(t, "cache", "ls", out, "--format", "json")
	require.Equal(t, 0, code)
	golden(t, "cache_ls.json.golden", strings.ReplaceAll(stdout, out, "$CACHE"))

	// --min-mem reads MemAvailable from an injectable meminfo.
	mi := filepath.Join(dir, "meminfo")
	require.NoError(t, os.WriteFile(mi, []byte("MemAvailable:    2097152 kB\n"), 0o644))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--min-mem", "4GiB", "--meminfo", mi, "--progress", "none")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "memory: MemAvailable is 2.0 GiB, below --min-mem 4.0 GiB")
	code, _, _ = runApp(t, "cache", "verify", out, "--source", src, "--min-mem", "1GiB", "--meminfo", mi, "--progress", "none")
	require.Equal(t, 0, code)
	code, _, _ = runApp(t, "cache", "verify", out, "--source", src, "--min-mem", "lots")
	require.Equal(t, 2, code)
	// One size parser: 4G is 4·10⁹ bytes (as for --max-shard-size), 4Gi is 4·2³⁰.
	require.NoError(t, os.WriteFile(mi, []byte("MemAvailable:    4003907 kB\n"), 0o644)) // 4,100,000,768 bytes
	code, _, _ = runApp(t, "cache", "verify", out, "--source", src, "--min-mem", "4G", "--meminfo", mi, "--progress", "none")
	require.Equal(t, 0, code)
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--min-mem", "4Gi", "--meminfo", mi, "--progress", "none")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "below --min-mem 4.0 GiB")

	// pack / unpack round trip, then verify the unpacked copy.
	arch := filepath.Join(dir, "cache.tar.zst")
	code, stdout, stderr = runApp(t, "cache", "pack", out, "-o", arch, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	// A vision model: its two folders, one archive.
	vision := filepath.Join(out, "P300", "tensor_cache_bfp8")
	require.Contains(t, stdout, "packed 82 files (1.5 MiB) of "+filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")+" and 21 files (106.3 KiB) of its vision folder "+vision+" into "+arch)
	require.Empty(t, stderr)
	shipped := filepath.Join(dir, "shipped")
	code, stdout, stderr = runApp(t, "cache", "unpack", arch, "-o", shipped, "--progress", "none")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, stdout, "unpacked 82 files")
	require.Contains(t, stdout, "and 21 files (106.3 KiB) into its vision folder "+filepath.Join(shipped, "P300", "tensor_cache_bfp8"))
	code, stdout, _ = runApp(t, "cache", "verify", shipped, "--source", src, "--progress", "none")
	require.Equal(t, 0, code, stdout)
	// An unpacked manifest is the archive's word: a rebuild there rebuilds
	// every file from the source; the one after skips everything.
	code, stdout, _ = runApp(t, "cache", "build", src, "--out", shipped, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code)
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Built, 82)
	require.Equal(t, 82, res.FromArchive)
	require.NotNil(t, res.Vision)
	require.Equal(t, 21, res.Vision.FromArchive, "the vision folder came from the archive too")
	code, stdout, _ = runApp(t, "cache", "build", src, "--out", shipped, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code)
	res = build.Document{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Empty(t, res.Built)
	require.Equal(t, 82, res.Skipped)

	// A corrupted archive: exit 2 and no complete-looking cache.
	b, err := os.ReadFile(arch)
	require.NoError(t, err)
	b[len(b)/3] ^= 0x55
	bad := filepath.Join(dir, "bad.tar.zst")
	require.NoError(t, os.WriteFile(bad, b, 0o644))
	code, _, stderr = runApp(t, "cache", "unpack", bad, "-C", filepath.Join(dir, "bad"), "--progress", "none")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "unpacking")
	require.Contains(t, stderr, "ckpt: note: -C/--directory is deprecated, use -o/--out", "the old spelling still works, with a note")
	_, err = os.Stat(filepath.Join(dir, "bad", "P300", "tensor_cache_bfp8_mesh1x2", "manifest.json"))
	require.ErrorIs(t, err, os.ErrNotExist)

	// Damage: verify names each file, JSON lists the findings, exit 1.
	files := filepath.Join(out, "P300", "tensor_cache_bfp8_mesh1x2")
	require.NoError(t, os.Remove(filepath.Join(files, "layers.0/tp/A_log_dtype_BFLOAT16_layout_TILE.tensorbin")))
	require.NoError(t, os.Truncate(filepath.Join(files, "layers.1/tp/out_dtype_BFLOAT8_B_layout_TILE.tensorbin"), 1000))
	require.NoError(t, os.WriteFile(filepath.Join(files, "stray.tensorbin"), []byte("?"), 0o644))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--format", "json", "--progress", "none")
	require.Equal(t, 1, code)
	var all check.Result // the text folder and its vision folder
	require.NoError(t, json.Unmarshal([]byte(stdout), &all))
	require.False(t, all.OK)
	got := map[string]string{}
	for _, vr := range all.Folders {
		for _, f := range vr.Findings {
			got[strings.TrimPrefix(f.File(), "P300/tensor_cache_bfp8_mesh1x2/")] = string(f.ID)
		}
	}
	require.Equal(t, map[string]string{
		"layers.0/tp/A_log_dtype_BFLOAT16_layout_TILE.tensorbin": "missing",
		"layers.1/tp/out_dtype_BFLOAT8_B_layout_TILE.tensorbin":  "truncated",
		"stray.tensorbin": "extra",
	}, got)
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--progress", "none")
	require.Equal(t, 1, code)
	golden(t, "cache_verify_damaged.golden", strings.ReplaceAll(strings.ReplaceAll(stdout, out, "$CACHE"), src, "$SRC"))
	code, stdout, _ = runApp(t, "cache", "verify", out, "--source", src, "--progress", "none", "--format", "markdown")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "| finding   | file")
	require.Regexp(t, `\| truncated +\| P300/tensor_cache_bfp8_mesh1x2/layers.1/tp/out_dtype_BFLOAT8_B_layout_TILE.tensorbin +\|`, stdout)
	require.Contains(t, stdout, "FAILED: 3 problem(s)")

	// cache ls reports an unreadable file and exits 1.
	code, stdout, _ = runApp(t, "cache", "ls", files, "--format", "text")
	require.Equal(t, 1, code)
	require.Contains(t, stdout, "stray.tensorbin")
}

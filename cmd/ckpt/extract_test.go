package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/extract"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func runExtractApp(ctx context.Context, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	app := &App{Out: &out, Err: &errb, Getenv: os.Getenv, Now: fixedNow}
	code := app.Run(ctx, args)
	return code, out.String(), errb.String()
}

func extractBase(t *testing.T) (dir, base string) {
	t.Helper()
	dir = t.TempDir()
	base = filepath.Join(dir, "base")
	require.NoError(t, synth.Write(base, synth.Small()))
	return dir, base
}

// TestExtractGolden pins the text and JSON output of the MTP sidecar
// extraction, and checks the file it writes.
func TestExtractGolden(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	for _, tc := range []struct{ format, golden string }{{"text", "extract_mtp_bf16.txt.golden"}, {"json", "extract_mtp_bf16.json.golden"}} {
		out := filepath.Join(dir, "mtp-"+tc.format+".safetensors")
		code, stdout, stderr := runExtractApp(context.Background(), "extract", base, "--match", "mtp.**", "--dtype", "bf16", "--out", out, "--format", tc.format, "--progress", "none")
		require.Equal(t, 0, code, stderr)
		assert.Empty(t, stderr)
		got := strings.ReplaceAll(strings.ReplaceAll(stdout, out, "$OUT"), dir, "$DIR")
		if tc.format == "text" { // column widths depend on the temporary path's length
			got = collapseSpaces(got)
		}
		golden(t, tc.golden, got)
		c, err := ckpt.Open(context.Background(), out, ckpt.Options{})
		require.NoError(t, err)
		assert.Len(t, c.Tensors, 15)
		assert.Empty(t, c.Files[0].Header.Lints)
		c.Close()
	}
}

// TestExtractJSONContract checks the JSON fields of a sharded extraction
// and that the directory reads back (index, config without quantization).
func TestExtractJSONContract(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	out := filepath.Join(dir, "all")
	code, stdout, stderr := runExtractApp(context.Background(), "extract", base, "--match", "**", "--exclude", "model.visual.**", "--dtype", "f32",
		"--max-shard-size", "500KB", "--out", out, "--format", "json", "--progress", "none")
	require.Equal(t, 0, code, stderr)
	var res extract.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	assert.True(t, res.Sharded)
	assert.Equal(t, "f32", res.DType)
	assert.Equal(t, filepath.Join(out, ckpt.IndexFile), res.Index)
	assert.Equal(t, filepath.Join(out, "config.json"), res.Config)
	assert.Greater(t, len(res.Files), 1)
	assert.Equal(t, len(res.Files), res.Summary.Files)
	assert.Equal(t, len(res.Tensors), res.Summary.Tensors)
	var sum int64
	for _, f := range res.Files {
		sum += f.Bytes
	}
	assert.Equal(t, res.Summary.Bytes, sum)
	assert.Positive(t, res.Summary.Dequantized)
	assert.Positive(t, res.Summary.Converted)
	for _, x := range res.Tensors {
		assert.Equal(t, "F32", x.DType, x.Name)
		assert.False(t, strings.HasPrefix(x.Name, "model.visual."), x.Name)
		assert.False(t, strings.HasSuffix(x.Name, ckpt.ScaleSuffix), x.Name)
	}
	c, err := ckpt.Open(context.Background(), out, ckpt.Options{})
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, res.Summary.Bytes, c.Index.TotalSize)
	assert.Len(t, c.Tensors, res.Summary.Tensors)
	assert.Nil(t, c.Config.Quantization())
	for _, f := range c.Files {
		assert.Empty(t, f.Header.Lints)
	}
	code, stdout, _ = runExtractApp(context.Background(), "inspect", out, "--summary")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "shards")
}

// TestExtractKeepWarns: an FP8 weight extracted under keep without its
// scale is written, with a warning on stderr; --with-scales adds it.
func TestExtractKeepWarns(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	code, _, stderr := runExtractApp(context.Background(), "extract", base, "--match", "mtp.fc.weight", "--match", "mtp.layers.0.mlp.up_proj.weight",
		"--out", filepath.Join(dir, "a.safetensors"), "--progress", "none")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning: tensor \"mtp.layers.0.mlp.up_proj.weight\" is FP8")
	code, stdout, stderr := runExtractApp(context.Background(), "extract", base, "--match", "mtp.layers.0.mlp.up_proj.weight", "--with-scales",
		"--out", filepath.Join(dir, "b.safetensors"), "--progress", "none", "--format", "json")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)
	var res extract.Result
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Tensors, 2)
	assert.Equal(t, "mtp.layers.0.mlp.up_proj.weight_scale_inv", res.Tensors[1].Name)
	assert.Equal(t, "copy", res.Tensors[1].Action)
}

// TestExtractExitCodes: bad command lines and unreadable input exit 2 and
// write nothing.
func TestExtractExitCodes(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	out := filepath.Join(dir, "out.safetensors")
	for _, tc := range []struct {
		name string
		args []string
		msg  string
	}{
		{"no out", []string{"extract", base, "--match", "mtp.**"}, "--out"},
		{"no match", []string{"extract", base, "--out", out}, "--match"},
		{"bad dtype", []string{"extract", base, "--match", "mtp.**", "--out", out, "--dtype", "int8"}, "invalid dtype"},
		{"bad glob", []string{"extract", base, "--match", "[", "--out", out}, "invalid --match glob"},
		{"matches nothing", []string{"extract", base, "--match", "nope.**", "--out", out}, "no tensor matches"},
		{"missing source", []string{"extract", filepath.Join(dir, "missing"), "--match", "**", "--out", out}, "missing"},
		{"bad size", []string{"extract", base, "--match", "**", "--out", out, "--max-shard-size", "lots"}, "invalid size"},
		{"sharded to a file", []string{"extract", base, "--match", "**", "--out", out, "--max-shard-size", "100KB"}, "must be a directory"},
		{"with-scales and bf16", []string{"extract", base, "--match", "**", "--out", out, "--dtype", "bf16", "--with-scales"}, "--with-scales"},
		{"bad format", []string{"extract", base, "--match", "**", "--out", out, "--format", "yaml"}, "--format"},
		{"two sources", []string{"extract", base, base, "--match", "**", "--out", out}, "1 argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runExtractApp(context.Background(), tc.args...)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout)
			assert.Contains(t, stderr, tc.msg)
			assert.NotContains(t, stderr, "panic")
		})
	}
	assert.ElementsMatch(t, []string{"base"}, dirNames(t, dir), "nothing written")
}

// TestExtractCancelled: a cancelled context (Ctrl-C) fails with exit 2
// and leaves no output file.
func TestExtractCancelled(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	code, _, stderr := runExtractApp(ctx, "extract", base, "--match", "**", "--out", filepath.Join(dir, "x.safetensors"), "--progress", "none")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "canceled")
	assert.ElementsMatch(t, []string{"base"}, dirNames(t, dir))
}

// TestDemoRunsExtract: the demo extracts the MTP head and inspects it.
func TestDemoRunsExtract(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runExtractApp(context.Background(), "demo", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "$ ckpt extract")
	assert.Contains(t, stdout, "mtp-bf16.safetensors: 15 tensors")
	assert.FileExists(t, filepath.Join(dir, "mtp-bf16.safetensors"))
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// collapseSpaces turns runs of spaces into one, line by line.
func collapseSpaces(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

// TestWriteErrorExitCode: a failure to write our own output (here a
// missing output directory; disk full and permission errors take the same
// path) exits 3 and says so, instead of blaming the input (exit 2).
func TestWriteErrorExitCode(t *testing.T) {
	t.Parallel()
	dir, base := extractBase(t)
	noDir := filepath.Join(dir, "no", "such", "dir")
	aFile := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(aFile, []byte("x"), 0o644))
	for _, tc := range []struct {
		name, args0 string
		args        []string
		why         string
	}{
		{"extract to a file", "extract", []string{base, "--match", "mtp.**", "--out", filepath.Join(noDir, "mtp.safetensors"), "--progress", "none"}, "no such file or directory"},
		{"extract to a directory", "extract", []string{base, "--match", "mtp.**", "--out", filepath.Join(noDir, "mtp"), "--progress", "none"}, "no such file or directory"},
		{"contract", "contract", []string{base, "-o", filepath.Join(noDir, "base.contract.json")}, "no such file or directory"},
		{"cache build", "cache", []string{"build", base, "--out", filepath.Join(aFile, "cache"), "--progress", "none"}, "not a directory"},
		{"cache pack", "cache", []string{"pack", dir, "-o", filepath.Join(noDir, "cache.tar.zst"), "--progress", "none"}, "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runExtractApp(context.Background(), append([]string{tc.args0}, tc.args...)...)
			assert.Equal(t, exitWrite, code, stderr)
			assert.Contains(t, stderr, "ckpt: cannot write output: ")
			assert.Contains(t, stderr, tc.why)
		})
	}
}

// failingWriter fails every write, like stdout redirected to a full disk.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestStdoutWriteErrorExitCode: a report that cannot be written is our
// side's failure (exit 3), not the input's.
func TestStdoutWriteErrorExitCode(t *testing.T) {
	t.Parallel()
	_, base := extractBase(t)
	var errb bytes.Buffer
	app := &App{Out: failingWriter{}, Err: &errb, Getenv: os.Getenv}
	code := app.Run(context.Background(), []string{"inspect", base, "--format", "json"})
	assert.Equal(t, exitWrite, code, errb.String())
	assert.Contains(t, errb.String(), "ckpt: cannot write output: writing to stdout: no space left on device")
}

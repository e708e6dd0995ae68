package ckpt_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/require"
)

// TestNotSafetensors: files that are something else are named as such
// instead of "header too large".
func TestNotSafetensors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, data, kind, says string
	}{
		{"lfs", "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146\nsize 5368709120\n", "git-lfs-pointer", "this is a Git LFS pointer, not the weights (the repository was cloned without git-lfs): run `git lfs pull`"},
		{"html", "<!DOCTYPE html>\n<html><head><title>404</title></head></html>", "html", "HTML page"},
		{"html-lower", "  \n<html>\n<body>Access denied</body></html>", "html", "HTML page"},
		{"config", `{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5"}`, "json", "it looks like a config.json"},
		{"index", `{"metadata": {"total_size": 1}, "weight_map": {"a": "b"}}`, "json", "model.safetensors.index.json"},
		{"zip", "PK\x03\x04\x14\x00\x00\x00\x00\x00archive/data.pkl", "pytorch-zip", "PyTorch checkpoint"},
		{"pickle", "\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9\x03.", "pickle", "Python pickle"},
		{"gguf", "GGUF\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "gguf", "GGUF"},
		{"text", "hello, this is not a checkpoint at all\n", "text", "text file"},
		{"tiny", "GGUF", "gguf", "GGUF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(dir, tc.name+".safetensors")
			require.NoError(t, os.WriteFile(p, []byte(tc.data), 0o644))
			_, err := ckpt.Open(context.Background(), p, ckpt.Options{})
			var ns *ckpt.NotSafetensorsError
			require.ErrorAs(t, err, &ns)
			require.Equal(t, tc.kind, ns.Kind)
			require.Contains(t, err.Error(), tc.says)
			require.Contains(t, err.Error(), "not a safetensors file")
			require.ErrorIs(t, err, ckpt.ErrMalformed)
			require.NotContains(t, err.Error(), "header too large")
		})
	}
	// A random huge length is still "header too large".
	p := filepath.Join(dir, "junk.safetensors")
	require.NoError(t, os.WriteFile(p, []byte("\xff\xff\xff\xff\xff\xff\xff\x01\x00\x01\x02"), 0o644))
	_, err := ckpt.Open(context.Background(), p, ckpt.Options{})
	require.ErrorContains(t, err, "header too large")
}

// TestDirectoryWithoutSafetensors names what the directory holds.
func TestDirectoryWithoutSafetensors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		files []string
		says  string
	}{
		{"pytorch", []string{"config.json", "pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"}, "it holds a PyTorch checkpoint (pytorch_model-00001-of-00002.bin, pytorch_model-00002-of-00002.bin): convert it to safetensors first"},
		{"gguf", []string{"model-q4.gguf"}, "GGUF"},
		{"hf-repo", []string{"blobs/x", "refs/main", "snapshots/abc/config.json"}, "Hugging Face cache repository folder"},
		{"cache", []string{"P300/tensor_cache_bfp8_mesh1x2/manifest.json"}, "tensor cache root"},
		{"empty", nil, "it is empty"},
		{"other", []string{"README.md", "config.json"}, "it holds README.md, config.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := t.TempDir()
			for _, f := range tc.files {
				require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(d, f)), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(d, f), []byte("x"), 0o644))
			}
			_, err := ckpt.Open(context.Background(), d, ckpt.Options{})
			require.ErrorContains(t, err, "not a checkpoint directory")
			require.ErrorContains(t, err, tc.says)
		})
	}
}

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, stdout, stderr := runApp(t, "demo", "--dir", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "==> The MTP head of the base")
	assert.Contains(t, stdout, "mtp.layers.0.self_attn.q_proj.weight")
	assert.Contains(t, stdout, "F8_E4M3")
	assert.Contains(t, stdout, "mtp.*")
	assert.NotContains(t, stdout, "(exit 2)")
	for _, p := range []string{"base/config.json", "ft/model.safetensors.index.json"} {
		_, err := os.Stat(filepath.Join(dir, p))
		assert.NoError(t, err, p)
	}
}

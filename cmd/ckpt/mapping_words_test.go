package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMappingWords holds, byte for byte, the texts of mapping that name
// a plan option (--ignore, --device-dram) in the CLI's words: the refusal
// of an --ignore glob that matches no tensor under cache verify (map and
// cache build: TestPlanFlagErrors), and where cache build's JSON says the
// DRAM figure comes from (map's: TestDaily).
func TestMappingWords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, out := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	require.NoError(t, synth.Write(src, synth.Small()))
	code, _, stderr := runApp(t, "cache", "build", src, "-o", out, "--progress", "none", "--fsync=false")
	require.Equal(t, 0, code, stderr)

	code, _, stderr = runApp(t, "cache", "verify", "--ignore", "nothing.here", "--progress", "none", "--source", src, out)
	assert.Equal(t, 2, code)
	assert.Equal(t, `ckpt: $D/out/P300/tensor_cache_bfp8: no tensor matches --ignore "nothing.here" in $D/src (124 tensors), so it ignores nothing `+
		"(`*` stays inside one dotted segment, `**` crosses segments); the names present start with lm_head.**, model.language_model.**, "+
		"model.visual.**, mtp.**\n", strings.ReplaceAll(stderr, dir, "$D"))

	code, stdout, stderr := runApp(t, "cache", "build", src, "-o", filepath.Join(dir, "out2"), "--progress", "none", "--fsync=false",
		"--device-dram", "512KiB", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Memory struct {
			DRAMFrom string `json:"dram_from"`
		} `json:"memory"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc), stdout)
	assert.Equal(t, "--device-dram", doc.Memory.DRAMFrom)
	assert.Contains(t, stdout, `"dram_from": "--device-dram"`)
}

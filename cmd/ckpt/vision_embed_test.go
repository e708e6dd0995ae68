package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// visionFiles lists the .tensorbin files of a vision folder, by name.
func visionFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tensorbin") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// TestVisionHostEmbedSwitch: by default the vision folder holds the three
// embedding files VisionEmbed writes (model.py@00c023af); --set
// host_vision_embed=true (upstream QWEN36_HOST_VISION_EMBED=1) plans and
// builds the folder without them, their tensors ignored with that reason,
// and the manifest's setting carries to cache verify --read-data, which
// passes; verified with the switch turned back off, the same folder lacks
// exactly those three files (exit 1).
func TestVisionHostEmbedSwitch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := filepath.Join(dir, "small")
	require.NoError(t, synth.Write(src, synth.Small()))
	embedding := []string{"visual.patch_embed_proj_b", "visual.patch_embed_proj_w", "visual.pos_embed_w_rm"}

	code, stdout, stderr := runApp(t, "map", src, "--mesh", "1x2", "--set", "host_vision_embed=true", "--format", "json")
	require.Equal(t, 0, code, stderr)
	var doc struct {
		Vision struct {
			Settings map[string]bool `json:"settings"`
			Entries  []struct {
				Target string `json:"target"`
			} `json:"entries"`
			Ignored []struct {
				Name, Reason string
			} `json:"ignored"`
			Unmapped []any `json:"unmapped"`
			Problems []any `json:"problems"`
		} `json:"vision"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.True(t, doc.Vision.Settings["host_vision_embed"])
	assert.Empty(t, doc.Vision.Unmapped)
	assert.Empty(t, doc.Vision.Problems)
	for _, e := range doc.Vision.Entries {
		for _, n := range embedding {
			assert.False(t, strings.HasPrefix(e.Target, n), e.Target)
		}
	}
	var ignored []string
	for _, ig := range doc.Vision.Ignored {
		ignored = append(ignored, ig.Name)
		assert.Contains(t, ig.Reason, "QWEN36_HOST_VISION_EMBED=1")
	}
	assert.Equal(t, []string{"model.visual.patch_embed.proj.bias", "model.visual.patch_embed.proj.weight", "model.visual.pos_embed.weight"}, ignored)

	builds := map[string][]string{}
	for name, set := range map[string][]string{"device": nil, "host": {"--set", "host_vision_embed=true"}} {
		out := filepath.Join(dir, name)
		args := append([]string{"cache", "build", src, "--mesh", "1x2", "--out", out, "--progress", "none"}, set...)
		code, _, stderr := runApp(t, args...)
		require.Equal(t, 0, code, stderr)
		builds[name] = visionFiles(t, filepath.Join(out, "P300", "tensor_cache_bfp8"))
	}
	var gone []string
	for _, f := range builds["device"] {
		if !contains(builds["host"], f) {
			gone = append(gone, f[:strings.Index(f, ".tp")])
		}
	}
	assert.Equal(t, embedding, gone, "the host build lacks exactly the embedding files")
	assert.Len(t, builds["host"], len(builds["device"])-3)

	host := filepath.Join(dir, "host")
	code, stdout, stderr = runApp(t, "cache", "verify", host, "--source", src, "--read-data", "--progress", "none")
	require.Equal(t, 0, code, stdout+stderr)
	code, stdout, stderr = runApp(t, "cache", "verify", host, "--source", src, "--set", "host_vision_embed=false", "--progress", "none")
	require.Equal(t, 1, code, stdout+stderr)
	for _, n := range embedding {
		assert.Contains(t, stdout, n, "named as missing")
	}
}

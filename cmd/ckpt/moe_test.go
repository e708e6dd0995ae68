package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMoECommands: a tiny Qwen3.5-MoE checkpoint (fused FP8 and per-expert
// bf16) through verify, map (1x2 and 1x4, KV heads replicated at 1x4; the
// memory table), cache build, cache verify --read-data, cache identify and
// map --against-cache: every command exits 0, nothing unmapped.
func TestMoECommands(t *testing.T) {
	t.Parallel()
	for name, edit := range map[string]func(o *synth.Options){
		"fused-fp8":       func(o *synth.Options) {},
		"per-expert-bf16": func(o *synth.Options) { o.FP8, o.PerExpert = false, true },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			o := synth.SmallMoE()
			edit(&o)
			require.NoError(t, synth.Write(src, o))
			code, out, errs := runApp(t, "verify", src)
			require.Equal(t, 0, code, out+errs)
			for _, mesh := range []string{"1x2", "1x4"} {
				code, out, errs = runApp(t, "map", src, "--mesh", mesh, "--format", "json")
				require.Equal(t, 0, code, out+errs)
				var doc struct {
					Entries []struct {
						Target string `json:"target"`
					} `json:"entries"`
					Unmapped  []string          `json:"unmapped"`
					PerDevice []json.RawMessage `json:"per_device"`
				}
				require.NoError(t, json.Unmarshal([]byte(out), &doc))
				assert.Empty(t, doc.Unmapped)
				assert.Len(t, doc.PerDevice, int(mesh[2]-'0'))
				targets := map[string]bool{}
				for _, e := range doc.Entries {
					targets[e.Target] = true
				}
				assert.True(t, targets["layers.0/moe.experts.gate_proj_ep_swiglu"+mesh[2:]], "%v", targets)
				assert.True(t, targets["layers.3/tp/wqkv_fused_qkvg.il"])
				cache := filepath.Join(dir, "cache"+mesh)
				code, out, errs = runApp(t, "cache", "build", src, "--mesh", mesh, "-o", cache, "--progress", "none")
				require.Equal(t, 0, code, out+errs)
				code, out, errs = runApp(t, "cache", "verify", cache, "--source", src, "--mesh", mesh, "--read-data", "--progress", "none")
				require.Equal(t, 0, code, out+errs)
				device := map[string]string{"1x2": "P300", "1x4": "P150x4"}[mesh]
				code, out, errs = runApp(t, "cache", "identify", filepath.Join(cache, device, "tensor_cache_bfp8_mesh"+mesh), "--source", src)
				require.Equal(t, 0, code, out+errs)
				assert.Contains(t, out, "exactly qwen36-mtp@pr55548")
				code, out, errs = runApp(t, "map", src, "--mesh", mesh, "--against-cache", cache)
				require.Equal(t, 0, code, out+errs)
				assert.Contains(t, out, "identical")
			}
		})
	}
}

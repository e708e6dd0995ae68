package synth_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadInventory(t *testing.T) *synth.Inventory {
	t.Helper()
	inv, err := synth.LoadInventory()
	require.NoError(t, err)
	return inv
}

func row(name string, dt numfmt.DType, shape []int64) string {
	return fmt.Sprintf("%s %s %v", name, dt, shape)
}

// TestArchReproducesInventory: the qwen3_5 profile derives, from the
// config WriteInventory writes, exactly the inventory's tensors.
func TestArchReproducesInventory(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	for _, variant := range []string{"fp8", "bf16"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, synth.WriteInventory(dir, variant))
			c, err := ckpt.Open(context.Background(), dir, ckpt.Options{})
			require.NoError(t, err)
			defer c.Close()
			require.True(t, arch.Is(c.Config))
			q, err := arch.ParseQwen35(c.Config)
			require.NoError(t, err)
			var want, got []string
			for _, it := range inv.Checkpoints[variant].Tensors {
				want = append(want, row(it.Name, it.DType, it.Shape))
			}
			for _, at := range q.Tensors(variant == "fp8", 128, 128) {
				got = append(got, row(at.Name, at.DType, at.Shape))
			}
			assert.ElementsMatch(t, want, got)
			// And what was written is what the inventory lists.
			var stored []string
			for _, tn := range c.Tensors {
				stored = append(stored, row(tn.Name, tn.DType, tn.Shape))
			}
			assert.ElementsMatch(t, want, stored)
			assert.Equal(t, inv.Checkpoints[variant].Counts.TotalBytes, c.Index.TotalSize)
			lt, ok := c.Config.Get("text_config.layer_types")
			require.True(t, ok)
			assert.Len(t, lt, 64)
			qc := c.Config.Quantization()
			if variant == "bf16" {
				assert.Nil(t, qc)
				return
			}
			require.True(t, qc.IsBlockFP8())
			assert.Equal(t, "quantization_config", qc.Path)
			assert.Equal(t, []int64{128, 128}, qc.BlockSize)
			assert.Contains(t, qc.ModulesToNotConvert, "mtp.fc")
			assert.Contains(t, qc.ModulesToNotConvert, "model.language_model.layers.0.linear_attn.A_log")
			assert.Contains(t, qc.ModulesToNotConvert, "model.visual.blocks.0.attn.qkv")
			assert.NotContains(t, qc.ModulesToNotConvert, "model.language_model.layers.0.mlp.gate_proj")
		})
	}
}

// TestInventorySparse: the layout is ~31 GB apparent but nearly nothing on
// disk, 66 shards named like the audited copy.

package verify_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
	"github.com/ckpt-dev/ckpt/ckpt/synth"
	"github.com/ckpt-dev/ckpt/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadInventory reads the embedded 27B inventory.
func loadInventory(t testing.TB) *synth.Inventory {
	t.Helper()
	inv, err := synth.LoadInventory()
	require.NoError(t, err)
	return inv
}

// writeSparse writes the full-scale layout of a variant as sparse files.
func writeSparse(t testing.TB, dir string, variant string) {
	t.Helper()
	require.NoError(t, synth.WriteInventory(dir, variant))
}

// TestQwen35ReproducesInventory derives the expected tensors from the
// inventory's config alone and compares name, dtype (and alternatives) and
// shape with the inventory, for the bf16 and the FP8 variant.
func TestQwen35ReproducesInventory(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	for _, variant := range []string{"bf16", "fp8"} {
		cfgMap, err := inv.InventoryConfig(variant)
		require.NoError(t, err)
		raw, err := json.Marshal(cfgMap)
		require.NoError(t, err)
		cfg, err := ckpt.ParseConfig(raw, "config.json")
		require.NoError(t, err)
		require.True(t, arch.Is(cfg))
		q, err := arch.ParseQwen35(cfg)
		require.NoError(t, err)
		qc := cfg.Quantization()
		var notConvert func(string) bool
		if qc != nil {
			l := quant.NewNotConvertList(qc.ModulesToNotConvert)
			notConvert = func(m string) bool { _, kept := l.Match(m); return kept }
		}
		got := q.TensorsExcept(variant == "fp8", 128, 128, notConvert)
		want := inv.Checkpoints[variant].Tensors
		require.Len(t, got, len(want), variant)
		byName := map[string]arch.Tensor{}
		for _, g := range got {
			byName[g.Name] = g
		}
		for _, w := range want {
			g, ok := byName[w.Name]
			require.True(t, ok, "%s: %s not derived", variant, w.Name)
			assert.Equal(t, w.Shape, g.Shape, "%s: %s", variant, w.Name)
			assert.Equal(t, w.DType, g.DType, "%s: %s", variant, w.Name)
			if w.DTypeAlternatives != nil {
				assert.ElementsMatch(t, w.DTypeAlternatives, g.Alt, "%s: %s", variant, w.Name)
			}
			assert.Equal(t, w.Group, g.Group, "%s: %s", variant, w.Name)
		}
	}
}

// TestVerifyFullScaleSparse verifies the full-scale 27B layouts written as
// sparse files: every structural check passes.
func TestVerifyFullScaleSparse(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"bf16", "fp8"} {
		dir := t.TempDir()
		writeSparse(t, dir, variant)
		c, err := ckpt.Open(context.Background(), dir, ckpt.Options{Lenient: true})
		require.NoError(t, err)
		rep, err := verify.Check(context.Background(), c, verify.CheckOptions{})
		c.Close()
		require.NoError(t, err)
		assert.True(t, rep.OK, variant)
		ids := map[string]ckpt.Status{}
		for _, ch := range rep.Checks {
			assert.NotEqual(t, ckpt.Fail, ch.Status, "%s: %s: %s", variant, ch.ID, ch.Message)
			if _, seen := ids[string(ch.ID)]; !seen {
				ids[string(ch.ID)] = ch.Status
			}
		}
		assert.Equal(t, ckpt.Pass, ids["arch.missing"], variant)
		assert.Equal(t, ckpt.Pass, ids["arch.unexpected"], variant)
		assert.Equal(t, ckpt.Pass, ids["arch.shape"], variant)
		assert.Equal(t, ckpt.Pass, ids["arch.dtype"], variant)
		if variant == "fp8" {
			assert.Equal(t, ckpt.Pass, ids["fp8.scale_shape"])
			assert.Equal(t, ckpt.Pass, ids["fp8.scale_missing"])
		}
	}
}

// BenchmarkStructuralVerify27B times open + structural verify of the
// full-scale FP8 layout (1606 tensors, sparse shards).
func BenchmarkStructuralVerify27B(b *testing.B) {
	dir := b.TempDir()
	writeSparse(b, dir, "fp8")
	ctx := context.Background()
	for b.Loop() {
		c, err := ckpt.Open(ctx, dir, ckpt.Options{Lenient: true})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := verify.Check(ctx, c, verify.CheckOptions{})
		c.Close()
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Checks)
		}
	}
}

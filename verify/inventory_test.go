package verify_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/arch"
	"github.com/ckpt-dev/ckpt/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedSpec finds shared/spec by walking up from the working directory.
func sharedSpec(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		p := filepath.Join(dir, "shared", "spec")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/spec not found above the test directory")
		}
		dir = parent
	}
}

type invTensor struct {
	Name   string       `json:"name"`
	DType  ckpt.DType   `json:"dtype"`
	Shape  []int64      `json:"shape"`
	Group  string       `json:"group"`
	Alt    []ckpt.DType `json:"dtype_alternatives"`
	Quant  bool         `json:"quantized"`
	NBytes int64        `json:"nbytes"`
}

type inventory struct {
	Config struct {
		Top    map[string]any `json:"top_level"`
		Text   map[string]any `json:"text_config"`
		Vision map[string]any `json:"vision_config"`
		FP8    map[string]any `json:"fp8_quantization_config"`
	} `json:"config"`
	Checkpoints map[string]struct {
		Tensors []invTensor `json:"tensors"`
	} `json:"checkpoints"`
}

func loadInventory(t testing.TB) *inventory {
	data, err := os.ReadFile(filepath.Join(sharedSpec(t), "qwen3_5-27b-inventory.json"))
	require.NoError(t, err)
	var inv inventory
	require.NoError(t, json.Unmarshal(data, &inv))
	return &inv
}

// inventoryConfig builds config.json for the variant from the inventory.
func inventoryConfig(inv *inventory, variant string) map[string]any {
	cfg := map[string]any{}
	for k, v := range inv.Config.Top {
		cfg[k] = v
	}
	text := map[string]any{}
	for k, v := range inv.Config.Text {
		text[k] = v
	}
	n := int(text["num_hidden_layers"].(float64))
	lt := make([]string, n)
	for i := range lt {
		lt[i] = "linear_attention"
		if (i+1)%4 == 0 {
			lt[i] = "full_attention"
		}
	}
	text["layer_types"] = lt
	cfg["text_config"] = text
	vis := map[string]any{}
	for k, v := range inv.Config.Vision {
		vis[k] = v
	}
	vis["model_type"] = "qwen3_5_vision"
	cfg["vision_config"] = vis
	if variant == "fp8" {
		var skip []string
		for _, t := range inv.Checkpoints[variant].Tensors {
			if strings.HasSuffix(t.Name, ".weight") && t.DType != ckpt.F8E4M3 {
				skip = append(skip, strings.TrimSuffix(t.Name, ".weight"))
			}
		}
		skip = append(skip, "model.language_model.layers.0.mlp.gate") // MoE leftover, names no tensor
		cfg["quantization_config"] = map[string]any{"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
			"weight_block_size": []int{128, 128}, "modules_to_not_convert": skip}
	}
	return cfg
}

// writeSparse writes the full-scale layout of a variant as sparse files:
// real headers, data regions left as holes.
func writeSparse(t testing.TB, dir string, inv *inventory, variant string) {
	t.Helper()
	cfg, err := json.MarshalIndent(inventoryConfig(inv, variant), "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	shards := map[string][]ckpt.WriteSpec{}
	var keys []string
	for _, tn := range inv.Checkpoints[variant].Tensors {
		g, layer := ckpt.GroupOf(tn.Name)
		k := "outside"
		switch {
		case g == ckpt.GroupMTP:
			k = "mtp"
		case layer >= 0 && g != ckpt.GroupVisual:
			k = fmt.Sprintf("layers-%d", layer/8)
		}
		if shards[k] == nil {
			keys = append(keys, k)
		}
		shards[k] = append(shards[k], ckpt.WriteSpec{Name: tn.Name, DType: tn.DType, Shape: tn.Shape})
	}
	sort.Strings(keys)
	wm := map[string]string{}
	var total int64
	for _, k := range keys {
		name := k + ".safetensors"
		hdr, order, err := ckpt.LayoutHeader(shards[k], map[string]string{"format": "pt"})
		require.NoError(t, err)
		f, err := os.Create(filepath.Join(dir, name))
		require.NoError(t, err)
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
		_, err = f.Write(append(lenBuf[:], hdr...))
		require.NoError(t, err)
		end := int64(0)
		for _, ti := range order {
			wm[ti.Name] = name
			end = int64(ti.End)
		}
		total += end
		require.NoError(t, f.Truncate(8+int64(len(hdr))+end))
		require.NoError(t, f.Close())
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": wm})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), idx, 0o644))
}

// TestQwen35ReproducesInventory derives the expected tensors from the
// inventory's config alone and compares name, dtype (and alternatives) and
// shape with the inventory, for the bf16 and the FP8 variant.
func TestQwen35ReproducesInventory(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	for _, variant := range []string{"bf16", "fp8"} {
		raw, err := json.Marshal(inventoryConfig(inv, variant))
		require.NoError(t, err)
		cfg, err := ckpt.ParseConfig(raw, "config.json")
		require.NoError(t, err)
		require.True(t, arch.Is(cfg))
		q, err := arch.ParseQwen35(cfg)
		require.NoError(t, err)
		qc := cfg.Quantization()
		var notConvert func(string) bool
		if qc != nil {
			notConvert = func(m string) bool {
				for _, e := range qc.ModulesToNotConvert {
					if verify.MatchModule(e, m) {
						return true
					}
				}
				return false
			}
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
			if w.Alt != nil {
				assert.ElementsMatch(t, w.Alt, g.Alt, "%s: %s", variant, w.Name)
			}
			assert.Equal(t, w.Group, g.Group, "%s: %s", variant, w.Name)
		}
	}
}

// TestVerifyFullScaleSparse verifies the full-scale 27B layouts written as
// sparse files: every structural check passes.
func TestVerifyFullScaleSparse(t *testing.T) {
	t.Parallel()
	inv := loadInventory(t)
	for _, variant := range []string{"bf16", "fp8"} {
		dir := t.TempDir()
		writeSparse(t, dir, inv, variant)
		c, err := verify.Open(context.Background(), dir, ckpt.Options{})
		require.NoError(t, err)
		rep, err := verify.Run(context.Background(), c, verify.Options{})
		c.Close()
		require.NoError(t, err)
		assert.True(t, rep.OK, variant)
		ids := map[string]verify.Status{}
		for _, ch := range rep.Checks {
			assert.NotEqual(t, verify.Fail, ch.Status, "%s: %s: %s", variant, ch.ID, ch.Message)
			if _, seen := ids[ch.ID]; !seen {
				ids[ch.ID] = ch.Status
			}
		}
		assert.Equal(t, verify.Pass, ids["arch.missing"], variant)
		assert.Equal(t, verify.Pass, ids["arch.unexpected"], variant)
		assert.Equal(t, verify.Pass, ids["arch.shape"], variant)
		assert.Equal(t, verify.Pass, ids["arch.dtype"], variant)
		if variant == "fp8" {
			assert.Equal(t, verify.Pass, ids["fp8.scale_shape"])
			assert.Equal(t, verify.Pass, ids["fp8.scale_missing"])
		}
	}
}

// BenchmarkStructuralVerify27B times open + structural verify of the
// full-scale FP8 layout (1606 tensors, sparse shards).
func BenchmarkStructuralVerify27B(b *testing.B) {
	inv := loadInventory(b)
	dir := b.TempDir()
	writeSparse(b, dir, inv, "fp8")
	ctx := context.Background()
	for b.Loop() {
		c, err := verify.Open(ctx, dir, ckpt.Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := verify.Run(ctx, c, verify.Options{})
		c.Close()
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Checks)
		}
	}
}

package mapping_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/stretchr/testify/require"
)

// sharedDir finds shared/ by walking up from the test's directory; it
// skips the test when it is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if st, err := os.Stat(filepath.Join(dir, "shared", "spec")); err == nil && st.IsDir() {
			return filepath.Join(dir, "shared")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("shared/spec not found above the test directory")
		}
		dir = parent
	}
}

type invTensor struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	Group string  `json:"group"`
}

type inventory struct {
	Config struct {
		TopLevel      map[string]any `json:"top_level"`
		TextConfig    map[string]any `json:"text_config"`
		VisionConfig  map[string]any `json:"vision_config"`
		FP8QuantConfg map[string]any `json:"fp8_quantization_config"`
	} `json:"config"`
	Checkpoints map[string]struct {
		Tensors []invTensor `json:"tensors"`
	} `json:"checkpoints"`
}

// writeInventory writes the full-scale 27B layout of the inventory
// ("fp8" or "bf16") as a sparse sharded checkpoint: real headers, data
// regions left as holes (ftruncate). edit may change the tensor list and
// the text config before writing. It returns the directory and the number
// of tensors written.
func writeInventory(t testing.TB, variant string, edit func(ts []invTensor, text map[string]any) []invTensor) (string, int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(sharedDir(t), "spec", "qwen3_5-27b-inventory.json"))
	require.NoError(t, err)
	var inv inventory
	require.NoError(t, json.Unmarshal(raw, &inv))
	ck, ok := inv.Checkpoints[variant]
	require.True(t, ok, "variant %s", variant)
	text := map[string]any{}
	for k, v := range inv.Config.TextConfig {
		if k != "layer_types" { // a description in the inventory; the interval rule applies
			text[k] = v
		}
	}
	ts := append([]invTensor(nil), ck.Tensors...)
	if edit != nil {
		ts = edit(ts, text)
	}
	cfg := map[string]any{}
	for k, v := range inv.Config.TopLevel {
		cfg[k] = v
	}
	cfg["text_config"] = text
	cfg["vision_config"] = inv.Config.VisionConfig
	if variant == "fp8" {
		q := map[string]any{}
		for k, v := range inv.Config.FP8QuantConfg {
			q[k] = v
		}
		q["modules_to_not_convert"] = []string{}
		cfg["quantization_config"] = q
	}
	dir := t.TempDir()
	cb, err := json.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cb, 0o644))
	// Shards: one per 8 decoder layers, plus mtp and the rest.
	shardOf := func(name string) string {
		g, layer := ckpt.GroupOf(name)
		switch {
		case g == ckpt.GroupMTP:
			return "mtp"
		case layer >= 0 && g != ckpt.GroupVisual:
			return fmt.Sprintf("layers-%d", layer/8)
		}
		return "outside"
	}
	byShard := map[string][]ckpt.WriteSpec{}
	var keys []string
	for _, x := range ts {
		k := shardOf(x.Name)
		if _, ok := byShard[k]; !ok {
			keys = append(keys, k)
		}
		byShard[k] = append(byShard[k], ckpt.WriteSpec{Name: x.Name, DType: ckpt.DType(x.DType), Shape: x.Shape})
	}
	weightMap := map[string]string{}
	var total uint64
	for i, k := range keys {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(keys))
		hdr, order, err := ckpt.LayoutHeader(byShard[k], map[string]string{"format": "pt"})
		require.NoError(t, err)
		f, err := os.Create(filepath.Join(dir, file))
		require.NoError(t, err)
		var lenBuf [8]byte
		binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
		_, err = f.Write(append(lenBuf[:], hdr...))
		require.NoError(t, err)
		var data uint64
		if len(order) > 0 {
			data = order[len(order)-1].End
		}
		require.NoError(t, f.Truncate(int64(8+uint64(len(hdr))+data)))
		require.NoError(t, f.Close())
		total += data
		for _, s := range byShard[k] {
			weightMap[s.Name] = file
		}
	}
	idx, err := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, ckpt.IndexFile), idx, 0o644))
	return dir, len(ts)
}

func hasPrefix(name string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

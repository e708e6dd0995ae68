package synth

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// InventoryFile is the name of the embedded real 27B layout: every tensor of
// the bf16 and FP8 Qwen3.5-27B checkpoints with its dtype, shape and role, and
// the configs they come with (gzip-compressed in testdata/).
const InventoryFile = "qwen3_5-27b-inventory.json"

//go:embed testdata/qwen3_5-27b-inventory.json.gz
var inventoryGz []byte

// InventoryTensor is one tensor of the inventory.
type InventoryTensor struct {
	Name              string         `json:"name"`
	DType             numfmt.DType   `json:"dtype"`
	Shape             []int64        `json:"shape"`
	Group             string         `json:"group"`
	Role              string         `json:"role"`
	NBytes            int64          `json:"nbytes"`
	ScaleOf           string         `json:"scale_of,omitempty"`
	DTypeAlternatives []numfmt.DType `json:"dtype_alternatives,omitempty"`
}

// InventoryCheckpoint is one variant ("bf16" or "fp8") of the inventory.
type InventoryCheckpoint struct {
	Counts struct {
		Tensors      int              `json:"tensors"`
		ByDType      map[string]int   `json:"by_dtype"`
		BytesByDType map[string]int64 `json:"bytes_by_dtype"`
		TotalBytes   int64            `json:"total_bytes"`
	} `json:"counts"`
	ParameterCount map[string]int64  `json:"js_parameterCount_expected"`
	Tensors        []InventoryTensor `json:"tensors"`
}

// Inventory is the parsed 27B inventory (see InventoryFile).
type Inventory struct {
	Config struct {
		TopLevel       map[string]any `json:"top_level"`
		TextConfig     map[string]any `json:"text_config"`
		VisionConfig   map[string]any `json:"vision_config"`
		FP8QuantConfig map[string]any `json:"fp8_quantization_config"`
	} `json:"config"`
	Checkpoints map[string]*InventoryCheckpoint `json:"checkpoints"`
}

// LoadInventory parses the embedded 27B inventory. Each call returns a
// fresh copy, so callers may modify it.
func LoadInventory() (*Inventory, error) {
	zr, err := gzip.NewReader(bytes.NewReader(inventoryGz))
	if err != nil {
		return nil, fmt.Errorf("opening embedded %s: %w", InventoryFile, err)
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	var inv Inventory
	if err := dec.Decode(&inv); err != nil {
		return nil, fmt.Errorf("parsing embedded %s: %w", InventoryFile, err)
	}
	return &inv, nil
}

// InventoryConfig builds config.json for a variant from the inventory's
// config section: the top-level keys, a nested text_config with a real
// layer_types list, vision_config and, for fp8, a top-level
// quantization_config whose modules_to_not_convert lists the BF16 modules.
func (inv *Inventory) InventoryConfig(variant string) (map[string]any, error) {
	ck := inv.Checkpoints[variant]
	if ck == nil {
		return nil, fmt.Errorf("inventory has no %q checkpoint", variant)
	}
	cfg := map[string]any{}
	for k, v := range inv.Config.TopLevel {
		cfg[k] = v
	}
	text := map[string]any{}
	for k, v := range inv.Config.TextConfig {
		text[k] = v
	}
	n, ok := jsonval.Int(text["num_hidden_layers"])
	if !ok {
		return nil, fmt.Errorf("inventory text_config has no num_hidden_layers")
	}
	interval, ok := jsonval.Int(text["full_attention_interval"])
	if !ok || interval <= 0 {
		interval = 4
	}
	lt := make([]string, n)
	for i := range lt {
		lt[i] = "linear_attention"
		if (int64(i)+1)%interval == 0 {
			lt[i] = "full_attention"
		}
	}
	text["layer_types"] = lt
	cfg["text_config"] = text
	vision := map[string]any{}
	for k, v := range inv.Config.VisionConfig {
		vision[k] = v
	}
	vision["model_type"] = "qwen3_5_vision" // the inventory annotates this value
	cfg["vision_config"] = vision
	if variant == "fp8" {
		q := map[string]any{}
		for k, v := range inv.Config.FP8QuantConfig {
			q[k] = v
		}
		seen := map[string]bool{}
		var skip []string
		for _, t := range ck.Tensors {
			if t.DType == numfmt.F8E4M3 || t.ScaleOf != "" {
				continue
			}
			m := strings.TrimSuffix(strings.TrimSuffix(t.Name, ".weight"), ".bias")
			if !seen[m] {
				seen[m] = true
				skip = append(skip, m)
			}
		}
		sort.Strings(skip)
		q["modules_to_not_convert"] = skip
		cfg["quantization_config"] = q
	}
	return cfg, nil
}

// inventoryShard is the audited copy's shard naming: one file per decoder
// layer, one for the MTP head, one for everything else.
func inventoryShard(name string) string {
	g, _, layer := ckpt.GroupOf(name)
	switch {
	case g == ckpt.GroupMTP:
		return "mtp.safetensors"
	case g == ckpt.GroupText:
		return fmt.Sprintf("layers-%d.safetensors", layer)
	}
	return "outside.safetensors"
}

// WriteInventory writes the real layout of the 27B checkpoint (variant
// "fp8" or "bf16") into dir as sparse files: real headers (ckpt.LayoutHeader)
// followed by data regions that are holes (os.File.Truncate), so ~31 GB
// (fp8) or ~56 GB (bf16) apparent and almost nothing on disk. It also writes
// the index, with the correct total_size, and config.json.
func WriteInventory(dir, variant string) error {
	_, err := WriteInventoryEdited(dir, variant, nil)
	return err
}

// WriteInventoryEdited is WriteInventory with a hook: edit may change the
// tensor list and the text_config before anything is written (to inject a
// defect). It returns the number of tensors written. A missing inventory is
// an error matching os.ErrNotExist, so that tests can skip.
func WriteInventoryEdited(dir, variant string, edit func(ts []InventoryTensor, text map[string]any) []InventoryTensor) (int, error) {
	inv, err := LoadInventory()
	if err != nil {
		return 0, err
	}
	ck := inv.Checkpoints[variant]
	if ck == nil {
		return 0, fmt.Errorf("inventory has no %q checkpoint", variant)
	}
	cfg, err := inv.InventoryConfig(variant)
	if err != nil {
		return 0, err
	}
	ts := append([]InventoryTensor(nil), ck.Tensors...)
	if edit != nil {
		ts = edit(ts, cfg["text_config"].(map[string]any))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	specs := map[string][]ckpt.WriteSpec{}
	weightMap := map[string]string{}
	var total int64
	for _, t := range ts {
		s := inventoryShard(t.Name)
		specs[s] = append(specs[s], ckpt.WriteSpec{Name: t.Name, DType: t.DType, Shape: t.Shape})
		weightMap[t.Name] = s
	}
	for shard, ss := range specs {
		var meta map[string]string
		if shard != "outside.safetensors" { // as in the audited copy
			meta = map[string]string{"format": "pt"}
		}
		n, err := writeSparse(filepath.Join(dir, shard), ss, meta)
		if err != nil {
			return 0, err
		}
		total += n
	}
	idx, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, ckpt.IndexFile), idx, 0o644); err != nil {
		return 0, err
	}
	c, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return 0, err
	}
	return len(ts), os.WriteFile(filepath.Join(dir, "config.json"), c, 0o644)
}

// writeSparse writes one sparse shard and returns its data length.
func writeSparse(path string, specs []ckpt.WriteSpec, meta map[string]string) (int64, error) {
	hdr, order, err := ckpt.LayoutHeader(specs, meta)
	if err != nil {
		return 0, fmt.Errorf("laying out %s: %w", path, err)
	}
	var dataLen uint64
	if len(order) > 0 {
		dataLen = order[len(order)-1].End
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hdr)))
	_, err = f.Write(lenBuf[:])
	if err == nil {
		_, err = f.Write(hdr)
	}
	if err == nil {
		err = f.Truncate(8 + int64(len(hdr)) + int64(dataLen))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("writing %s: %w", path, err)
	}
	return int64(dataLen), nil
}

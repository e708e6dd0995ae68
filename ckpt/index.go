package ckpt

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// IndexFile is the conventional name of a sharded checkpoint's index.
const IndexFile = "model.safetensors.index.json"

// IndexEntry maps one tensor to its shard file.
type IndexEntry struct {
	Tensor string
	File   string
}

// Index is a parsed model.safetensors.index.json.
type Index struct {
	File      string
	Metadata  map[string]any
	TotalSize int64 // metadata.total_size; -1 when absent or not an integer
	WeightMap []IndexEntry
	// Duplicates lists tensors that appear more than once in weight_map.
	Duplicates []string
}

// ParseIndex parses index bytes, keeping weight_map order and noticing
// duplicate keys.
func ParseIndex(data []byte, file string) (*Index, error) {
	var top struct {
		Metadata  map[string]any  `json:"metadata"`
		WeightMap json.RawMessage `json:"weight_map"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return nil, &FormatError{File: file, Offset: dec.InputOffset(), Reason: "invalid JSON in index: " + err.Error()}
	}
	if top.WeightMap == nil {
		return nil, &FormatError{File: file, Offset: -1, Reason: "index has no weight_map"}
	}
	idx := &Index{File: file, Metadata: top.Metadata, TotalSize: -1}
	if v, ok := top.Metadata["total_size"]; ok {
		if n, ok := AsInt(v); ok {
			idx.TotalSize = n
		}
	}
	wd := json.NewDecoder(bytes.NewReader(top.WeightMap))
	if t, err := wd.Token(); err != nil || t != json.Delim('{') {
		return nil, &FormatError{File: file, Offset: -1, Reason: "weight_map must be an object of tensor name to shard file"}
	}
	seen := map[string]bool{}
	for wd.More() {
		kt, err := wd.Token()
		if err != nil {
			return nil, &FormatError{File: file, Offset: -1, Reason: "invalid weight_map: " + err.Error()}
		}
		vt, err := wd.Token()
		if err != nil {
			return nil, &FormatError{File: file, Offset: -1, Reason: "invalid weight_map: " + err.Error()}
		}
		k, _ := kt.(string)
		v, ok := vt.(string)
		if !ok {
			return nil, &FormatError{File: file, Tensor: k, Offset: -1, Reason: fmt.Sprintf("weight_map value must be a shard file name, found %v", vt)}
		}
		if seen[k] {
			idx.Duplicates = append(idx.Duplicates, k)
			continue
		}
		seen[k] = true
		idx.WeightMap = append(idx.WeightMap, IndexEntry{Tensor: k, File: v})
	}
	return idx, nil
}

// Shards lists the distinct shard names in first-seen order.
func (idx *Index) Shards() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range idx.WeightMap {
		if !seen[e.File] {
			seen[e.File] = true
			out = append(out, e.File)
		}
	}
	return out
}

package ckpt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	if err := decodeObject(data, &top); err != nil {
		return nil, &FormatError{File: file, Offset: jsonErrOffset(err), Reason: "invalid JSON in index: " + err.Error()}
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

// decodeObject decodes a JSON document that must be one object (numbers as
// json.Number), with messages that do not mention Go types.
func decodeObject(data []byte, v any) error {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return errors.New("empty document, expected a JSON object")
	}
	if trimmed[0] != '{' {
		var x any
		if json.Unmarshal(trimmed, &x) != nil {
			return &json.SyntaxError{Offset: int64(len(data) - len(trimmed))}
		}
		return fmt.Errorf("expected a JSON object, found %s", jsonKind(x))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s must not be a JSON %s", te.Field, te.Value)
		}
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &json.SyntaxError{Offset: dec.InputOffset()}
	}
	return nil
}

func jsonKind(x any) string {
	switch x.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// jsonErrOffset is the byte offset a JSON error points at, or -1.
func jsonErrOffset(err error) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	return -1
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

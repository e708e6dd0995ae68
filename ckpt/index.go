package ckpt

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
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

// indexMaxDepth bounds the nesting of an index: below the depth at which
// Python's json module (the index reader of transformers and vLLM) fails
// with RecursionError, about 1000.
const indexMaxDepth = 512

// ParseIndex parses index bytes, keeping weight_map order and noticing
// duplicate keys.
//
// The index is read as its loaders read it (transformers and vLLM:
// json.load, then ["weight_map"]): keys are case-sensitive, so an index
// whose only weight map is "WEIGHT_MAP" has none; a tensor listed twice in
// weight_map maps to its last shard, as in a Python dict, and is recorded
// in Duplicates (the index.duplicate_key finding). ckpt is stricter than
// Python's json where documents are ambiguous or not JSON (docs/formats.md):
// any other duplicate key, an escape of a lone surrogate, NaN or Infinity,
// a number beyond float64, invalid UTF-8 and nesting deeper than 512
// levels are errors.
func ParseIndex(data []byte, file string) (*Index, error) {
	ferr := func(off int64, tensor, format string, args ...any) error {
		return &FormatError{File: file, Tensor: tensor, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	jerr := func(err error) error {
		var se *jsonSyntaxError
		if errors.As(err, &se) {
			return ferr(se.Offset, "", "invalid JSON in index: %s", se.Msg)
		}
		return err
	}
	if !utf8.Valid(data) {
		return nil, ferr(int64(firstInvalidUTF8(data)), "", "invalid UTF-8 in index")
	}
	s := &jscan{buf: data, maxDepth: indexMaxDepth}
	if s.peek() != '{' {
		if s.pos >= len(data) {
			return nil, ferr(-1, "", "invalid JSON in index: empty document, expected a JSON object")
		}
		return nil, ferr(int64(s.pos), "", "invalid JSON in index: expected a JSON object, found %s", s.found())
	}
	if err := s.open('{'); err != nil {
		return nil, jerr(err)
	}
	idx := &Index{File: file, TotalSize: -1}
	seenKey := map[string]bool{}
	var haveWM bool
	var others []string
	for first := true; ; first = false {
		ok, err := s.more('}', first)
		if err != nil {
			return nil, jerr(err)
		}
		if !ok {
			break
		}
		k, at, err := s.key()
		if err != nil {
			return nil, jerr(err)
		}
		if seenKey[k] {
			return nil, ferr(int64(at), "", "duplicate key %s in the index (Python's json.load keeps the last, other readers the first)", Quote(k))
		}
		seenKey[k] = true
		switch k {
		case "weight_map":
			haveWM = true
			if err := parseWeightMap(s, idx, ferr, jerr); err != nil {
				return nil, err
			}
		case "metadata":
			vat := s.pos
			v, err := s.value()
			if err != nil {
				return nil, jerr(err)
			}
			switch m := v.(type) {
			case nil:
			case map[string]any:
				idx.Metadata = m
			default:
				return nil, ferr(int64(vat), "", "metadata must not be a JSON %s", jsonKindName(v))
			}
		default:
			others = append(others, k)
			if _, err := s.value(); err != nil {
				return nil, jerr(err)
			}
		}
	}
	if err := s.end(); err != nil {
		return nil, jerr(err)
	}
	if !haveWM {
		hint := ""
		for _, k := range others {
			if strings.EqualFold(k, "weight_map") {
				hint = fmt.Sprintf(" (it has %s: keys are case-sensitive, as in Python's json)", Quote(k))
				break
			}
		}
		return nil, ferr(-1, "", "index has no weight_map%s", hint)
	}
	if v, ok := idx.Metadata["total_size"]; ok {
		if n, ok := jsonval.Int(v); ok {
			idx.TotalSize = n
		}
	}
	return idx, nil
}

// parseWeightMap reads the weight_map object into idx.
func parseWeightMap(s *jscan, idx *Index, ferr func(int64, string, string, ...any) error, jerr func(error) error) error {
	if s.peek() != '{' {
		return ferr(int64(s.pos), "", "weight_map must be an object of tensor name to shard file, found %s", s.found())
	}
	if err := s.open('{'); err != nil {
		return jerr(err)
	}
	pos := map[string]int{}
	for first := true; ; first = false {
		ok, err := s.more('}', first)
		if err != nil {
			return jerr(err)
		}
		if !ok {
			return nil
		}
		k, _, err := s.key()
		if err != nil {
			return jerr(err)
		}
		vat := s.pos
		if s.peek() != '"' {
			found := s.found()
			if _, err := s.value(); err != nil {
				return jerr(err)
			}
			return ferr(int64(vat), k, "weight_map value must be a shard file name, found %s", found)
		}
		v, err := s.str()
		if err != nil {
			return jerr(err)
		}
		if i, dup := pos[k]; dup {
			// A Python dict keeps the key's first position and its last value.
			idx.Duplicates = append(idx.Duplicates, k)
			idx.WeightMap[i].File = v
			continue
		}
		pos[k] = len(idx.WeightMap)
		idx.WeightMap = append(idx.WeightMap, IndexEntry{Tensor: k, File: v})
	}
}

func firstInvalidUTF8(b []byte) int {
	i := 0
	for i < len(b) {
		r, sz := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && sz <= 1 {
			return i
		}
		i += sz
	}
	return i
}

func jsonKindName(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return "number"
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

package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Write writes k as indented JSON.
func Write(w io.Writer, k *Contract) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(k)
}

// legacyConfigField is one config value of a version-1 contract.
type legacyConfigField struct {
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Read reads a contract written by Write, of this version
// or of version 1 (whose config is a list of {path, value}: it is read
// into Config, and its paths into ConfigRecorded). w are the caller's
// words for the options the refusal of another file names.
func Read(r io.Reader, name string, w ckpt.Words) (*Contract, error) {
	b, err := readBytes(r, name, w)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Contract
		Config json.RawMessage `json:"config"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", name, err)
	}
	k := doc.Contract
	decode := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(doc.Config))
		d.UseNumber()
		return d.Decode(v)
	}
	switch k.Version {
	case Version:
		if len(doc.Config) > 0 {
			if err := decode(&k.Config); err != nil {
				return nil, fmt.Errorf("reading contract %s: config: %w", name, err)
			}
		}
	case 1:
		var fields []legacyConfigField
		if len(doc.Config) > 0 {
			if err := decode(&fields); err != nil {
				return nil, fmt.Errorf("reading contract %s: config: %w", name, err)
			}
		}
		k.ConfigRecorded = []string{}
		for _, f := range fields {
			setConfigPath(&k.Config, f.Path, f.Value)
			k.ConfigRecorded = append(k.ConfigRecorded, f.Path)
		}
	default:
		return nil, fmt.Errorf("reading contract %s: contract_version is %d, this tool reads 1 to %d", name, k.Version, Version)
	}
	if k.Config == nil {
		k.Config = map[string]any{}
	}
	if k.Tensors == nil {
		return nil, fmt.Errorf("reading contract %s: no tensors list", name)
	}
	return &k, nil
}

// setConfigPath sets a dotted path of a version-1 contract (its keys hold
// no dots) in a nested object.
func setConfigPath(root *map[string]any, path string, v any) {
	if *root == nil {
		*root = map[string]any{}
	}
	m := *root
	segs := strings.Split(path, ".")
	for _, s := range segs[:len(segs)-1] {
		next, ok := m[s].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[s] = next
		}
		m = next
	}
	m[segs[len(segs)-1]] = v
}

// notContractError says a file given as a contract is something else.
type notContractError struct {
	File   string
	Reason string // what it is instead
}

// Error is the message of the notContractError.
func (e *notContractError) Error() string {
	return fmt.Sprintf("%s is not a ckpt contract (%s); write one with `ckpt contract SRC -o FILE`", e.File, e.Reason)
}

// readBytes reads a contract document, naming what the file is
// when it is not one: another JSON file (config.json, an index) or not
// JSON at all (a safetensors file, an LFS pointer...).
func readBytes(r io.Reader, name string, w ckpt.Words) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		what := ckpt.DescribeBytes(b, w)
		if what == "" {
			what = "it is not a JSON object: " + err.Error()
		}
		return nil, &notContractError{File: name, Reason: what}
	}
	if _, ok := probe["contract_version"]; !ok {
		what := ckpt.DescribeBytes(bytes.TrimSpace(b), w)
		if what == "" || what == "JSON text" {
			what = "a JSON object without contract_version"
		}
		return nil, &notContractError{File: name, Reason: what}
	}
	return b, nil
}

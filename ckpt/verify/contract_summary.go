package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Names returns the tensor names the contract records.
func (c *Contract) Names() []string {
	out := make([]string, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = t.Name
	}
	return out
}

// KeySetOutside summarises the groups other than except (e.g. "mtp"): the
// key set is identical when no key was added or removed there; tensors
// whose dtype, shape or content changed are counted apart, so that a
// fine-tune that only changed values does not read as a changed key set.
func (cmp *Comparison) KeySetOutside(except string) string {
	label := except + ".**"
	if except == ckpt.GroupMTP {
		label = "mtp.**"
	}
	var keys, added, removed, changed int
	for _, g := range cmp.Groups {
		if g.Group == except {
			continue
		}
		keys += g.ContractKeys
		added += g.Added
		removed += g.Removed
		changed += g.DTypeChanged + g.ShapeChanged + g.HashChanged
	}
	if added+removed > 0 {
		return fmt.Sprintf("key set outside %s: differs: %d added, %d removed (see the groups above)", label, added, removed)
	}
	s := fmt.Sprintf("key set outside %s: identical, %d keys", label, keys)
	if changed > 0 {
		s += fmt.Sprintf(" (%d of them changed dtype, shape or content)", changed)
	}
	return s
}

// NotContractError says a file given as a contract is something else.
type NotContractError struct {
	File   string
	Reason string // what it is instead
}

func (e *NotContractError) Error() string {
	return fmt.Sprintf("%s is not a ckpt contract (%s); write one with `ckpt contract SRC -o FILE`", e.File, e.Reason)
}

// readContractBytes reads a contract document, naming what the file is
// when it is not one: another JSON file (config.json, an index) or not
// JSON at all (a safetensors file, an LFS pointer...).
func readContractBytes(r io.Reader, name string) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading contract %s: %w", name, err)
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		what := ckpt.DescribeBytes(b)
		if what == "" {
			what = "it is not a JSON object: " + err.Error()
		}
		return nil, &NotContractError{File: name, Reason: what}
	}
	if _, ok := probe["contract_version"]; !ok {
		what := ckpt.DescribeBytes(bytes.TrimSpace(b))
		if what == "" || what == "JSON text" {
			what = "a JSON object without contract_version"
		}
		return nil, &NotContractError{File: name, Reason: what}
	}
	return b, nil
}

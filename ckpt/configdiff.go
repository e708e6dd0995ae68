package ckpt

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
)

// The kinds of a ConfigChange.
const (
	ConfigChanged    = "changed"
	ConfigOnlyInBase = "only_in_base"
	ConfigOnlyInFT   = "only_in_ft"
)

// ConfigChange is one differing config path. Base or FT is absent (and
// Change says so) when the path exists on one side only.
type ConfigChange struct {
	Path   string `json:"path"`
	Base   any    `json:"base,omitempty"`
	FT     any    `json:"ft,omitempty"`
	Change string `json:"change"` // changed, only_in_base, only_in_ft
	// Kind is set for a number equal in value whose kind changed
	// (ConfigIntAsFloat, ConfigFloatAsInt; CompareConfigAsBuilt).
	Kind string `json:"kind,omitempty"`
	// Bookkeeping marks a change of a ConfigBookkeeping key: a note, not
	// a difference (diff).
	Bookkeeping bool `json:"bookkeeping,omitempty"`
	// BuildsSame marks a change of the JSON after which transformers
	// builds the same model (CompareConfigAsBuilt finds nothing there: a
	// default filled in, a key moved into rope_parameters): a note, not a
	// difference (diff; CompareConfigNoted).
	BuildsSame bool `json:"builds_same,omitempty"`
}

// CompareConfig compares two decoded config objects (Config.Raw, nil for
// none) and returns the differing paths in sorted order: objects are
// walked key by key ("text_config.vocab_size"), arrays of the same length
// element by element ("text_config.layer_types[3]"), arrays of different
// lengths as a whole. Numbers compare by value (1.0 equals 1). Changes of
// ConfigBookkeeping keys are marked Bookkeeping. diff lists its result;
// contracts judge CompareConfigAsBuilt, which builds on it.
func CompareConfig(base, ft map[string]any) []ConfigChange {
	out := []ConfigChange{}
	walkConfigObject("", base, ft, &out)
	for i := range out {
		out[i].Bookkeeping = isConfigBookkeeping(out[i].Path)
	}
	return out
}

// ConfigKeys lists the key paths of a decoded config object in sorted
// order: objects are walked key by key, any other value (arrays included)
// is one key ("text_config.layer_types"). An empty object counts as a key.
func ConfigKeys(raw map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any)
	walk = func(prefix string, m map[string]any) {
		for k, v := range m {
			p := joinConfigPath(prefix, k)
			if o, ok := v.(map[string]any); ok && len(o) > 0 {
				walk(p, o)
				continue
			}
			out = append(out, p)
		}
	}
	walk("", raw)
	sort.Strings(out)
	return out
}

func joinConfigPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func walkConfigObject(prefix string, b, f map[string]any, out *[]ConfigChange) {
	keys := make([]string, 0, len(b)+len(f))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range f {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		bv, inB := b[k]
		fv, inF := f[k]
		p := joinConfigPath(prefix, k)
		switch {
		case !inF:
			*out = append(*out, ConfigChange{Path: p, Base: bv, Change: ConfigOnlyInBase})
		case !inB:
			*out = append(*out, ConfigChange{Path: p, FT: fv, Change: ConfigOnlyInFT})
		default:
			walkConfigValue(p, bv, fv, out)
		}
	}
}

func walkConfigValue(p string, bv, fv any, out *[]ConfigChange) {
	bo, bIsObj := bv.(map[string]any)
	fo, fIsObj := fv.(map[string]any)
	if bIsObj && fIsObj {
		walkConfigObject(p, bo, fo, out)
		return
	}
	ba, bIsArr := bv.([]any)
	fa, fIsArr := fv.([]any)
	if bIsArr && fIsArr && len(ba) == len(fa) {
		for i := range ba {
			walkConfigValue(fmt.Sprintf("%s[%d]", p, i), ba[i], fa[i], out)
		}
		return
	}
	if !equalJSON(bv, fv) {
		*out = append(*out, ConfigChange{Path: p, Base: bv, FT: fv, Change: ConfigChanged})
	}
}

// equalJSON compares decoded JSON values; numbers (json.Number) compare by
// value as Python's json reads them, so 1.0 equals 1 and 1e-06 equals
// 0.000001, but integers are exact: 9007199254740993 differs from
// 9007199254740992, which are one float64.
func equalJSON(a, b any) bool {
	an, aNum := a.(json.Number)
	bn, bNum := b.(json.Number)
	if aNum && bNum {
		if an == bn {
			return true
		}
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		if err1 != nil || err2 != nil || af != bf {
			return false
		}
		// Equal as float64: an integer literal is compared exactly (with
		// the other integer, or with the float64 the other side is).
		ai, aInt := new(big.Int).SetString(string(an), 10)
		bi, bInt := new(big.Int).SetString(string(bn), 10)
		switch {
		case aInt && bInt:
			return ai.Cmp(bi) == 0
		case aInt:
			return new(big.Float).SetInt(ai).Cmp(big.NewFloat(bf)) == 0
		case bInt:
			return new(big.Float).SetInt(bi).Cmp(big.NewFloat(af)) == 0
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

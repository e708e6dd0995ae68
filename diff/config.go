package diff

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// DiffConfig compares two config.json documents and returns the differing
// paths in sorted order: objects are walked key by key
// ("text_config.vocab_size"), arrays of the same length element by element
// ("text_config.layer_types[3]"), arrays of different lengths as a whole.
// A nil config counts as an empty object.
func DiffConfig(base, ft *ckpt.Config) []ConfigChange {
	var b, f map[string]any
	if base != nil {
		b = base.Raw
	}
	if ft != nil {
		f = ft.Raw
	}
	out := []ConfigChange{}
	walkObject("", b, f, &out)
	return out
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func walkObject(prefix string, b, f map[string]any, out *[]ConfigChange) {
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
		p := join(prefix, k)
		switch {
		case !inF:
			*out = append(*out, ConfigChange{Path: p, Base: bv, Change: string(OnlyInBase)})
		case !inB:
			*out = append(*out, ConfigChange{Path: p, FT: fv, Change: string(OnlyInFT)})
		default:
			walkValue(p, bv, fv, out)
		}
	}
}

func walkValue(p string, bv, fv any, out *[]ConfigChange) {
	bo, bIsObj := bv.(map[string]any)
	fo, fIsObj := fv.(map[string]any)
	if bIsObj && fIsObj {
		walkObject(p, bo, fo, out)
		return
	}
	ba, bIsArr := bv.([]any)
	fa, fIsArr := fv.([]any)
	if bIsArr && fIsArr && len(ba) == len(fa) {
		for i := range ba {
			walkValue(fmt.Sprintf("%s[%d]", p, i), ba[i], fa[i], out)
		}
		return
	}
	if !equalJSON(bv, fv) {
		*out = append(*out, ConfigChange{Path: p, Base: bv, FT: fv, Change: string(Changed)})
	}
}

// equalJSON compares decoded JSON values; numbers (json.Number) compare by
// value, so 1.0 equals 1.
func equalJSON(a, b any) bool {
	an, aNum := a.(json.Number)
	bn, bNum := b.(json.Number)
	if aNum && bNum {
		if an == bn {
			return true
		}
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		return err1 == nil && err2 == nil && af == bf
	}
	return reflect.DeepEqual(a, b)
}

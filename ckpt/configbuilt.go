package ckpt

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
)

// ConfigBookkeeping are the config keys that name where and with what a
// checkpoint was written, or generation defaults, at any depth: they
// change neither the computation nor the tensor layout. Contracts leave
// them out and diff reports their changes as notes, not differences (the
// one list of both). Changing this list changes contract.Version.
var ConfigBookkeeping = []string{
	"_name_or_path", "_commit_hash", "_attn_implementation", "_attn_implementation_autoset",
	"transformers_version", "torch_dtype", "dtype",
	"use_cache", "output_attentions", "output_hidden_states", "return_dict",
	"max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_return_sequences",
	"temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
}

// isConfigBookkeeping reports whether a config path ("text_config.dtype")
// is or lies under a ConfigBookkeeping key.
func isConfigBookkeeping(path string) bool {
	for _, seg := range strings.Split(path, ".") {
		if i := strings.IndexByte(seg, '['); i >= 0 {
			seg = seg[:i]
		}
		if slices.Contains(ConfigBookkeeping, seg) {
			return true
		}
	}
	return false
}

// numKind is how transformers' strict config classes type a number.
type numKind int

const (
	kindAny    numKind = iota // not a number field, or not declared
	kindInt                   // int: a float (4.0) is refused
	kindFloat                 // float: an int (1) is refused
	kindNumber                // float | int: either, compared by value
)

// configField is one field of a config class: its default (what an absent
// key reads as; nil is null) and the kind of number it takes.
type configField struct {
	def  any
	kind numKind
}

// configClass is a transformers config class as data (configClasses).
type configClass struct {
	fields map[string]configField
	// sub maps a sub-config key to its class's model_type: an absent sub
	// config is built with its defaults.
	sub map[string]string
	// rope: the class has rope_parameters (standardised: ropeParameters);
	// defaultRopeType is its default_rope_type, partialRotary the
	// partial_rotary_factor its __post_init__ sets by default (nil: none).
	rope            bool
	defaultRopeType string
	partialRotary   any
	// layerTypes: layer_types, when absent, is derived from
	// full_attention_interval (default 4), which is then dropped.
	layerTypes bool
	// attributeMap renames keys (attribute_map: num_heads for
	// num_attention_heads).
	attributeMap map[string]string
}

// commonFields are PreTrainedConfig's own fields every class has (the
// bookkeeping ones aside).
var commonFields = map[string]configField{
	"chunk_size_feed_forward": {json.Number("0"), kindInt}, "is_encoder_decoder": {false, kindAny},
	"id2label": {nil, kindAny}, "label2id": {nil, kindAny}, "problem_type": {nil, kindAny},
}

// configClasses are the config classes of the Qwen3.5 family, by
// model_type: each field's default and number kind as the 5.23.0 dataclass
// declares it, read from huggingface/transformers
// src/transformers/models/qwen3_5/configuration_qwen3_5.py,
// configuration_utils.py (PreTrainedConfig.__post_init__) and
// modeling_rope_utils.py (convert_rope_params_to_dict,
// standardize_rope_params) at v5.23.0.
var configClasses = map[string]*configClass{
	"qwen3_5": {
		fields: map[string]configField{
			"image_token_id": {json.Number("248056"), kindInt}, "video_token_id": {json.Number("248057"), kindInt},
			"vision_start_token_id": {json.Number("248053"), kindInt}, "vision_end_token_id": {json.Number("248054"), kindInt},
			"tie_word_embeddings": {false, kindAny},
		},
		sub: map[string]string{"text_config": "qwen3_5_text", "vision_config": "qwen3_5_vision"},
	},
	"qwen3_5_text": {
		fields: map[string]configField{
			"vocab_size": {json.Number("248320"), kindInt}, "hidden_size": {json.Number("4096"), kindInt},
			"intermediate_size": {json.Number("12288"), kindInt}, "num_hidden_layers": {json.Number("32"), kindInt},
			"num_attention_heads": {json.Number("16"), kindInt}, "num_key_value_heads": {json.Number("4"), kindInt},
			"hidden_act": {"silu", kindAny}, "max_position_embeddings": {json.Number("32768"), kindInt},
			"initializer_range": {json.Number("0.02"), kindFloat}, "rms_norm_eps": {json.Number("1e-06"), kindFloat},
			"tie_word_embeddings": {false, kindAny}, "attention_bias": {false, kindAny},
			"attention_dropout": {json.Number("0.0"), kindNumber}, "head_dim": {json.Number("256"), kindInt},
			"linear_conv_kernel_dim": {json.Number("4"), kindInt}, "linear_key_head_dim": {json.Number("128"), kindInt},
			"linear_value_head_dim": {json.Number("128"), kindInt}, "linear_num_key_heads": {json.Number("16"), kindInt},
			"linear_num_value_heads": {json.Number("32"), kindInt},
			"pad_token_id":           {nil, kindInt}, "bos_token_id": {nil, kindInt}, "eos_token_id": {nil, kindInt},
		},
		rope: true, defaultRopeType: "default", partialRotary: json.Number("0.25"), layerTypes: true,
	},
	"qwen3_5_vision": {
		fields: map[string]configField{
			"depth": {json.Number("27"), kindInt}, "hidden_size": {json.Number("1152"), kindInt},
			"hidden_act": {"gelu_pytorch_tanh", kindAny}, "intermediate_size": {json.Number("4304"), kindInt},
			"num_heads": {json.Number("16"), kindInt}, "in_channels": {json.Number("3"), kindInt},
			"patch_size": {json.Number("16"), kindAny}, "spatial_merge_size": {json.Number("2"), kindInt},
			"temporal_patch_size": {json.Number("2"), kindAny}, "out_hidden_size": {json.Number("3584"), kindInt},
			"num_position_embeddings": {json.Number("2304"), kindInt}, "initializer_range": {json.Number("0.02"), kindFloat},
		},
		rope: true, defaultRopeType: "axial",
		attributeMap: map[string]string{"num_attention_heads": "num_heads", "num_hidden_layers": "depth"},
	},
}

// defaultTheta is RotaryEmbeddingConfigMixin.default_theta.
var defaultTheta = json.Number("10000.0")

// ConfigAsBuilt is a config as transformers builds the model from it, for
// the model types of configClasses (others as they are): bookkeeping keys
// left out (ConfigBookkeeping); every field the class declares and the
// config does not give filled in with its default (a null token id, an
// attention_dropout of 0.0, a sub-config absent as a whole); layer_types
// derived from full_attention_interval when absent; and rope_theta,
// partial_rotary_factor and rope_scaling moved into rope_parameters with
// rope_type and default_rope_type applied, as convert_rope_params_to_dict
// and standardize_rope_params do. raw is not changed.
func ConfigAsBuilt(raw map[string]any) map[string]any {
	out, _ := configAsBuilt(raw)
	return out
}

func configAsBuilt(raw map[string]any) (map[string]any, map[string]numKind) {
	kinds := map[string]numKind{}
	out := buildObject("", raw, raw["model_type"], kinds)
	return out, kinds
}

func buildObject(prefix string, m map[string]any, modelType any, kinds map[string]numKind) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if slices.Contains(ConfigBookkeeping, k) {
			continue
		}
		out[k] = cloneConfigValue(v)
	}
	mt, _ := modelType.(string)
	if prefix == "vision_config" && mt == "qwen3_5" {
		mt = "qwen3_5_vision" // Qwen3_5Config.__post_init__: old checkpoints' vision model_type
		out["model_type"] = mt
	}
	cls := configClasses[mt]
	if cls == nil {
		for k, v := range out {
			if o, ok := v.(map[string]any); ok {
				out[k] = buildObject(joinConfigPath(prefix, k), o, o["model_type"], kinds)
			}
		}
		return out
	}
	for from, to := range cls.attributeMap {
		if v, ok := out[from]; ok {
			if _, set := out[to]; !set {
				out[to] = v
			}
			delete(out, from)
		}
	}
	for k, f := range commonFields {
		if _, ok := out[k]; !ok {
			out[k] = f.def
		}
		kinds[joinConfigPath(prefix, k)] = f.kind
	}
	for k, f := range cls.fields {
		if _, ok := out[k]; !ok {
			out[k] = f.def
		}
		kinds[joinConfigPath(prefix, k)] = f.kind
	}
	for k, subType := range cls.sub {
		sub, ok := out[k].(map[string]any)
		if !ok || out[k] == nil {
			sub = map[string]any{}
		}
		if _, ok := sub["model_type"]; !ok {
			sub["model_type"] = subType
		}
		out[k] = buildObject(joinConfigPath(prefix, k), sub, sub["model_type"], kinds)
	}
	if cls.layerTypes {
		if lt, ok := out["layer_types"]; !ok || lt == nil {
			interval := int64(4)
			if n, ok := jsonval.Int(out["full_attention_interval"]); ok && n > 0 {
				interval = n
			}
			delete(out, "full_attention_interval")
			n, _ := jsonval.Int(out["num_hidden_layers"])
			types := make([]any, 0, max(n, 0))
			for i := int64(0); i < n && i < 1<<20; i++ {
				t := "linear_attention"
				if (i+1)%interval == 0 {
					t = "full_attention"
				}
				types = append(types, t)
			}
			out["layer_types"] = types
		}
	}
	if cls.rope {
		ropeParameters(prefix, out, cls, kinds)
	}
	return out
}

// ropeParameters standardises a config object's RoPE keys as
// convert_rope_params_to_dict and standardize_rope_params do.
func ropeParameters(prefix string, out map[string]any, cls *configClass, kinds map[string]numKind) {
	var rp map[string]any
	if rs, ok := out["rope_scaling"].(map[string]any); ok && len(rs) > 0 {
		rp = rs // rope_scaling or rope_parameters
	} else if p, ok := out["rope_parameters"].(map[string]any); ok {
		rp = p
	}
	if rp == nil {
		rp = map[string]any{}
	}
	theta, ok := out["rope_theta"]
	if !ok {
		theta = defaultTheta
	}
	prf, ok := out["partial_rotary_factor"]
	if !ok {
		prf = cls.partialRotary
	}
	delete(out, "rope_scaling")
	delete(out, "rope_theta")
	delete(out, "partial_rotary_factor")
	// nested by layer type (nested_rope_parameter_keys): the defaults go in
	// each nested dict
	var nested []string
	layerTypes, _ := out["layer_types"].([]any)
	for k := range rp {
		if slices.ContainsFunc(layerTypes, func(t any) bool { return t == k }) {
			nested = append(nested, k)
		}
	}
	targets := []map[string]any{rp}
	paths := []string{joinConfigPath(prefix, "rope_parameters")}
	if len(nested) > 0 {
		targets, paths = nil, nil
		for _, k := range nested {
			if d, ok := rp[k].(map[string]any); ok {
				targets = append(targets, d)
				paths = append(paths, joinConfigPath(joinConfigPath(prefix, "rope_parameters"), k))
			}
		}
	}
	for i, d := range targets {
		if _, ok := d["rope_theta"]; !ok {
			d["rope_theta"] = theta
		}
		if _, ok := d["partial_rotary_factor"]; !ok && prf != nil {
			d["partial_rotary_factor"] = prf
		}
		if _, ok := d["rope_type"]; !ok {
			if t, ok := d["type"]; ok {
				d["rope_type"] = t
			} else {
				d["rope_type"] = "default"
			}
		}
		if d["rope_type"] == "default" && cls.defaultRopeType != "default" {
			d["rope_type"] = cls.defaultRopeType
		}
		switch d["rope_type"] {
		case "llama3", "yarn", "longrope":
			if _, ok := d["original_max_position_embeddings"]; !ok {
				d["original_max_position_embeddings"] = out["max_position_embeddings"]
			}
		}
		for k := range d {
			kinds[joinConfigPath(paths[i], k)] = kindNumber // RopeParameters is a TypedDict: not checked strictly
		}
	}
	out["rope_parameters"] = rp
}

func cloneConfigValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneConfigValue(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = cloneConfigValue(e)
		}
		return a
	}
	return v
}

// The number-kind changes a ConfigChange may carry (ConfigChange.Kind).
const (
	ConfigIntAsFloat = "integer_as_float" // an integer field given as a float (4 → 4.0)
	ConfigFloatAsInt = "float_as_integer" // a float field given as an integer (1e-06 → 1)
)

// CompareConfigAsBuilt compares two configs (Config.Raw) as transformers
// builds the model from them (ConfigAsBuilt): a bare re-save by
// save_pretrained, which fills in the class's defaults and moves
// partial_rotary_factor into rope_parameters, compares equal; every change
// of what transformers builds is a ConfigChange at its path in the built
// form, with both values. Numbers compare by value and, where transformers'
// strict classes type them, by kind: an integer field given as a float
// (num_hidden_layers 4 → 4.0, which Python's range() refuses) or a float
// field given as an integer differs (Kind says which); so does an integer
// given as a float at a key no class declares (1.0 for 1 there is equal). Keys of other model types
// compare as CompareConfig does, bookkeeping keys left out.
func CompareConfigAsBuilt(base, ft map[string]any) []ConfigChange {
	b, kinds := configAsBuilt(base)
	f, fk := configAsBuilt(ft)
	for k, v := range fk {
		if _, ok := kinds[k]; !ok {
			kinds[k] = v
		}
	}
	out := append([]ConfigChange{}, CompareConfig(b, f)...)
	// number kinds: CompareConfig compares by value
	walkKinds("", b, f, kinds, &out)
	slices.SortStableFunc(out, func(x, y ConfigChange) int { return strings.Compare(x.Path, y.Path) })
	return out
}

// CompareConfigNoted is the config comparison of diff: every change of
// the JSON (CompareConfig), each marked as a note where it is not a
// difference of what transformers builds (Bookkeeping, or BuildsSame when
// CompareConfigAsBuilt has no change at, under or above its path), and the
// changes of CompareConfigAsBuilt that no change of the JSON shows (an
// integer key given as a float, equal by value; a moved key whose value
// changed, at its built path). So the changes that are no notes are
// exactly those a contract fails: none for a bare re-save by
// save_pretrained. Sorted by path.
func CompareConfigNoted(base, ft map[string]any) []ConfigChange {
	raw := CompareConfig(base, ft)
	built := CompareConfigAsBuilt(base, ft)
	shown := make([]bool, len(built))
	for i := range raw {
		if raw[i].Bookkeeping {
			continue
		}
		raw[i].BuildsSame = true
		for j := range built {
			if configPathsOverlap(raw[i].Path, built[j].Path) {
				raw[i].BuildsSame, shown[j] = false, true
			}
		}
	}
	for j, c := range built {
		if !shown[j] {
			raw = append(raw, c)
		}
	}
	slices.SortStableFunc(raw, func(x, y ConfigChange) int { return strings.Compare(x.Path, y.Path) })
	return raw
}

// configPathsOverlap reports whether one config path is the other or lies
// under it ("a.b" and "a.b.c" or "a.b[2]", not "a.bc").
func configPathsOverlap(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a == b || strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}

// walkKinds adds the changes of number kind between values equal by value.
func walkKinds(path string, b, f any, kinds map[string]numKind, out *[]ConfigChange) {
	switch bv := b.(type) {
	case map[string]any:
		fv, ok := f.(map[string]any)
		if !ok {
			return
		}
		for k, x := range bv {
			if y, ok := fv[k]; ok {
				walkKinds(joinConfigPath(path, k), x, y, kinds, out)
			}
		}
	case []any:
		fv, ok := f.([]any)
		if !ok || len(fv) != len(bv) {
			return
		}
		for i := range bv {
			walkKinds(fmt.Sprintf("%s[%d]", path, i), bv[i], fv[i], kinds, out)
		}
	case json.Number:
		fv, ok := f.(json.Number)
		if !ok || !equalJSON(bv, fv) {
			return // a change of value: CompareConfig has it
		}
		bi, fi := isIntLiteral(bv), isIntLiteral(fv)
		if bi == fi {
			return
		}
		k := kinds[path]
		if k == kindNumber {
			return
		}
		kind := ConfigIntAsFloat
		if !bi {
			kind = ConfigFloatAsInt
		}
		switch {
		case k == kindFloat && kind == ConfigIntAsFloat, k == kindInt && kind == ConfigFloatAsInt:
			return // the base broke the declared kind; the new value keeps it
		case k == kindAny && kind == ConfigFloatAsInt:
			return // a key no class declares: an integer where a float was reads the same
		}
		*out = append(*out, ConfigChange{Path: path, Base: bv, FT: fv, Change: ConfigChanged, Kind: kind})
	}
}

// isIntLiteral reports whether a JSON number is an integer literal, as
// Python's json reads it (no fraction, no exponent).
func isIntLiteral(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

package quant

import (
	"encoding/json"
	"strconv"
)

// Config is the quantization_config of a checkpoint's config.json.
type Config struct {
	Path                string // "quantization_config" or "text_config.quantization_config"
	Method              string
	Fmt                 string
	ActivationScheme    string
	BlockSize           []int64 // weight_block_size, nil when absent
	ModulesToNotConvert []string
	// ScaleFmt is transformers' scale_fmt: "float" (F32 scales, the
	// default when absent) or "ue8m0" (F8_E8M0 scales).
	ScaleFmt string
	Raw      map[string]any
}

// IsBlockFP8 reports whether this is a block-FP8 ("fp8" method with a
// two-element weight_block_size) configuration.
func (q *Config) IsBlockFP8() bool {
	return q != nil && q.Method == "fp8" && len(q.BlockSize) == 2 && q.BlockSize[0] > 0 && q.BlockSize[1] > 0
}

// NewConfig reads the quantization_config object raw found at the JSON
// path path of config.json.
func NewConfig(path string, raw map[string]any) *Config {
	q := &Config{Path: path, Raw: raw}
	q.Method, _ = raw["quant_method"].(string)
	q.Fmt, _ = raw["fmt"].(string)
	q.ActivationScheme, _ = raw["activation_scheme"].(string)
	q.ScaleFmt, _ = raw["scale_fmt"].(string)
	if bs, ok := raw["weight_block_size"].([]any); ok {
		for _, v := range bs {
			if n, ok := asInt(v); ok {
				q.BlockSize = append(q.BlockSize, n)
			}
		}
	}
	q.ModulesToNotConvert = asStrings(raw["modules_to_not_convert"])
	if q.ModulesToNotConvert == nil {
		q.ModulesToNotConvert = asStrings(raw["ignored_layers"])
	}
	return q
}

// asInt is ckpt.AsInt: a JSON number (json.Number, float64, int) or
// numeric string as int64.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil || f != float64(int64(f)) {
				return 0, false
			}
			return int64(f), true
		}
		return n, true
	case float64:
		if x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	case int:
		return int64(x), true
	case int64:
		return x, true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

// asStrings is ckpt.AsStrings: a JSON array of strings, other elements
// skipped.
func asStrings(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

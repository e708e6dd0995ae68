package quant

import "github.com/ckpt-dev/ckpt/ckpt/jsonval"

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
			if n, ok := jsonval.Int(v); ok {
				q.BlockSize = append(q.BlockSize, n)
			}
		}
	}
	q.ModulesToNotConvert = jsonval.Strings(raw["modules_to_not_convert"])
	if q.ModulesToNotConvert == nil {
		q.ModulesToNotConvert = jsonval.Strings(raw["ignored_layers"])
	}
	return q
}

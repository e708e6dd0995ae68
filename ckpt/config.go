package ckpt

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Config is a parsed config.json. Raw keeps every key (numbers as
// json.Number); the accessors understand both the nested form (a VLM wrapper
// with text_config) and the flat form.
type Config struct {
	File string
	Raw  map[string]any
}

// ParseConfig parses config.json bytes.
func ParseConfig(data []byte, file string) (*Config, error) {
	var raw map[string]any
	if err := decodeObject(data, &raw); err != nil {
		return nil, &FormatError{File: file, Offset: jsonErrOffset(err), Reason: "invalid JSON in config: " + err.Error()}
	}
	if raw == nil {
		return nil, &FormatError{File: file, Offset: 0, Reason: "config is not a JSON object"}
	}
	return &Config{File: file, Raw: raw}, nil
}

// Text returns the text model's settings: text_config when present (nested
// form), else the top level (flat form).
func (c *Config) Text() map[string]any {
	if c == nil {
		return nil
	}
	if tc, ok := c.Raw["text_config"].(map[string]any); ok {
		return tc
	}
	return c.Raw
}

// TextPath is the JSON path prefix of the text settings ("text_config." or "").
func (c *Config) TextPath() string {
	if c == nil {
		return ""
	}
	if _, ok := c.Raw["text_config"].(map[string]any); ok {
		return "text_config."
	}
	return ""
}

// TextInt returns an integer setting of the text model.
func (c *Config) TextInt(key string) (int64, bool) {
	return AsInt(c.Text()[key])
}

// ModelType is the top-level model_type.
func (c *Config) ModelType() string {
	if c == nil {
		return ""
	}
	s, _ := c.Raw["model_type"].(string)
	return s
}

// Architectures lists the top-level architectures.
func (c *Config) Architectures() []string {
	if c == nil {
		return nil
	}
	return AsStrings(c.Raw["architectures"])
}

// QuantConfig is the quantization_config of a checkpoint.
type QuantConfig struct {
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
func (q *QuantConfig) IsBlockFP8() bool {
	return q != nil && q.Method == "fp8" && len(q.BlockSize) == 2 && q.BlockSize[0] > 0 && q.BlockSize[1] > 0
}

// Quantization returns the quantization_config (top level, else inside
// text_config), or nil.
func (c *Config) Quantization() *QuantConfig {
	if c == nil {
		return nil
	}
	path := "quantization_config"
	qc, ok := c.Raw[path].(map[string]any)
	if !ok {
		if tc, ok2 := c.Raw["text_config"].(map[string]any); ok2 {
			qc, ok = tc[path].(map[string]any)
			path = "text_config." + path
		}
	}
	if !ok {
		return nil
	}
	q := &QuantConfig{Path: path, Raw: qc}
	q.Method, _ = qc["quant_method"].(string)
	q.Fmt, _ = qc["fmt"].(string)
	q.ActivationScheme, _ = qc["activation_scheme"].(string)
	q.ScaleFmt, _ = qc["scale_fmt"].(string)
	if bs, ok := qc["weight_block_size"].([]any); ok {
		for _, v := range bs {
			if n, ok := AsInt(v); ok {
				q.BlockSize = append(q.BlockSize, n)
			}
		}
	}
	q.ModulesToNotConvert = AsStrings(qc["modules_to_not_convert"])
	if q.ModulesToNotConvert == nil {
		q.ModulesToNotConvert = AsStrings(qc["ignored_layers"])
	}
	return q
}

// AsInt converts a JSON number (json.Number, float64, int) or numeric
// string to int64.
func AsInt(v any) (int64, bool) {
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

// AsStrings converts a JSON array of strings; other elements are skipped.
func AsStrings(v any) []string {
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

// Get returns the value at a dotted path ("text_config.vocab_size").
func (c *Config) Get(path string) (any, bool) {
	if c == nil {
		return nil, false
	}
	var cur any = c.Raw
	start := 0
	for i := 0; i <= len(path); i++ {
		if i == len(path) || path[i] == '.' {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			cur, ok = m[path[start:i]]
			if !ok {
				return nil, false
			}
			start = i + 1
		}
	}
	return cur, true
}

func (c *Config) String() string { return fmt.Sprintf("config %s", c.File) }

// Declared is the dtype a config declares for its float tensors: the
// value of its dtype key, read at Key ("dtype", "text_config.dtype", ...),
// and the safetensors dtype it names (DType "" for a value that names no
// float dtype).
type Declared struct {
	DType DType
	Key   string
	Value string
}

// String is `config.json dtype = "float32"`.
func (d Declared) String() string { return fmt.Sprintf("config.json %s = %s", d.Key, Quote(d.Value)) }

// declaredKeys are where a config declares its dtype, in the order read:
// transformers 5 writes dtype at the top level and applies it to every
// sub-config (modeling_utils.py _get_dtype: config.dtype, then
// sub_config.dtype = main_dtype); earlier releases wrote torch_dtype, which
// PreTrainedConfig still reads as dtype; Qwen's own releases declare it in
// text_config.
var declaredKeys = []string{"dtype", "torch_dtype", "text_config.dtype", "text_config.torch_dtype"}

// DeclaredDType returns the dtype the config declares (false when it
// declares none: no key, or a null).
func (c *Config) DeclaredDType() (Declared, bool) {
	for _, k := range declaredKeys {
		v, ok := c.Get(k)
		if !ok || v == nil {
			continue
		}
		s, isString := v.(string)
		if !isString {
			s = fmt.Sprint(v)
		}
		return Declared{DType: torchFloat(s), Key: k, Value: s}, true
	}
	return Declared{}, false
}

// torchFloat maps a torch float dtype name ("bfloat16", "torch.float16",
// "float") to its safetensors dtype ("" for another name).
func torchFloat(s string) DType {
	switch strings.TrimPrefix(s, "torch.") {
	case "bfloat16":
		return BF16
	case "float16", "half":
		return F16
	case "float32", "float":
		return F32
	case "float64", "double":
		return F64
	}
	return ""
}

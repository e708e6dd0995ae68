package ckpt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ckpt-dev/ckpt/ckpt/jsonval"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// Config is a parsed config.json. Raw keeps every key (numbers as
// json.Number); the accessors understand both the nested form (a VLM wrapper
// with text_config) and the flat form.
type Config struct {
	File string
	Raw  map[string]any
}

// MaxConfigSize is the largest config.json (or hf_quant_config.json)
// ckpt reads: a larger one is refused before it is read. A config holds
// settings: the 27B's is 5 KB.
const MaxConfigSize = 16 << 20

// ConfigMemoryFactor and ConfigMemorySlack bound what parsing a config
// allocates: at most ConfigMemoryFactor times its size plus
// ConfigMemorySlack (besides its bytes, read once). A config whose parsed
// form would need more (dense arrays or objects of tiny values, which Go's
// maps and interfaces make 10 to 50 times larger than their text) is
// refused before anything is built.
const (
	ConfigMemoryFactor = 4
	ConfigMemorySlack  = 1 << 20
)

// configMaxDepth bounds the nesting of a config, as for an index.
const configMaxDepth = indexMaxDepth

// ParseConfig parses config.json bytes, as Python's json reads them where
// JSON is unambiguous and by the rules of an index where it is not (the
// one JSON reader of headers and indexes, docs/formats.md): a repeated
// key, an escape of a lone surrogate, NaN or Infinity, a number beyond
// float64, invalid UTF-8 and nesting deeper than 512 levels are errors.
// Numbers are json.Numbers. Memory is bounded: see MaxConfigSize and
// ConfigMemoryFactor.
func ParseConfig(data []byte, file string) (*Config, error) {
	ferr := func(off int64, format string, args ...any) error {
		return &FormatError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	if len(data) > MaxConfigSize {
		return nil, ferr(-1, "config is %d bytes, more than the %d (%s) ckpt reads for a config", len(data), MaxConfigSize, FormatBytes(MaxConfigSize))
	}
	if !utf8.Valid(data) {
		return nil, ferr(int64(firstInvalidUTF8(data)), "invalid UTF-8 in config")
	}
	budget := int64(ConfigMemoryFactor)*int64(len(data)) + ConfigMemorySlack
	counts, cost, err := planConfig(data, budget)
	if err != nil {
		var se *jsonSyntaxError
		var dense *denseConfigError
		switch {
		case errors.As(err, &se):
			return nil, ferr(se.Offset, "invalid JSON in config: %s", se.Msg)
		case errors.As(err, &dense):
			return nil, ferr(-1, "config too dense to read: parsing its first %d of %d bytes (%d values) would take more than %s of memory, %d times its size "+
				"plus %s (a config holds settings, not data)",
				dense.at, len(data), dense.values, FormatBytes(budget), ConfigMemoryFactor, FormatBytes(ConfigMemorySlack))
		}
		return nil, ferr(-1, "invalid JSON in config: %v", err)
	}
	_ = cost
	d := &configDecoder{s: jscan{buf: data, maxDepth: configMaxDepth}, counts: counts}
	raw, err := d.object()
	if err != nil {
		var se *jsonSyntaxError
		if errors.As(err, &se) {
			return nil, ferr(se.Offset, "invalid JSON in config: %s", se.Msg)
		}
		return nil, ferr(-1, "invalid JSON in config: %v", err)
	}
	return &Config{File: file, Raw: raw}, nil
}

// denseConfigError ends the first pass over a config whose parsed form
// would pass the memory budget.
type denseConfigError struct {
	at     int // bytes read when the budget was passed
	values int
}

func (e *denseConfigError) Error() string { return "config too dense" }

// configPlan is the first pass over a config: it checks the JSON (by the
// rules of the second pass, but for repeated keys, which need the keys),
// records how many members or elements each container has, in the order
// they open (so that the second pass allocates each map and slice once, at
// its size), and adds up what the second pass will allocate, stopping as
// soon as that passes the budget. It allocates only counts (and the
// literal of a number whose float64 range must be checked).
type configPlan struct {
	s      jscan
	counts []int32
	cost   int64
	values int
	budget int64
}

func planConfig(data []byte, budget int64) ([]int32, int64, error) {
	p := &configPlan{s: jscan{buf: data, maxDepth: configMaxDepth, dry: true}, budget: budget}
	if c := p.s.peek(); c != '{' {
		if c == 0 {
			return nil, 0, p.s.errAt(p.s.pos, "empty document, expected a JSON object")
		}
		return nil, 0, p.s.errAt(p.s.pos, "expected a JSON object, found %s", p.s.found())
	}
	if err := p.value(true); err != nil {
		return nil, 0, err
	}
	if err := p.s.end(); err != nil {
		return nil, 0, err
	}
	return p.counts, p.cost, nil
}

// add counts bytes the second pass allocates, failing past the budget.
func (p *configPlan) add(bytes int64) error {
	p.cost += bytes
	if p.cost > p.budget {
		return &denseConfigError{at: p.s.pos, values: p.values}
	}
	return nil
}

// value checks one value; top is the document's object (not boxed in an
// interface).
func (p *configPlan) value(top bool) error {
	p.values++
	start := p.s.pos
	switch c := p.s.peek(); {
	case c == 0:
		return p.s.eofErr()
	case c == '{', c == '[':
		if err := p.s.open(c); err != nil {
			return err
		}
		at := len(p.counts)
		// counts grows by appending: its copies add at most three times
		// its final size.
		p.counts = append(p.counts, 0)
		if err := p.add(16); err != nil {
			return err
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		n := 0
		for first := true; ; first = false {
			ok, err := p.s.more(end, first)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			if c == '{' {
				ks := p.s.pos
				if _, _, err := p.s.key(); err != nil {
					return err
				}
				if err := p.add(strCost(p.s.buf[ks:p.s.pos])); err != nil {
					return err
				}
			}
			if err := p.value(false); err != nil {
				return err
			}
			n++
		}
		p.counts[at] = int32(min(n, 1<<31-1))
		if c == '{' {
			return p.add(mapCost(n))
		}
		return p.add(sliceCost(n))
	case c == '"':
		if _, err := p.s.str(); err != nil {
			return err
		}
		if p.s.pos-start == 2 {
			return nil // "" needs no allocation
		}
		return p.add(16 + strCost(p.s.buf[start:p.s.pos]))
	case c == '-' || (c >= '0' && c <= '9'):
		_, isInt, err := p.s.number()
		if err != nil {
			return err
		}
		n := p.s.pos - start
		extra := int64(0)
		if !isInt || n > 20 {
			extra = allocSize(n) // the first pass's range check
		}
		return p.add(16 + allocSize(n) + extra)
	default:
		_, err := p.s.literal()
		return err
	}
}

// strCost bounds what reading the string token tok (quotes and escapes
// included) allocates: its bytes, and for a string with escapes the
// buffer it is unescaped in, which grows by doubling.
func strCost(tok []byte) int64 {
	n := len(tok)
	for _, c := range tok {
		if c == '\\' {
			return allocSize(n) + 4*int64(n) + 64
		}
	}
	return allocSize(n)
}

// allocSize bounds the size class Go's allocator rounds a request of n
// bytes up to (classes leave at most 20 % above 1 KiB; large objects are
// whole 8 KiB pages).
func allocSize(n int) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 16:
		return 16
	case n <= 128:
		return int64(n+15) &^ 15
	case n <= 1024:
		return int64(n+127) &^ 127
	case n <= 32<<10:
		return int64(n + n/4 + 16)
	}
	return int64(n+8191) &^ 8191
}

// sliceCost bounds a []any of n elements boxed in an interface: its
// header and its backing array.
func sliceCost(n int) int64 {
	if n == 0 {
		return 32
	}
	return 32 + allocSize(16*n)
}

// mapCost bounds a map[string]any made with room for n entries: the map,
// and its tables of groups of 8 slots (8 control bytes, 8 keys and 8
// values: 264 bytes), kept at most 7/8 full, 1024 slots per table.
func mapCost(n int) int64 {
	const header, table, group, maxTable = 48, 48, 8 + 8*32, 1024
	if n == 0 {
		return header
	}
	slots := 8
	for slots*7 < n*8 {
		slots *= 2
	}
	if slots <= 8 {
		return header + allocSize(group)
	}
	if slots <= maxTable {
		return header + table + allocSize(slots/8*group)
	}
	tables := slots / maxTable
	return header + allocSize(8*tables) + int64(tables)*(table+allocSize(maxTable/8*group))
}

// configDecoder is the second pass: it builds the config, each map and
// slice at the size the first pass counted.
type configDecoder struct {
	s      jscan
	counts []int32
	next   int
}

func (d *configDecoder) count() int {
	n := int(d.counts[d.next])
	d.next++
	return n
}

func (d *configDecoder) object() (map[string]any, error) {
	if err := d.s.open('{'); err != nil {
		return nil, err
	}
	m := make(map[string]any, d.count())
	for first := true; ; first = false {
		ok, err := d.s.more('}', first)
		if err != nil {
			return nil, err
		}
		if !ok {
			return m, nil
		}
		k, at, err := d.s.key()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, d.s.errAt(at, "duplicate key %s in an object", Quote(k))
		}
		if m[k], err = d.value(); err != nil {
			return nil, err
		}
	}
}

func (d *configDecoder) value() (any, error) {
	switch c := d.s.peek(); {
	case c == '{':
		return d.object()
	case c == '[':
		if err := d.s.open('['); err != nil {
			return nil, err
		}
		a := make([]any, 0, d.count())
		for first := true; ; first = false {
			ok, err := d.s.more(']', first)
			if err != nil {
				return nil, err
			}
			if !ok {
				return a, nil
			}
			v, err := d.value()
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
	case c == '"':
		return d.s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		lit, _, err := d.s.number()
		return json.Number(lit), err
	}
	return d.s.literal()
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

// TieWordEmbeddings reports whether the checkpoint ties lm_head to the
// input embeddings, as transformers reads it: the model's own config
// decides (PreTrainedModel.get_expanded_tied_weights_keys reads
// self.config.tie_word_embeddings, huggingface/transformers
// src/transformers/modeling_utils.py in the 5.23.0 release), which for a
// composite config such as Qwen3_5Config is the top-level key, whatever
// text_config says (Qwen3_5Config(tie_word_embeddings=True) saves
// text_config.tie_word_embeddings false beside it). Where the top level
// does not say, text_config's key is taken. ok is false when neither is a
// bool.
func (c *Config) TieWordEmbeddings() (tie, ok bool) {
	if c == nil {
		return false, false
	}
	if b, ok := c.Raw["tie_word_embeddings"].(bool); ok {
		return b, true
	}
	b, ok := c.Text()["tie_word_embeddings"].(bool)
	return b, ok
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
	return jsonval.Strings(c.Raw["architectures"])
}

// Quantization returns the quantization_config (top level, else inside
// text_config), or nil.
func (c *Config) Quantization() *quant.Config {
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
	return quant.NewConfig(path, qc)
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

// String names the config by its file.
func (c *Config) String() string { return fmt.Sprintf("config %s", c.File) }

// Declared is the dtype a config declares for its float tensors: the
// value of its dtype key, read at Key ("dtype", "text_config.dtype", ...),
// and the safetensors dtype it names (DType "" for a value that names no
// float dtype).
type Declared struct {
	DType numfmt.DType
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
func torchFloat(s string) numfmt.DType {
	switch strings.TrimPrefix(s, "torch.") {
	case "bfloat16":
		return numfmt.BF16
	case "float16", "half":
		return numfmt.F16
	case "float32", "float":
		return numfmt.F32
	case "float64", "double":
		return numfmt.F64
	}
	return ""
}

// SubsetKey is the config.json key under which ckpt extract records that
// a checkpoint holds a selection of its source's tensors: {"match":
// [globs], "exclude": [globs]}, as --match/--exclude were given. verify
// then expects only the tensors the config implies that the selection
// takes (docs/formats.md). Loaders ignore the key.
const SubsetKey = "ckpt_subset"

// Subset is the selection a SubsetKey records.
type Subset struct {
	Match   []string `json:"match"`
	Exclude []string `json:"exclude"`
}

// Subset is the selection the config records under SubsetKey, nil when it
// records none (or c is nil); an entry that is not a list of strings is an
// error.
func (c *Config) Subset() (*Subset, error) {
	if c == nil {
		return nil, nil
	}
	v, ok := c.Raw[SubsetKey]
	if !ok {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("config %s: %s is not an object", c.File, SubsetKey)
	}
	s := &Subset{}
	for key, dst := range map[string]*[]string{"match": &s.Match, "exclude": &s.Exclude} {
		l, _ := m[key].([]any)
		if m[key] != nil && l == nil {
			return nil, fmt.Errorf("config %s: %s.%s is not a list of globs", c.File, SubsetKey, key)
		}
		for _, g := range l {
			str, ok := g.(string)
			if !ok {
				return nil, fmt.Errorf("config %s: %s.%s is not a list of globs", c.File, SubsetKey, key)
			}
			*dst = append(*dst, str)
		}
	}
	return s, nil
}

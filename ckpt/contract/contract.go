package contract

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Version is the version of the contract JSON this package
// writes. Version 2 records the whole config (Contract.Config); version 1
// recorded a fixed list of architecture fields, and is still read
// (Contract.ConfigRecorded).
const Version = 2

// Contract is the structural contract of a checkpoint: what a later
// checkpoint (a fine-tune, a re-upload) must keep to be a drop-in
// replacement. Write it with Write, read it with Read and
// hold a checkpoint against it with Compare.
type Contract struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema `json:"schema_version"`
	Version int         `json:"contract_version"`
	Source  string      `json:"source"`
	// Config is config.json without its bookkeeping keys (ConfigOf), as
	// one JSON object ({} when the checkpoint has no config.json).
	Config map[string]any `json:"config"`
	// ConfigRecorded lists the config paths a version-1 contract recorded:
	// only those were kept, so only those can be compared. Nil for a
	// contract of this version, which records the whole config.
	ConfigRecorded []string `json:"-"`
	FP8            *Scheme  `json:"fp8"`
	Tensors        []Entry  `json:"tensors"`
	// GeneratedBy names the tool, version and time that wrote the
	// contract (set by the caller; never compared).
	GeneratedBy *ckpt.Generator `json:"generated_by,omitempty"`
}

// Scheme is the FP8 scheme: the quantization_config parameters, the scale
// dtypes found and which tensors are FP8.
type Scheme struct {
	Method              string   `json:"method"`
	Fmt                 string   `json:"fmt"`
	ActivationScheme    string   `json:"activation_scheme"`
	BlockSize           []int64  `json:"weight_block_size"`
	ScaleDTypes         []string `json:"scale_dtypes"`
	ModulesToNotConvert []string `json:"modules_to_not_convert"`
	Tensors             []string `json:"fp8_tensors"`
}

// Entry is one tensor of the contract.
type Entry struct {
	Name  string  `json:"name"`
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	XXH3  string  `json:"xxh3,omitempty"`
}

// quantSelectionKeys are the quantization_config keys compared per
// selected tensor (contract.fp8_not_convert, which follows --match and
// --exclude) rather than as config values.
var quantSelectionKeys = []string{"modules_to_not_convert", "ignored_layers"}

// ConfigOf is the config a contract records: a copy of cfg.Raw without the
// ckpt.ConfigBookkeeping keys (at any depth) and without the
// modules_to_not_convert / ignored_layers lists of quantization_config
// (the contract's FP8 scheme holds them). Nil cfg gives {}.
func ConfigOf(cfg *ckpt.Config) map[string]any {
	if cfg == nil {
		return map[string]any{}
	}
	return filterConfig(cfg.Raw, false)
}

func filterConfig(m map[string]any, inQuant bool) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if slices.Contains(ckpt.ConfigBookkeeping, k) || inQuant && slices.Contains(quantSelectionKeys, k) {
			continue
		}
		if o, ok := v.(map[string]any); ok {
			v = filterConfig(o, k == "quantization_config")
		}
		out[k] = v
	}
	return out
}

// OfOptions tune Of.
type OfOptions struct {
	// ReadData also records the xxh3 of every tensor (each read once, streamed: HashOptions).
	ReadData bool
	HashOptions
}

// Of is the contract engine: the contract of c, with the xxh3 of every
// tensor when opt.ReadData is set (streamed, parallel, bounded memory).
func Of(ctx context.Context, c *ckpt.Checkpoint, opt OfOptions) (*Contract, error) {
	var hashes map[string]string
	if opt.ReadData {
		var err error
		if hashes, err = hashTensors(ctx, c, opt.HashOptions); err != nil {
			return nil, err
		}
	}
	return New(c, hashes), nil
}

// New builds the contract of an opened checkpoint. hashes (tensor
// name → xxh3, from Of with ReadData or verify's Result.Hashes) may be nil.
func New(c *ckpt.Checkpoint, hashes map[string]string) *Contract {
	k := &Contract{Version: Version, Source: c.Source, Config: ConfigOf(c.Config), Tensors: []Entry{}}
	for _, t := range c.Tensors {
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		k.Tensors = append(k.Tensors, Entry{Name: t.Name, DType: string(t.DType), Shape: shape, XXH3: hashes[t.Name]})
	}
	weights, scales := fp8Tensors(c)
	if q := c.Config.Quantization(); q != nil || len(weights) > 0 {
		s := &Scheme{ScaleDTypes: []string{}, ModulesToNotConvert: []string{}, Tensors: []string{}}
		if q != nil {
			s.Method, s.Fmt, s.ActivationScheme, s.BlockSize = q.Method, q.Fmt, q.ActivationScheme, q.BlockSize
			s.ModulesToNotConvert = append(s.ModulesToNotConvert, q.ModulesToNotConvert...)
			sort.Strings(s.ModulesToNotConvert)
		}
		seen := map[string]bool{}
		for _, sc := range scales {
			if !seen[string(sc.DType)] {
				seen[string(sc.DType)] = true
				s.ScaleDTypes = append(s.ScaleDTypes, string(sc.DType))
			}
		}
		sort.Strings(s.ScaleDTypes)
		for _, w := range weights {
			s.Tensors = append(s.Tensors, w.Name)
		}
		k.FP8 = s
	}
	return k
}

// fp8Tensors are the F8_E4M3 weights of c (bookkeeping tensors aside: an
// F8_E4M3 weight_scale is NVFP4's scale, not an FP8 weight) and its
// *_scale_inv tensors, as verify's FP8 checks count them.
func fp8Tensors(c *ckpt.Checkpoint) (weights, scales []*ckpt.Tensor) {
	for _, t := range c.Tensors {
		if t.DType == numfmt.F8E4M3 && !ckpt.IsBookkeeping(t.Name) {
			weights = append(weights, t)
		}
		if strings.HasSuffix(t.Name, ckpt.ScaleSuffix) {
			scales = append(scales, t)
		}
	}
	return weights, scales
}

// Names returns the tensor names the contract records.
func (c *Contract) Names() []string {
	out := make([]string, len(c.Tensors))
	for i, t := range c.Tensors {
		out[i] = t.Name
	}
	return out
}

// String describes an FP8 scheme in one line ("none" for a nil scheme).
func (s *Scheme) String() string {
	if s == nil {
		return "none"
	}
	sd := strings.Join(s.ScaleDTypes, "/")
	if sd == "" {
		sd = "none"
	}
	return fmt.Sprintf("method %s, fmt %s, activation %s, block %s, scales %s",
		orUnset(s.Method), orUnset(s.Fmt), orUnset(s.ActivationScheme), ckpt.FormatShape(s.BlockSize), sd)
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

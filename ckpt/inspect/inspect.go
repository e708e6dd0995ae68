package inspect

import (
	"fmt"
	"path"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// File is one file of the inspect JSON.
type File struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	HeaderBytes int64  `json:"header_bytes"`
	Tensors     int    `json:"tensors"`
	// Metadata is the file's safetensors __metadata__ (absent when the
	// header has none).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Tensor is one tensor of the inspect JSON.
type Tensor struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	File       string  `json:"file"`
	Offset     int64   `json:"offset"`
	NBytes     int64   `json:"bytes"` // JSON "bytes" (schema 1; "nbytes" before)
	Parameters int64   `json:"parameters"`
}

// Result is the inspect JSON document (docs/cli.md).
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema  `json:"schema_version"`
	Source  string       `json:"source"`
	Sharded bool         `json:"sharded"`
	Files   []File       `json:"files"`
	Tensors []Tensor     `json:"tensors"`
	Summary ckpt.Summary `json:"summary"`
	// Quantization is the checkpoint's quantisation scheme (QuantRecipe)
	// when it is one of MXFP4, NVFP4 or compressed-tensors FP8; absent
	// otherwise (block FP8 is left out so that its documents stay as they
	// were).
	Quantization *Quant   `json:"quantization,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
}

// Quant is the quantisation scheme in the inspect JSON.
type Quant struct {
	Scheme quant.Scheme `json:"scheme"`
	Title  string       `json:"title"`
	// File is the config file that declares it, Path the key in it.
	File        string `json:"file"`
	Path        string `json:"path"`
	QuantMethod string `json:"quant_method"`
	QuantAlgo   string `json:"quant_algo,omitempty"`
	// GroupSize is the elements per scale (MXFP4 32, NVFP4 16); BlockSize
	// the [rows, cols] block of a block scale.
	GroupSize int64   `json:"group_size,omitempty"`
	BlockSize []int64 `json:"block_size,omitempty"`
	// Weights counts the quantised weights of the selection.
	Weights   int      `json:"weights"`
	IgnoreKey string   `json:"ignore_key"`
	Ignore    []string `json:"ignore"`
}

// quantOf describes the recipe r (nil for none or block FP8) over the
// selected tensors.
func quantOf(c *ckpt.Checkpoint, r *quant.Recipe, sel []*ckpt.Tensor) *Quant {
	if r == nil {
		return nil
	}
	q := &Quant{Scheme: r.Scheme, Title: r.Spec().Title, File: path.Base(r.File), Path: r.Path, QuantMethod: r.Method, QuantAlgo: r.Algo,
		GroupSize: r.GroupSize, IgnoreKey: r.IgnoreKey, Ignore: append([]string{}, r.Ignore...)}
	if r.Block != [2]int64{} {
		q.BlockSize = r.Block[:]
	}
	for _, t := range sel {
		if _, ok := c.QuantWeight(r, t); ok {
			q.Weights++
		}
	}
	return q
}

// Of lists the files and the tensors of an open checkpoint that m
// selects (a nil m selects all), with their summary and the warnings of
// opening (integrity issues, header lints other than the writer's order).
// It reads nothing: everything comes from the headers.
func Of(c *ckpt.Checkpoint, m *ckpt.Matcher) Result {
	res := Result{Source: c.Source, Sharded: c.Sharded, Files: []File{}, Tensors: []Tensor{}}
	recipe, _ := c.QuantRecipe() // an unknown recipe counts as a quantised checkpoint without packing
	quantized := c.Config.Quantization() != nil || c.HFQuantConfig != nil
	for _, f := range c.Files {
		res.Files = append(res.Files, File{Path: f.Name, Size: f.Size, HeaderBytes: int64(f.Header.Size), Tensors: len(f.Header.Tensors),
			Metadata: f.Header.Metadata})
	}
	var sel []*ckpt.Tensor
	for _, t := range c.Tensors {
		if !m.Match(t.Name) {
			continue
		}
		sel = append(sel, t)
		params, _ := ckpt.CountParameters(c, recipe, t, quantized)
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		res.Tensors = append(res.Tensors, Tensor{Name: t.Name, DType: string(t.DType), Shape: shape, File: t.File.Name,
			Offset: t.Offset(), NBytes: int64(t.NBytes()), Parameters: params})
	}
	res.Summary = ckpt.SummarizeWith(sel, func(t *ckpt.Tensor) (int64, bool) { return ckpt.CountParameters(c, recipe, t, quantized) })
	res.Quantization = quantOf(c, recipe, sel)
	for _, is := range c.Issues {
		res.Warnings = append(res.Warnings, is.Message)
	}
	for _, f := range c.Files {
		for _, l := range f.Header.Lints {
			if l.ID != ckpt.LintOrder { // the writer's order is style, not a format deviation
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s (%s)", f.Location, l.Message, l.ID))
			}
		}
	}
	return res
}

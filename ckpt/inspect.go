package ckpt

import "fmt"

// InspectFile is one file of the inspect JSON.
type InspectFile struct {
	Path        string `json:"path"`
	Size        int64  `json:"size"`
	HeaderBytes int64  `json:"header_bytes"`
	Tensors     int    `json:"tensors"`
	// Metadata is the file's safetensors __metadata__ (absent when the
	// header has none).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// InspectTensor is one tensor of the inspect JSON.
type InspectTensor struct {
	Name       string  `json:"name"`
	DType      string  `json:"dtype"`
	Shape      []int64 `json:"shape"`
	File       string  `json:"file"`
	Offset     int64   `json:"offset"`
	NBytes     int64   `json:"bytes"` // JSON "bytes" (schema 1; "nbytes" before)
	Parameters int64   `json:"parameters"`
}

// InspectResult is the inspect JSON document (docs/cli.md).
type InspectResult struct {
	// Schema is the document's schema_version (SchemaVersion).
	Schema   Schema          `json:"schema_version"`
	Source   string          `json:"source"`
	Sharded  bool            `json:"sharded"`
	Files    []InspectFile   `json:"files"`
	Tensors  []InspectTensor `json:"tensors"`
	Summary  Summary         `json:"summary"`
	Warnings []string        `json:"warnings,omitempty"`
}

// Inspect lists the files and the tensors of an open checkpoint that m
// selects (a nil m selects all), with their summary and the warnings of
// opening (integrity issues, header lints other than the writer's order).
// It reads nothing: everything comes from the headers.
func Inspect(c *Checkpoint, m *Matcher) InspectResult {
	res := InspectResult{Source: c.Source, Sharded: c.Sharded, Files: []InspectFile{}, Tensors: []InspectTensor{}}
	quantized := c.Config.Quantization() != nil
	for _, f := range c.Files {
		res.Files = append(res.Files, InspectFile{Path: f.Name, Size: f.Size, HeaderBytes: int64(f.Header.Size), Tensors: len(f.Header.Tensors),
			Metadata: f.Header.Metadata})
	}
	var sel []*Tensor
	for _, t := range c.Tensors {
		if !m.Match(t.Name) {
			continue
		}
		sel = append(sel, t)
		var params int64
		if CountsAsParameter(&t.TensorInfo, quantized) {
			params = int64(t.Numel())
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		res.Tensors = append(res.Tensors, InspectTensor{Name: t.Name, DType: string(t.DType), Shape: shape, File: t.File.Name,
			Offset: t.Offset(), NBytes: int64(t.NBytes()), Parameters: params})
	}
	res.Summary = Summarize(sel, quantized)
	for _, is := range c.Issues {
		res.Warnings = append(res.Warnings, is.Message)
	}
	for _, f := range c.Files {
		for _, l := range f.Header.Lints {
			if l.ID != "header.order" { // the writer's order is style, not a format deviation
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s (%s)", f.Location, l.Message, l.ID))
			}
		}
	}
	return res
}

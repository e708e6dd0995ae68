package extract

import "github.com/ckpt-dev/ckpt/ckpt"

// ReportTensor is one written tensor in the extract JSON.
type ReportTensor struct {
	Name        string  `json:"name"`
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	SourceDType string  `json:"source_dtype"`
	Action      string  `json:"action"`
	File        string  `json:"file"`
	NBytes      int64   `json:"bytes"` // JSON "bytes" (schema 1; "nbytes" before)
}

// ReportCounts counts what extract wrote.
type ReportCounts struct {
	Tensors     int   `json:"tensors"`
	Bytes       int64 `json:"bytes"`
	Files       int   `json:"files"`
	Copied      int   `json:"copied"`
	Converted   int   `json:"converted"`
	Dequantized int   `json:"dequantized"`
}

// Result is the extract JSON document (docs/cli.md).
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema   ckpt.Schema    `json:"schema_version"`
	Source   string         `json:"source"`
	Out      string         `json:"out"`
	DType    string         `json:"dtype"`
	Sharded  bool           `json:"sharded"`
	Files    []OutputFile   `json:"files"`
	Index    string         `json:"index,omitempty"`
	Config   string         `json:"config,omitempty"`
	Tensors  []ReportTensor `json:"tensors"`
	Summary  ReportCounts   `json:"summary"`
	Warnings []string       `json:"warnings,omitempty"`
	// NonFinite lists the tensors written with NaN/Inf (AllowNonFinite).
	NonFinite []ckpt.NonFinite `json:"nonfinite"`
	// Shown are the warnings to show (Run): of opening the source (not in
	// the document), then Warnings.
	Shown []string `json:"-"`
}

// result describes what Write produced for the plan, as the extract JSON
// document.
func (p *Plan) result(r *Written) Result {
	out := Result{Source: p.Source, Out: r.Out, DType: p.DType, Sharded: p.Sharded, Index: r.Index, Config: r.Config,
		NonFinite: append([]ckpt.NonFinite{}, p.nonFinite()...),
		Files:     []OutputFile{}, Tensors: []ReportTensor{}, Warnings: p.Warnings}
	out.Files = append(out.Files, r.Files...)
	for _, it := range p.Items {
		shape := it.Shape
		if shape == nil {
			shape = []int64{}
		}
		out.Tensors = append(out.Tensors, ReportTensor{Name: it.Name, DType: string(it.DType), Shape: shape,
			SourceDType: string(it.Source.DType), Action: string(it.Action), File: r.Files[it.Shard].Path, NBytes: it.nBytes()})
	}
	cp, cv, dq := p.Counts()
	out.Summary = ReportCounts{Tensors: len(p.Items), Bytes: p.TotalBytes, Files: len(r.Files), Copied: cp, Converted: cv, Dequantized: dq}
	return out
}

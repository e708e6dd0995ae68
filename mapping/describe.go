package mapping

import (
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Describe lists the entry's transform chain in words, in order, e.g.
// ["dequantize(fp8 block)", "round(bf16)", "fuse(per device [q|k|v|z|a|b])",
// "transpose"]. Placement, dtype and layout are reported separately.
func (e *Entry) Describe() []string {
	var out []string
	for _, s := range e.Sources {
		if s.Scale != nil {
			out = append(out, "dequantize(fp8 block)")
			break
		}
	}
	for _, s := range e.Steps {
		switch s.Op {
		case "round":
			out = append(out, "round("+strings.ToLower(s.DType)+")")
		case "add":
			out = append(out, fmt.Sprintf("add(%g)", *s.Value))
		case "select_cols":
			out = append(out, fmt.Sprintf("select_cols(start=%s, count=%s)", s.Start, s.Count))
		case "fuse":
			var labels []string
			for _, p := range s.Parts {
				l, _, _ := strings.Cut(p.Label, " ")
				labels = append(labels, l)
			}
			kind := "per device"
			if e.Placement.Kind == "replicate" {
				kind = "whole"
			}
			if s.Interleave {
				kind += " tile-interleaved"
			}
			out = append(out, fmt.Sprintf("fuse(%s [%s])", kind, strings.Join(labels, "|")))
		case "transpose":
			out = append(out, "transpose")
		case "reshape":
			out = append(out, "reshape("+ckpt.FormatShape(e.Shape)+")")
		}
	}
	return out
}

// String is "shard(dim=-1)", "shard2d(dim=2, mesh=[replicate, shard])"
// for a 2-D mesh mapper, or "replicate".
func (p Placement) String() string {
	if p.Kind == "shard" {
		if p.Is2D() {
			return fmt.Sprintf("shard2d(dim=%d, mesh=[%s])", p.Dim, strings.Join(p.MeshAxes, ", "))
		}
		return fmt.Sprintf("shard(dim=%d)", p.Dim)
	}
	return p.Kind
}

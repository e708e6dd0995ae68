package ckpt

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Ranges renders sorted distinct integers as "{0..3,5,7..9}".
func Ranges(ns []int) string {
	if len(ns) == 0 {
		return "{}"
	}
	s := append([]int(nil), ns...)
	sort.Ints(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] <= s[j]+1 {
			j++
		}
		if s[j] == s[i] {
			parts = append(parts, strconv.Itoa(s[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d..%d", s[i], s[j]))
		}
		i = j + 1
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// DTypeStat sums tensors of one dtype.
type DTypeStat struct {
	DType      numfmt.DType `json:"dtype"`
	Tensors    int64        `json:"tensors"`
	Parameters int64        `json:"parameters"`
	Bytes      int64        `json:"bytes"`
}

// GroupStat sums tensors of one group.
type GroupStat struct {
	// Group is the group's name, the one diff and verify use: text_layers,
	// mtp, visual or other (GroupOf). Pattern is inspect's label of it,
	// e.g. "model.language_model.layers.{0..63}", "mtp.*": a checkpoint
	// with two stacks of decoder layers has two text_layers rows.
	Group      string `json:"group"`
	Pattern    string `json:"pattern"`
	Tensors    int64  `json:"tensors"`
	Parameters int64  `json:"parameters"`
	Bytes      int64  `json:"bytes"`
}

// Summary totals a list of tensors.
type Summary struct {
	Tensors           int64            `json:"tensors"`
	Bytes             int64            `json:"bytes"`
	Parameters        int64            `json:"parameters"`
	ParametersByDType map[string]int64 `json:"parameters_by_dtype"`
	ByDType           []DTypeStat      `json:"by_dtype"`
	ByGroup           []GroupStat      `json:"by_group"`
}

// CountsAsParameter applies the Hugging Face Hub's parameter-count rule:
// rank-0 tensors and F8_E8M0 tensors never count; quantisation bookkeeping
// (IsBookkeeping) does not count when the checkpoint is quantised.
func CountsAsParameter(t *TensorInfo, quantized bool) bool {
	if len(t.Shape) == 0 || t.DType == numfmt.F8E8M0 {
		return false
	}
	return !(quantized && IsBookkeeping(t.Name))
}

// SummarizeWith totals tensors by dtype and by group; count returns a
// tensor's parameters and whether it counts at all (see CountParameters).
func SummarizeWith(ts []*Tensor, count func(*Tensor) (int64, bool)) Summary {
	s := Summary{ParametersByDType: map[string]int64{}}
	byD := map[numfmt.DType]*DTypeStat{}
	type gacc struct {
		stat   GroupStat
		layers map[int]bool
		first  int
		group  string
	}
	byG := map[string]*gacc{}
	var gorder []string
	for i, t := range ts {
		nb := int64(t.NBytes())
		params, counts := count(t)
		if !counts {
			params = 0
		} else {
			s.ParametersByDType[string(t.DType)] += params
		}
		s.Tensors++
		s.Bytes += nb
		s.Parameters += params
		d := byD[t.DType]
		if d == nil {
			d = &DTypeStat{DType: t.DType}
			byD[t.DType] = d
		}
		d.Tensors++
		d.Bytes += nb
		d.Parameters += params
		group, stack, layer := GroupOf(t.Name)
		g := groupLabel(group, stack)
		ga := byG[g]
		if ga == nil {
			ga = &gacc{layers: map[int]bool{}, first: i, group: group}
			byG[g] = ga
			gorder = append(gorder, g)
		}
		if layer >= 0 {
			ga.layers[layer] = true
		}
		ga.stat.Tensors++
		ga.stat.Bytes += nb
		ga.stat.Parameters += params
	}
	for _, d := range byD {
		s.ByDType = append(s.ByDType, *d)
	}
	sort.Slice(s.ByDType, func(i, j int) bool { return s.ByDType[i].DType.Order() > s.ByDType[j].DType.Order() })
	rank := func(g string) int {
		switch byG[g].group {
		case GroupMTP:
			return 2
		case GroupVisual:
			return 3
		case GroupOther:
			return 4
		}
		return 1
	}
	sort.SliceStable(gorder, func(i, j int) bool {
		if rank(gorder[i]) != rank(gorder[j]) {
			return rank(gorder[i]) < rank(gorder[j])
		}
		return NaturalLess(gorder[i], gorder[j])
	})
	for _, g := range gorder {
		ga := byG[g]
		ga.stat.Group, ga.stat.Pattern = ga.group, g
		if len(ga.layers) > 0 {
			ns := make([]int, 0, len(ga.layers))
			for n := range ga.layers {
				ns = append(ns, n)
			}
			ga.stat.Pattern = g + "." + Ranges(ns)
		}
		s.ByGroup = append(s.ByGroup, ga.stat)
	}
	return s
}

// groupLabel is the row label of a group in inspect's summary: the layer
// stack of decoder layers (with their layer ranges appended), "mtp.*",
// "model.visual.*" or "other".
func groupLabel(group, stack string) string {
	switch group {
	case GroupText:
		return stack
	case GroupMTP:
		return "mtp.*"
	case GroupVisual:
		return "model.visual.*"
	}
	return GroupOther
}

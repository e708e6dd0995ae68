package ckpt

import (
	"strconv"
	"strings"
)

// The four groups of a checkpoint's tensors, the one vocabulary of every
// per-group summary (inspect, verify --against, diff).
const (
	GroupText   = "text_layers" // decoder layers of the text model
	GroupMTP    = "mtp"         // the multi-token-prediction head
	GroupVisual = "visual"      // the vision tower
	GroupOther  = "other"       // embeddings, final norm, lm_head...
)

// Groups lists the groups in report order.
func Groups() []string {
	return []string{GroupText, GroupMTP, GroupVisual, GroupOther}
}

// GroupOf classifies a tensor name into its group. For a decoder layer it
// also returns the layer stack and the layer index: for
// "model.language_model.layers.12.mlp.up_proj.weight" it returns
// (GroupText, "model.language_model.layers", 12); otherwise stack is "" and
// layer is -1.
func GroupOf(name string) (group, stack string, layer int) {
	switch {
	case strings.HasPrefix(name, "mtp."):
		return GroupMTP, "", -1
	case strings.HasPrefix(name, "model.visual.") || strings.HasPrefix(name, "visual."):
		return GroupVisual, "", -1
	}
	if i := strings.Index(name, "layers."); i >= 0 && (i == 0 || name[i-1] == '.') {
		rest := name[i+len("layers."):]
		j := 0
		for j < len(rest) && isDigit(rest[j]) {
			j++
		}
		if j > 0 && j < 10 && (j == len(rest) || rest[j] == '.') {
			n, _ := strconv.Atoi(rest[:j])
			return GroupText, name[:i+len("layers")], n
		}
	}
	return GroupOther, "", -1
}

package ckpt

// The four groups of the per-group summaries that diff and verify print.
const (
	SummaryText   = "text_layers" // decoder layers of the text model
	SummaryMTP    = "mtp"         // the multi-token-prediction head
	SummaryVisual = "visual"      // the vision tower
	SummaryOther  = "other"       // embeddings, final norm, lm_head...
)

// SummaryGroups lists the summary groups in report order.
func SummaryGroups() []string {
	return []string{SummaryText, SummaryMTP, SummaryVisual, SummaryOther}
}

// SummaryGroup returns the summary group of a tensor name.
func SummaryGroup(name string) string {
	g, _ := SummaryGroupLayer(name)
	return g
}

// SummaryGroupLayer returns the summary group of a tensor name and, for
// text_layers, the index of its decoder layer (-1 for the other groups).
func SummaryGroupLayer(name string) (group string, layer int) {
	g, layer := GroupOf(name)
	switch {
	case g == GroupMTP:
		return SummaryMTP, -1
	case g == GroupVisual:
		return SummaryVisual, -1
	case layer >= 0:
		return SummaryText, layer
	}
	return SummaryOther, -1
}

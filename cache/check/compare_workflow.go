package check

import "context"

// CompareRequest is what `ckpt cache compare` asks for: the cache
// directories A and B compared file by file.
type CompareRequest struct {
	A, B string
	CompareOptions
}

// CompareDirs is the workflow of `ckpt cache compare`: Compare of req.A
// and req.B.
func CompareDirs(ctx context.Context, req CompareRequest) (*CompareReport, error) {
	return Compare(ctx, req.A, req.B, req.CompareOptions)
}

// CompareSummary is the closing JSON Lines record of a comparison (cache
// compare, map --against-cache): the document's counts and verdicts, and
// the number of differences (the records before it) in place of their
// list.
type CompareSummary struct {
	*CompareReport
	// Differences counts the records (it hides the report's list).
	Differences int  `json:"differences"`
	Same        bool `json:"same"`
	Unreadable  bool `json:"unreadable"`
}

// SummaryRecord is the comparison's closing JSON Lines record.
func (r CompareResult) SummaryRecord() CompareSummary {
	return CompareSummary{r.CompareReport, len(r.Diffs), r.Same, r.Unreadable}
}

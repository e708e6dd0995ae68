package compare

import "context"

// Options is what `ckpt cache compare` asks for: the cache
// directories A and B compared file by file.
type Options struct {
	A, B string
	DirsOptions
}

// Result is the outcome of Run: the report of the two directories (its
// JSON document is Report.Document).
type Result struct {
	*Report
}

// Run is the workflow of `ckpt cache compare`: Dirs of opt.A and opt.B.
func Run(ctx context.Context, opt Options) (*Result, error) {
	rep, err := Dirs(ctx, opt.A, opt.B, opt.DirsOptions)
	if err != nil {
		return nil, err
	}
	return &Result{rep}, nil
}

// SummaryRecord is the closing JSON Lines record of a comparison (cache
// compare, map --against-cache): the document's counts and verdicts, and
// the number of differences (the records before it) in place of their
// list.
type SummaryRecord struct {
	*Report
	// Differences counts the records (it hides the report's list).
	Differences int  `json:"differences"`
	Same        bool `json:"same"`
	Unreadable  bool `json:"unreadable"`
}

// SummaryRecord is the comparison's closing JSON Lines record.
func (r Document) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Report, len(r.Diffs), r.Same, r.Unreadable}
}

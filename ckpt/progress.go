package ckpt

import "sync/atomic"

// Progress counts work done for a long operation. Libraries call it; only
// the command line renders it. A nil *Progress is valid and counts nothing.
type Progress struct {
	total, done atomic.Int64
	items       atomic.Int64
}

// NewProgress returns a counter.
func NewProgress() *Progress { return &Progress{} }

// AddTotal grows the expected amount of work (bytes, elements...).
func (p *Progress) AddTotal(n int64) {
	if p != nil {
		p.total.Add(n)
	}
}

// Add records n units of work done.
func (p *Progress) Add(n int64) {
	if p != nil {
		p.done.Add(n)
	}
}

// ItemDone records one finished item (a tensor, a file).
func (p *Progress) ItemDone() {
	if p != nil {
		p.items.Add(1)
	}
}

// Snapshot returns the work done, the total and the items finished.
func (p *Progress) Snapshot() (done, total, items int64) {
	if p == nil {
		return 0, 0, 0
	}
	return p.done.Load(), p.total.Load(), p.items.Load()
}

package ckpt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"golang.org/x/sync/errgroup"
)

// Span is the byte range [Off, Off+Len) of one tensor's data (offsets are
// relative to the tensor's start, as for Tensor.ReadAt).
type Span struct {
	Tensor   *Tensor
	Off, Len int64
}

// SpanOptions tune ReadSpans. The zero value is usable.
type SpanOptions struct {
	// MaxGap is the largest gap between two spans of one file that are
	// still read with one request (the gap's bytes are read and dropped):
	// default 64 KiB; negative: only touching or overlapping spans merge.
	MaxGap int64
	// MaxRead caps the size of one merged read (default 16 MiB); a single
	// span larger than this is read on its own.
	MaxRead int64
	// Workers bounds the reads in flight (default 8).
	Workers int
}

func (o SpanOptions) withDefaults() SpanOptions {
	if o.MaxGap == 0 {
		o.MaxGap = 64 << 10
	}
	if o.MaxRead <= 0 {
		o.MaxRead = 16 << 20
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
	return o
}

// SpanStats counts what ReadSpans read from one file.
type SpanStats struct {
	Reads int64 // ReadAt calls (for HTTP sources, at least one request each)
	Bytes int64 // bytes read, gaps between merged spans included
}

// SpanResult is what ReadSpans returns: the bytes of each span, in the
// order of the spans asked for, and what was read from each file.
type SpanResult struct {
	// Data[i] holds the bytes of span i. Slices of one merged read share
	// its buffer: treat them as read-only.
	Data [][]byte
	// ByFile counts the reads made per file.
	ByFile map[*File]SpanStats
}

// run is a merged read: one ReadAt of [start, end) of a file, serving
// the spans idx.
type spanRun struct {
	f          *File
	start, end int64 // absolute file offsets
	idx        []int
}

// interleave returns the order in which ReadSpans starts its reads: the
// files' reads in turn (the first read of every file, then the second,
// ...), so that reads in flight spread over the files and their stores
// (each side of a diff has its own, which bounds its own requests in
// flight) instead of queueing behind one file's.
func interleave(runs []*spanRun) []int {
	var files []*File
	byFile := map[*File][]int{}
	for k, r := range runs {
		if _, ok := byFile[r.f]; !ok {
			files = append(files, r.f)
		}
		byFile[r.f] = append(byFile[r.f], k)
	}
	order := make([]int, 0, len(runs))
	for i := 0; len(order) < len(runs); i++ {
		for _, f := range files {
			if ks := byFile[f]; i < len(ks) {
				order = append(order, ks[i])
			}
		}
	}
	return order
}

// ReadSpans reads many byte ranges of tensors at once, the vectored read
// for sampled comparisons over slow or remote sources: the spans of each
// file are sorted and coalesced (overlapping, touching and, up to
// opt.MaxGap apart, nearby spans make one read of at most opt.MaxRead
// bytes), and the merged reads run concurrently, at most opt.Workers at a
// time. Each byte of a file is read at most once per call, however many
// spans cover it. Over HTTP every merged read is one Range request (or a
// few, for reads above the store's chunk size).
func ReadSpans(ctx context.Context, spans []Span, opt SpanOptions) (*SpanResult, error) {
	opt = opt.withDefaults()
	res := &SpanResult{Data: make([][]byte, len(spans)), ByFile: map[*File]SpanStats{}}
	byFile := map[*File][]int{}
	var files []*File
	for i, s := range spans {
		t := s.Tensor
		if t == nil || t.File == nil || t.File.blob == nil {
			return nil, fmt.Errorf("reading span %d: no open tensor", i)
		}
		if s.Off < 0 || s.Len < 0 || s.Off > int64(t.NBytes())-s.Len {
			return nil, fmt.Errorf("reading tensor %s of %s: range [%d, %d) outside its %d bytes", Quote(t.Name), t.File.Location, s.Off, s.Off+s.Len, t.NBytes())
		}
		if _, ok := byFile[t.File]; !ok {
			files = append(files, t.File)
		}
		byFile[t.File] = append(byFile[t.File], i)
	}
	var runs []*spanRun
	for _, f := range files {
		idx := byFile[f]
		abs := func(i int) int64 { return spans[i].Tensor.Offset() + spans[i].Off }
		sort.SliceStable(idx, func(a, b int) bool { return abs(idx[a]) < abs(idx[b]) })
		var cur *spanRun
		for _, i := range idx {
			a, b := abs(i), abs(i)+spans[i].Len
			// Overlapping spans always share a read (no byte twice);
			// touching and nearby ones while the read stays small enough.
			if cur != nil && (a < cur.end || (a <= cur.end+max(opt.MaxGap, 0) && max(b, cur.end)-cur.start <= opt.MaxRead)) {
				cur.end = max(cur.end, b)
				cur.idx = append(cur.idx, i)
				continue
			}
			cur = &spanRun{f: f, start: a, end: b, idx: []int{i}}
			runs = append(runs, cur)
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.Workers)
	bufs := make([][]byte, len(runs))
	for _, k := range interleave(runs) {
		r := runs[k]
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			buf := make([]byte, r.end-r.start)
			n, err := r.f.blob.ReadAt(buf, r.start)
			if err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
				return fmt.Errorf("reading bytes %d-%d of %s (tensor %s): %w", r.start, r.end-1, r.f.Location, Quote(spans[r.idx[0]].Tensor.Name), err)
			}
			bufs[k] = buf
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for k, r := range runs {
		st := res.ByFile[r.f]
		st.Reads++
		st.Bytes += r.end - r.start
		res.ByFile[r.f] = st
		for _, i := range r.idx {
			a := spans[i].Tensor.Offset() + spans[i].Off - r.start
			res.Data[i] = bufs[k][a : a+spans[i].Len : a+spans[i].Len]
		}
	}
	return res, nil
}

package diff

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"golang.org/x/sync/errgroup"
)

// sampleBatchBytes bounds the bytes (both sides) fetched for one batch of
// tensors; a batch is compared while the next one is fetched, so that
// memory stays near three batches whatever the checkpoint's size.
const sampleBatchBytes = 32 << 20

// defaultSampleReads is the number of reads in flight when
// CompareOptions.Workers is not set: sampled diffs are bound by latency (HTTP,
// often a hub 100 ms or more away), not by the CPU. It is 64 per side:
// each side's store bounds its own requests in flight at 64
// (source.Options.MaxConcurrent), and ckpt.ReadSpans starts the files'
// reads in turn, so that both sides keep theirs busy. On the 27B pair 100
// ms away (BenchmarkHub27B, 20,922 requests) 64 reads took 44.6 s, 128
// without the turns 38 s, 128 with them 24 s.
const defaultSampleReads = 128

// compareSampled runs a sampled diff of the planned pairs: it plans the
// ranges of every pair, then, batch by batch, reads the ranges of both
// sides in one coalesced, concurrent ckpt.ReadSpans call and compares the
// batch from memory with the engine, while the next batch is read.
// inSample (nil: every tensor) is the CompareOptions.Sample draw: the tensors
// whose data the diff compares, those BytesTotal counts.
func compareSampled(ctx context.Context, base, ft *ckpt.Checkpoint, plans []*plan, inSample map[string]bool, opt CompareOptions, res *Result) error {
	info := &SampleInfo{BytesPerTensor: opt.SampleBytes, BudgetBytes: opt.SampleBudget, Seed: opt.SampleSeed}
	if opt.SampleBudget > 0 {
		info.BytesPerTensor = 0
	}
	res.Sample = info
	for _, row := range res.Tensors {
		if inSample != nil && !inSample[row.Name] {
			continue
		}
		if t, ok := lookupValues(base, row.Name); ok {
			info.Base.BytesTotal += int64(t.NBytes())
		}
		if t, ok := lookupValues(ft, row.Name); ok {
			info.FT.BytesTotal += int64(t.NBytes())
		}
	}
	if len(plans) == 0 {
		return nil
	}
	e := newEngine(opt, ModeValues)
	// Lay out every pair (no I/O) and note the scale tensors that weights
	// need whole: a pair of such tensors is compared whole too.
	needB, needF := map[*ckpt.Tensor]bool{}, map[*ckpt.Tensor]bool{}
	for _, p := range plans {
		if err := p.layout(); err != nil {
			return err
		}
		if p.bs != nil && p.bs.scaled() {
			needB[p.bs.scaleT] = true
		}
		if p.fs != nil && p.fs.scaled() {
			needF[p.fs.scaleT] = true
		}
		p.packB, _ = p.rb.(*packedSrc)
		p.packF, _ = p.rf.(*packedSrc)
	}
	linkFollowers(plans)
	size := func(*plan) int64 { return opt.SampleBytes }
	if opt.SampleBudget > 0 {
		size = budgetShares(plans, needB, needF, e, opt.SampleBudget)
	}
	for _, p := range plans {
		g := e.geometry(p)
		switch {
		case p.follows != nil:
			continue // planned after its weight
		case needB[p.b] && needF[p.f]:
			p.sample = &samplePlan{whole: true}
		default:
			p.sample = planSample(p, g, size(p), opt.SampleSeed)
		}
	}
	for _, p := range plans {
		g := e.geometry(p)
		if p.follows != nil {
			p.sample = p.followSample()
		}
		if p.sample.whole {
			info.WholeTensors++
		} else {
			info.SampledTensors++
		}
		opt.Progress.AddTotal(p.sample.units(g) * (g.esizeB + g.esizeF))
	}
	batches := sampleBatches(plans, e)
	baseFiles := map[*ckpt.File]bool{}
	for _, f := range base.Files {
		baseFiles[f] = true
	}
	reads := opt.Workers
	if reads <= 0 {
		reads = defaultSampleReads
	}

	reqB, reqF := storeRequests(base), storeRequests(ft)
	ready := make(chan []*plan, 1)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { // read
		defer close(ready)
		for _, batch := range batches {
			st, err := fetchBatch(gctx, e, batch, reads)
			if err != nil {
				return err
			}
			for f, s := range st {
				side := &info.FT
				if baseFiles[f] {
					side = &info.Base
				}
				side.BytesRead += s.Bytes
				side.Reads += s.Reads
			}
			select {
			case ready <- batch:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	g.Go(func() error { // compare
		for batch := range ready {
			if err := e.run(gctx, batch); err != nil {
				return err
			}
			for _, p := range batch {
				p.finishSample()
				p.rb, p.rf, p.bs, p.fs, p.q, p.w = nil, nil, nil, nil, nil, nil // release the batch's memory
			}
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return err
	}
	res.BytesRead = info.Base.BytesRead + info.FT.BytesRead
	info.Base.Requests = storeRequests(base) - reqB
	if ft.Store != base.Store {
		info.FT.Requests = storeRequests(ft) - reqF
	}
	return ctx.Err()
}

// storeRequests is the number of requests the checkpoint's store has made
// so far, for stores that count them (HTTP), else 0.
func storeRequests(c *ckpt.Checkpoint) int64 {
	if s, ok := c.Store.(interface {
		Stats() (requests, bytes int64)
	}); ok {
		n, _ := s.Stats()
		return n
	}
	return 0
}

// sampleFloor is the least share of CompareOptions.SampleBudget a tensor gets
// (or all of it, if smaller).
const sampleFloor = 16 << 10

// budgetShares splits a budget of total bytes per side over the plans:
// the scale tensors that weights need are read whole; every other tensor
// of size s (the larger side; a packed FP4 weight's codes and scale codes
// together, its scale companions following it at no cost of their own)
// gets min(s, sampleFloor + α·s), with α found by bisection as the largest
// that keeps the sum within the budget; when the floors alone exceed it,
// α is 0 and the floor is lowered until they fit.
func budgetShares(plans []*plan, needB, needF map[*ckpt.Tensor]bool, e *engine, total int64) func(*plan) int64 {
	var sizes []int64
	rest := total
	stored := func(p *plan) int64 { g := e.geometry(p); return p.readBytes(g, g.numel) }
	for _, p := range plans {
		switch {
		case p.follows != nil:
			continue
		case needB[p.b] && needF[p.f]:
			rest -= stored(p)
			continue
		}
		rest -= p.globalBytes()
		sizes = append(sizes, stored(p))
	}
	floor := float64(sampleFloor)
	cost := func(a float64) float64 {
		var c float64
		for _, s := range sizes {
			c += min(float64(s), floor+a*float64(s))
		}
		return c
	}
	bisect := func(f func(x float64) float64, hi float64) float64 {
		lo := 0.0
		if f(hi) <= float64(rest) {
			return hi
		}
		for range 60 {
			mid := (lo + hi) / 2
			if f(mid) <= float64(rest) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	alpha := 0.0
	if cost(0) > float64(rest) {
		// The floors alone exceed the budget: lower the floor instead.
		floor = bisect(func(x float64) float64 { floor = x; return cost(0) }, sampleFloor)
	} else {
		alpha = bisect(cost, 1)
	}
	return func(p *plan) int64 {
		s := stored(p)
		return max(min(s, int64(floor+alpha*float64(s))), 1)
	}
}

// sampleBatches groups the plans into batches of about sampleBatchBytes,
// keeping the pair of a weight's scale tensors (and the companions that
// follow a packed weight) in the weight's batch so that the scale bytes,
// which both need, are read once.
func sampleBatches(plans []*plan, e *engine) [][]*plan {
	byName := make(map[string]*plan, len(plans))
	followers := map[*plan][]*plan{}
	for _, p := range plans {
		byName[p.row.Name] = p
		if p.follows != nil {
			followers[p.follows] = append(followers[p.follows], p)
		}
	}
	attached := map[*plan]bool{}
	var batches [][]*plan
	var cur []*plan
	var bytes int64
	for _, p := range plans {
		if attached[p] || p.follows != nil {
			continue
		}
		unit := []*plan{p}
		if !strings.HasSuffix(p.row.Name, ckpt.ScaleSuffix) {
			if sp, ok := byName[ckpt.ScaleName(p.row.Name)]; ok {
				unit = append(unit, sp)
				attached[sp] = true
			}
		}
		unit = append(unit, followers[p]...)
		for _, q := range unit {
			g := e.geometry(q)
			bytes += q.sample.units(g) * (g.esizeB + g.esizeF)
		}
		cur = append(cur, unit...)
		if bytes >= sampleBatchBytes {
			batches = append(batches, cur)
			cur, bytes = nil, 0
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// fetchBatch reads every range the batch needs, of both sides, with one
// ckpt.ReadSpans call, and points the plans at the bytes.
func fetchBatch(ctx context.Context, e *engine, batch []*plan, reads int) (map[*ckpt.File]ckpt.SpanStats, error) {
	var spans []ckpt.Span
	for _, p := range batch {
		g := e.geometry(p)
		if p.packB != nil {
			spans = append(spans, p.sample.packedSpans(p.packB)...)
		} else {
			spans = append(spans, p.sample.spans(p.b, p.bs, g.esizeB)...)
		}
		if p.packF != nil {
			spans = append(spans, p.sample.packedSpans(p.packF)...)
		} else {
			spans = append(spans, p.sample.spans(p.f, p.fs, g.esizeF)...)
		}
	}
	// No gap is read: the plans merge ranges that are close already, and
	// the bytes read stay within the budget (touching spans still share a
	// read).
	got, err := ckpt.ReadSpans(ctx, spans, ckpt.SpanOptions{Workers: reads, MaxGap: -1})
	if err != nil {
		return nil, err
	}
	mem := map[*ckpt.Tensor]*memSrc{}
	for i, s := range spans {
		m := mem[s.Tensor]
		if m == nil {
			m = &memSrc{t: s.Tensor}
			mem[s.Tensor] = m
		}
		m.frags = append(m.frags, memFrag{off: s.Off, data: got.Data[i]})
	}
	for _, p := range batch {
		p.rb, p.rf = mem[p.b], mem[p.f]
		if p.packB != nil {
			if p.rb, err = newPackedMem(p.packB, mem); err != nil {
				return nil, err
			}
		}
		if p.packF != nil {
			if p.rf, err = newPackedMem(p.packF, mem); err != nil {
				return nil, err
			}
		}
		err := p.load(func(t *ckpt.Tensor) ([]byte, error) {
			raw := make([]byte, t.NBytes())
			_, err := mem[t].ReadAt(raw, 0)
			return raw, err
		})
		if err != nil {
			return nil, err
		}
	}
	return got.ByFile, nil
}

// memSrc serves a tensor's bytes from the fragments a sampled diff read.
type memSrc struct {
	t     *ckpt.Tensor
	frags []memFrag
}

type memFrag struct {
	off  int64
	data []byte
}

func (m *memSrc) ReadAt(p []byte, off int64) (int, error) {
	b, err := m.slice(off, int64(len(p)))
	if err != nil {
		return 0, err
	}
	return copy(p, b), nil
}

// slice returns the n bytes read at off (read-only: they are shared).
func (m *memSrc) slice(off, n int64) ([]byte, error) {
	end := off + n
	for _, f := range m.frags {
		if off >= f.off && end <= f.off+int64(len(f.data)) {
			return f.data[off-f.off : end-f.off], nil
		}
	}
	return nil, fmt.Errorf("tensor %s: internal error: bytes [%d, %d) were not read", ckpt.Quote(m.t.Name), off, end)
}

// finishSample turns the engine's verdict on a sampled pair into an
// honest one: no difference in a sample is no_change_seen, never
// identical, and a requant pair whose sampled blocks re-quantise exactly
// is requant_identical_seen, never requant_identical; the row says how
// much was compared, the changed fraction (changed_elems over
// sampled_elems: for a requant pair, the elements whose decoded values
// differ) and its 95 % interval, which treats the sampled ranges as
// clusters (ClusterInterval). Pairs read whole keep their exact relation
// and get the changed fraction.
func (p *plan) finishSample() {
	row := p.row
	if p.sample.whole {
		if f, ok := row.ChangedFractionOf(); ok {
			ff := Float(f)
			row.ChangedFraction = &ff
		}
		return
	}
	row.Sampled = true
	row.SampledRanges = p.sample.ranges
	switch row.Relation {
	case Identical:
		row.Relation = NoChangeSeen
	case RequantIdentical:
		row.Relation = RequantIdenticalSeen
	}
	if !p.geom.countable || row.ChangedElems == nil {
		return
	}
	n := p.sample.units(p.geom)
	row.SampledElems = &n
	k := *row.ChangedElems
	f := Float(0)
	if n > 0 {
		f = Float(float64(k) / float64(n))
	}
	sizes := make([]int64, len(p.sample.ranges))
	for i, r := range p.sample.ranges {
		sizes[i] = r[1] - r[0]
	}
	changed := p.rangeChanged
	if len(changed) != len(sizes) { // every chunk equal: nothing changed
		changed = make([]int64, len(sizes))
	}
	lo, hi := ClusterInterval(changed, sizes)
	row.ChangedFractionCI95 = &[2]Float{Float(lo), Float(hi)}
	row.ChangedFraction = &f
}

// ClusterInterval returns a 95 % interval for the changed fraction of a
// tensor from a sample of m ranges (clusters) at stratified random
// positions, range i holding changed[i] changed elements of sizes[i]. It
// is the union of three intervals, each valid under its own assumption,
// so that none of them has to hold for the result to be honest:
//
//   - the ratio estimator Σchanged/Σsizes with its between-range
//     variance and Student's t with m-1 degrees of freedom (valid when the
//     ranges are many or the changes spread over most of them);
//   - the Wilson interval of the sampled elements as independent draws
//     (the least uncertainty a sample of that many elements can have);
//   - when fewer than fewHits ranges show a change (too few for the
//     between-range variance to be trusted), the Wilson upper bound of the
//     fraction of ranges that contain any change, h of m: a range at a
//     random position contains a change with probability at least the
//     changed fraction, however the changes cluster, so this bound holds
//     even when every change sits in rows or columns the sample missed.
//
// It is [0, 1] with no ranges. See docs/sampling.md.
func ClusterInterval(changed, sizes []int64) (lo, hi float64) {
	m := len(sizes)
	if m == 0 || m != len(changed) {
		return 0, 1
	}
	var k, n int64
	hits := int64(0)
	for i := range sizes {
		k += changed[i]
		n += sizes[i]
		if changed[i] > 0 {
			hits++
		}
	}
	if n <= 0 {
		return 0, 1
	}
	lo, hi = wilson(k, n)
	if m >= 2 {
		p := float64(k) / float64(n)
		mean := float64(n) / float64(m)
		var ss float64
		for i := range sizes {
			d := float64(changed[i]) - p*float64(sizes[i])
			ss += d * d
		}
		se := ss / float64(m-1) / float64(m) // variance of the mean of the residuals
		se = sqrt(se) / mean
		t := studentT975(m - 1)
		lo, hi = min(lo, max(p-t*se, 0)), max(hi, min(p+t*se, 1))
	} else {
		lo, hi = 0, 1
	}
	if hits < min(int64(m), fewHits) {
		_, h := wilson(hits, int64(m))
		hi = max(hi, h)
	}
	if k == 0 {
		lo = 0
	}
	return lo, hi
}

// fewHits is the number of ranges with a change below which
// ClusterInterval also bounds the changed fraction by the fraction of
// ranges that contain any change.
const fewHits = 5

// studentT975 is the 97.5th percentile of Student's t with df degrees of
// freedom: a table up to 30, a Cornish-Fisher expansion beyond.
func studentT975(df int) float64 {
	table := [...]float64{0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df < 1 {
		return math.Inf(1)
	}
	if df < len(table) {
		return table[df]
	}
	const z = 1.959963984540054
	d := float64(df)
	z3, z5 := z*z*z, z*z*z*z*z
	return z + (z3+z)/(4*d) + (5*z5+16*z3+3*z)/(96*d*d)
}

func sqrt(x float64) float64 { return math.Sqrt(x) }

// wilson returns the 95 % Wilson score interval for a proportion of k
// successes in n trials ([0, 1] when n is 0). Unlike the normal
// approximation it stays inside [0, 1] and is informative for k = 0: then
// the upper bound is about 3.84 / n.
func wilson(k, n int64) (lo, hi float64) {
	if n <= 0 {
		return 0, 1
	}
	const z = 1.959963984540054 // the 97.5th percentile of the standard normal
	nf, p := float64(n), float64(k)/float64(n)
	z2 := z * z
	den := 1 + z2/nf
	c := (p + z2/(2*nf)) / den
	h := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi = max(c-h, 0), min(c+h, 1)
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return lo, hi
}

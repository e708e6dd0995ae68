package diff

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	// Mode is header, bytes or values ("" means values).
	Mode Mode
	// Match selects tensors by name (nil: all).
	Match *ckpt.Matcher
	// Sample, when > 0, compares the data of a deterministic subset of
	// that many tensors only (drawn by a hash of Seed and the name; scale
	// companions come with their weight and are not counted). Keys, dtypes
	// and shapes are still compared for every tensor: the others get their
	// header relation (same_header when dtype and shape agree).
	Sample int
	Seed   uint64
	// Workers is the number of tensor chunks processed at once (default
	// GOMAXPROCS); ReadAhead more chunks may be read meanwhile (default 2).
	Workers   int
	ReadAhead int
	// ChunkBytes is the target raw size of one chunk of one side (default
	// 1 MiB); a chunk holds at least one row of scale blocks, read in
	// pieces of at most about ChunkBytes per side whatever the scheme
	// (with the default, a band of 128×128 FP8 blocks compared with a
	// wider float is read whole up to 8 MiB per side: one read, not one
	// per row).
	ChunkBytes int64
	// Progress, if set, counts the tensor bytes of both sides.
	Progress *ckpt.Progress
	// SampleBytes, when > 0 (values mode only), compares every common
	// tensor on a deterministic sample of at most this many bytes per side,
	// drawn by SampleSeed:
	// many short ranges spread over the tensor (block-FP8 weights: runs of
	// whole groups of scale columns, decoded with their scales, and their
	// scale tensors read whole; packed FP4 weights: runs of whole groups
	// of values of one scale code, reading only those groups' codes and
	// scale codes, counted in the budget). Tensors no larger than SampleBytes are
	// read whole and classified exactly. The ranges of both sides are
	// coalesced and read with Workers reads in flight (default 64), each
	// byte at most once; see Result.Sample and docs/sampling.md.
	SampleBytes int64
	// SampleBudget, when > 0 (instead of SampleBytes), spreads this many
	// bytes per side over the selected tensors in proportion to their size,
	// with a floor of 16 KiB per tensor: tensor i gets
	// min(size_i, 16 KiB + α·size_i) with the largest α that keeps the
	// total (scale tensors, read whole, included) within the budget.
	SampleBudget int64
	SampleSeed   uint64
	// ByLayer fills Result.Layers, the per-layer picture.
	ByLayer bool
}

// hooks are the test hooks of compare: Compare passes none, and
// export_test.go gives the tests the hooked call.
type hooks struct {
	// probe, when set, reads each chunk at once if unbounded and receives
	// the largest buffers a chunk read or decoded into.
	probe *chunkProbe
}

// chunkProbe is hooks.probe.
type chunkProbe struct {
	unbounded          bool
	maxRead, maxDecode int64
	// retained: the bytes of scales the plans still hold after the run.
	retained int64
	reads    int64 // read calls on the sources
	noBands  bool  // bandBytes off: the bound of an explicit ChunkBytes
	// localPiece, when set, replaces localPieceBytes (the default
	// ChunkBytes' pieces of local files).
	localPiece int64
}

// notInSample is the note of a common tensor whose data CompareOptions.Sample
// left out.
const notInSample = "data not compared (not in the sample of tensors)"

// kind is how a pair of tensors is compared.
type kind int

const (
	kindPending    kind = iota // float values, decided by prepare
	kindSame                   // same dtype and shape, float values
	kindRaw                    // same dtype and shape, not decodable: bytes only
	kindCross                  // different float dtypes, same shape
	kindRequant                // block FP8 against a wider float, same shape
	kindRequantFP4             // MXFP4/NVFP4 against a wider float (requantfp4.go)
)

// plan is the comparison of one name.
type plan struct {
	row      *Tensor
	b, f     *ckpt.Tensor
	base, ft *ckpt.Checkpoint
	kind     kind
	bs       *side
	fs       *side
	// q is the FP8 side and w the wide side of a requant plan.
	q, w       *side
	scalesSame bool
	// fp8 is set when both sides are the same one-byte float format:
	// codes are compared by decoded value (±0 equal, NaN equal to NaN).
	fp8 bool
	// e4m3 is set when both sides are block-scaled F8_E4M3 weights with
	// the same block size: their statistics come from e4m3Segment.
	e4m3       bool
	e4m3Blocks []e4m3Block // per scale block, row-major (e4m3)
	// bf16 is set when both sides are unscaled BF16: their statistics
	// come from the raw bytes (bf16Segment).
	bf16 bool
	geom geom
	// rb and rf are where the raw bytes of b and f are read from: the
	// tensors themselves, or the bytes a sampled diff fetched ahead.
	rb, rf src
	// sample, in a sampled diff, is the part of the tensor compared.
	sample *samplePlan
	// packB and packF, in a sampled diff, are the packed FP4 sides (nil
	// for others): the sample reads their codes and scale codes, not rb/rf.
	packB, packF *packedSrc
	// follows, in a sampled diff, is the packed weight whose scale
	// companion this pair is: it is compared where the weight's sample
	// reads it (samplepacked.go).
	follows *plan
	// rangeChanged counts the changed elements of each sampled range.
	rangeChanged []int64
	// qBlockBad marks, per scale block of a sampled requant plan, that a
	// sampled code of it failed to re-quantise: requant_mismatch_blocks
	// counts blocks, however many row segments of one the sample holds.
	qBlockBad []atomic.Bool
	// sampled is set in a sampled diff (CompareOptions.SampleBytes/SampleBudget),
	// which compares packed FP4 weights by value only (no kindRequantFP4).
	sampled bool
	// fp4 is the packed side of a kindRequantFP4 plan.
	fp4   *fp4Side
	ready bool // sides and scales loaded
	// local: both sides are read from local files, in pieces of
	// engine.localPiece (not for kindRequant, whose reads follow its
	// bands and tiles).
	local bool
}

// src is what tensor bytes are read from (offsets relative to the tensor).
type src interface {
	ReadAt(p []byte, off int64) (int, error)
}

// Compare compares ft against base. Tensor rows come out in natural name
// order whatever the scheduling; statistics are merged in chunk order.
func Compare(ctx context.Context, base, ft *ckpt.Checkpoint, opt CompareOptions) (*Result, error) {
	return compare(ctx, base, ft, opt, hooks{})
}

// compare is Compare with the test hooks h. It pairs the tensors of both
// sides (pairTensors), compares the data of the pairs that need it
// (comparePlans) and counts the relations (addTotals).
func compare(ctx context.Context, base, ft *ckpt.Checkpoint, opt CompareOptions, h hooks) (*Result, error) {
	mode := opt.Mode
	if mode == "" {
		mode = ModeValues
	}
	if !mode.known() {
		return nil, fmt.Errorf("unknown diff mode %q (want header, bytes or values)", mode)
	}
	if (opt.SampleBytes > 0 || opt.SampleBudget > 0) && mode != ModeValues {
		return nil, fmt.Errorf("sampling bytes (SampleBytes, SampleBudget) needs values mode, not %s", mode)
	}
	res := &Result{Base: base.Source, FT: ft.Source, Mode: mode, Tensors: []Tensor{}}
	res.Config = diffConfig(base.Config, ft.Config)
	names := selectNames(base, ft, opt.Match)
	var inSample map[string]bool // nil: compare the data of every tensor
	if mode != ModeHeader {
		inSample = sample(names, opt.Sample, opt.Seed)
	}
	res.Sampled, res.SampleTensors = inSample != nil, len(inSample)
	plans, err := pairTensors(base, ft, names, mode, inSample, res)
	if err != nil {
		return nil, err
	}
	if err := comparePlans(ctx, base, ft, plans, inSample, opt, mode, res, h); err != nil {
		return nil, err
	}
	addTotals(res, opt.ByLayer)
	return res, nil
}

// pairTensors fills res.Keys and one row of res.Tensors per name, and
// returns the plans of the pairs whose data is to be compared.
func pairTensors(base, ft *ckpt.Checkpoint, names []string, mode Mode, inSample map[string]bool, res *Result) ([]*plan, error) {
	res.Keys = Keys{OnlyInBase: []string{}, OnlyInFT: []string{}}
	res.Tensors = make([]Tensor, len(names))
	var plans []*plan
	for i, name := range names {
		p, err := pairTensor(base, ft, name, mode, inSample, res, &res.Tensors[i])
		if err != nil {
			return nil, err
		}
		if p != nil {
			plans = append(plans, p)
		}
	}
	return plans, nil
}

// pairTensor fills the row of name and counts it in res.Keys; it returns
// the plan of its data comparison, nil when the header decides.
func pairTensor(base, ft *ckpt.Checkpoint, name string, mode Mode, inSample map[string]bool, res *Result, row *Tensor) (*plan, error) {
	b, inB := lookupValues(base, name)
	f, inF := lookupValues(ft, name)
	var rb, rf src // packed weights: their values, decoded on read
	var stored [2]numfmt.DType
	if inB {
		stored[0] = b.DType
	}
	if inF {
		stored[1] = f.DType
	}
	if inB && mode == ModeValues {
		vt, r, ok, err := packedWeight(base, b)
		if err != nil {
			return nil, fmt.Errorf("base %s: %w", base.Source, err)
		}
		if ok {
			b, rb = vt, r
		}
	}
	if inF && mode == ModeValues {
		vt, r, ok, err := packedWeight(ft, f)
		if err != nil {
			return nil, fmt.Errorf("fine-tune %s: %w", ft.Source, err)
		}
		if ok {
			f, rf = vt, r
		}
	}
	*row = Tensor{Name: name, Group: group(name)}
	if inB {
		res.Keys.Base++
		row.BaseDType, row.Shape, row.Numel = b.DType, shapeOf(b), int64(b.Numel())
	}
	if inB {
		row.BaseDType = stored[0] // a packed weight's stored dtype (U8)
	}
	if inF {
		res.Keys.FT++
		row.FTDType = stored[1]
		if !inB {
			row.Shape, row.Numel = shapeOf(f), int64(f.Numel())
		}
	}
	switch {
	case !inF:
		row.Relation = OnlyInBase
		res.Keys.OnlyInBase = append(res.Keys.OnlyInBase, name)
		return nil, nil
	case !inB:
		row.Relation = OnlyInFT
		res.Keys.OnlyInFT = append(res.Keys.OnlyInFT, name)
		return nil, nil
	}
	res.Keys.Common++
	if !slices.Equal(b.Shape, f.Shape) {
		row.Relation, row.FTShape = ShapeChanged, shapeOf(f)
		return nil, nil
	}
	if mode == ModeHeader || inSample != nil && !inSample[name] {
		row.Relation = SameHeader
		if b.DType != f.DType {
			row.Relation = DTypeChanged
		}
		if mode != ModeHeader {
			row.Note = notInSample
		}
		return nil, nil
	}
	if mode == ModeBytes || !b.DType.IsFloat() || !f.DType.IsFloat() {
		if b.DType != f.DType {
			row.Relation = DTypeChanged
			return nil, nil
		}
		return &plan{row: row, b: b, f: f, kind: kindRaw, rb: b, rf: f}, nil
	}
	// A quantised weight is its codes plus its scale: refuse one
	// without a scale ckpt can apply before reading any data.
	if _, err := base.QuantScheme(b); err != nil {
		return nil, fmt.Errorf("base %s: %w", base.Source, err)
	}
	if _, err := ft.QuantScheme(f); err != nil {
		return nil, fmt.Errorf("fine-tune %s: %w", ft.Source, err)
	}
	p := &plan{row: row, b: b, f: f, base: base, ft: ft, rb: rb, rf: rf}
	if p.rb == nil {
		p.rb = p.b
	}
	if p.rf == nil {
		p.rf = p.f
	}
	return p, nil
}

// comparePlans compares the data of the plans: sampled
// (compareSampled) or chunk by chunk (the engine).
func comparePlans(ctx context.Context, base, ft *ckpt.Checkpoint, plans []*plan, inSample map[string]bool,
	opt CompareOptions, mode Mode, res *Result, h hooks) error {
	sampled := opt.SampleBytes > 0 || opt.SampleBudget > 0
	for _, p := range plans {
		p.sampled = sampled
	}
	switch {
	case sampled:
		return compareSampled(ctx, base, ft, plans, inSample, opt, res)
	case len(plans) == 0:
		return nil
	}
	e := newEngine(opt, mode)
	if h.probe != nil {
		e.unbounded = h.probe.unbounded
		if h.probe.noBands {
			e.bandBytes = 0
		}
		if h.probe.localPiece > 0 && e.localPiece > 0 {
			e.localPiece = h.probe.localPiece
		}
	}
	for _, p := range plans {
		opt.Progress.AddTotal(int64(p.b.NBytes() + p.f.NBytes()))
	}
	if err := e.run(ctx, plans); err != nil {
		return err
	}
	res.BytesRead = e.bytesRead.Load()
	if h.probe != nil {
		h.probe.maxRead, h.probe.maxDecode, h.probe.reads = e.maxRead.Load(), e.maxDecode.Load(), e.reads.Load()
		for _, p := range plans {
			h.probe.retained += p.retainedBytes()
		}
	}
	return nil
}

// addTotals counts the relations of res's rows (Summary) and groups them
// (Groups and, byLayer, Layers).
func addTotals(res *Result, byLayer bool) {
	for i := range res.Tensors {
		res.Summary.add(res.Tensors[i].Relation)
	}
	res.Groups = groupSummaries(res.Tensors)
	if byLayer {
		res.Layers = ByLayer(res.Tensors)
	}
}

func shapeOf(t *ckpt.Tensor) []int64 {
	if t.Shape == nil {
		return []int64{}
	}
	return t.Shape
}

// prepare decides how to compare the values of two float tensors of the
// same shape; it reads the block scales (small) of FP8 weights, unless a
// sampled diff has loaded them already.
func (p *plan) prepare() error {
	if p.kind == kindRaw || p.ready {
		return nil
	}
	if err := p.layout(); err != nil {
		return err
	}
	return p.load(func(t *ckpt.Tensor) ([]byte, error) {
		raw := make([]byte, t.NBytes())
		_, err := t.ReadAt(raw, 0)
		return raw, err
	})
}

// release drops what prepare and load read for the comparison (the
// scales, decoded and raw, of both sides): the plan outlives its tensor's
// comparison until the diff ends, and a packed FP4 weight's scales are a
// sixteenth or a thirty-second of its values.
func (p *plan) release() {
	for _, sd := range []*side{p.bs, p.fs} {
		if sd != nil {
			sd.scale, sd.scaleRaw = nil, nil
		}
	}
	if p.fp4 != nil {
		p.fp4.scales = nil
	}
	p.e4m3Blocks, p.qBlockBad = nil, nil
}

// retainedBytes is the size of what release drops (hooks.probe).
func (p *plan) retainedBytes() int64 {
	var n int64
	for _, sd := range []*side{p.bs, p.fs} {
		if sd != nil {
			n += int64(4*len(sd.scale) + len(sd.scaleRaw))
		}
	}
	if p.fp4 != nil {
		n += int64(len(p.fp4.scales))
	}
	return n + int64(len(p.e4m3Blocks))*int64(unsafe.Sizeof(e4m3Block{})) + int64(len(p.qBlockBad))
}

// load gives the block-scaled sides their scales, read by read, and
// decides whether both sides apply the same scales.
func (p *plan) load(read func(*ckpt.Tensor) ([]byte, error)) error {
	if p.kind == kindRaw {
		return nil
	}
	for _, s := range []struct {
		sd  *side
		who string
		c   *ckpt.Checkpoint
	}{{p.bs, "base", p.base}, {p.fs, "fine-tune", p.ft}} {
		if !s.sd.scaled() {
			continue
		}
		raw, err := read(s.sd.scaleT)
		if err == nil {
			err = s.sd.setScale(raw)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", s.who, s.c.Source, err)
		}
	}
	if p.kind == kindRequantFP4 {
		if err := p.fp4.load(read); err != nil {
			return err
		}
	}
	if p.kind == kindSame {
		p.scalesSame = p.bs.scaled() == p.fs.scaled() && (!p.bs.scaled() || p.bs.sameScale(p.fs))
		bs, fs := p.bs, p.fs
		p.e4m3 = bs.e4m3 != nil && fs.e4m3 != nil && bs.bm == fs.bm && bs.bn == fs.bn && bs.sCols == fs.sCols && bs.cols == fs.cols && len(bs.scale) == len(fs.scale)
		if p.e4m3 {
			p.e4m3Blocks = make([]e4m3Block, len(bs.scale))
			for i := range p.e4m3Blocks {
				p.e4m3Blocks[i] = newE4M3Block(bs.scale[i], fs.scale[i])
			}
		}
		p.bf16 = bs.dt == numfmt.BF16 && fs.dt == numfmt.BF16 && !bs.scaled() && !fs.scaled()
	}
	p.ready = true
	return nil
}

// layout describes both sides (without reading data) and decides how to
// compare them.
func (p *plan) layout() error {
	if p.kind == kindRaw {
		return nil
	}
	b, f := p.b, p.f
	var err error
	if p.bs, err = sideLayout(p.base, b); err != nil {
		return fmt.Errorf("base %s: %w", p.base.Source, err)
	}
	if p.fs, err = sideLayout(p.ft, f); err != nil {
		return fmt.Errorf("fine-tune %s: %w", p.ft.Source, err)
	}
	if p.bs.scaled() != p.fs.scaled() && len(b.Shape) > 2 && slices.Equal(b.Shape, f.Shape) {
		// The unscaled side of a stack takes the scaled side's view, so
		// that rows and columns mean the same on both.
		for _, s := range []*side{p.bs, p.fs} {
			s.rows, s.cols = ckpt.StackedMatrix(s.t.Shape)
		}
	}
	switch {
	case p.layoutFP4():
		p.kind = kindRequantFP4
	case b.DType == f.DType:
		p.kind = kindSame
		p.fp8 = b.DType == numfmt.F8E4M3 || b.DType == numfmt.F8E5M2
	case p.bs.scaled() && !p.fs.scaled() && isWide(f.DType):
		p.kind, p.q, p.w = kindRequant, p.bs, p.fs
	case p.fs.scaled() && !p.bs.scaled() && isWide(b.DType):
		p.kind, p.q, p.w = kindRequant, p.fs, p.bs
	default:
		p.kind = kindCross
	}
	if p.kind == kindRequant {
		if p.q.recipes = recipesFor(p.q.scaleDType, p.q.ct); len(p.q.recipes) == 0 {
			p.kind = kindCross // no recipe stores such scales: values only
		}
	}
	return nil
}

// isWide reports whether dt is a float wider than FP8 that the recipe
// quantises from.
func isWide(dt numfmt.DType) bool {
	switch dt {
	case numfmt.BF16, numfmt.F16, numfmt.F32, numfmt.F64:
		return true
	}
	return false
}

func defaultWorkers(n int) int {
	if n > 0 {
		return n
	}
	return max(runtime.GOMAXPROCS(0), 1)
}

package diff

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options tune Compare.
type Options struct {
	// Mode is header, bytes or values ("" means values).
	Mode Mode
	// Match selects tensors by name (nil: all).
	Match *ckpt.Matcher
	// Sample, when > 0, compares a deterministic subset of that many
	// tensors (drawn by a hash of Seed and the name; scale companions come
	// with their weight and are not counted).
	Sample int
	Seed   uint64
	// Workers is the number of tensor chunks processed at once (default
	// GOMAXPROCS); ReadAhead more chunks may be read meanwhile (default 2).
	Workers   int
	ReadAhead int
	// ChunkBytes is the target raw size of one chunk of one side (default
	// 1 MiB); a chunk holds at least one row of scale blocks.
	ChunkBytes int64
	// Progress, if set, counts the tensor bytes of both sides.
	Progress *ckpt.Progress
}

// kind is how a pair of tensors is compared.
type kind int

const (
	kindPending kind = iota // float values, decided by prepare
	kindSame                // same dtype and shape, float values
	kindRaw                 // same dtype and shape, not decodable: bytes only
	kindCross               // different float dtypes, same shape
	kindRequant             // block FP8 against a wider float, same shape
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
	geom       geom
}

// Compare compares ft against base. Tensor rows come out in natural name
// order whatever the scheduling; statistics are merged in chunk order.
func Compare(ctx context.Context, base, ft *ckpt.Checkpoint, opt Options) (*Result, error) {
	mode := opt.Mode
	if mode == "" {
		mode = ModeValues
	}
	if _, ok := ParseMode(string(mode)); !ok {
		return nil, fmt.Errorf("unknown diff mode %q (want header, bytes or values)", mode)
	}
	res := &Result{Base: base.Source, FT: ft.Source, Mode: mode, Tensors: []Tensor{}}
	res.Config = DiffConfig(base.Config, ft.Config)
	names, sampled := selectNames(base, ft, opt.Match, opt.Sample, opt.Seed)
	res.Sampled = sampled
	res.Keys = Keys{OnlyInBase: []string{}, OnlyInFT: []string{}}
	res.Tensors = make([]Tensor, len(names))
	var plans []*plan
	for i, name := range names {
		b, inB := base.Lookup(name)
		f, inF := ft.Lookup(name)
		row := &res.Tensors[i]
		*row = Tensor{Name: name, Group: group(name)}
		if inB {
			res.Keys.Base++
			row.BaseDType, row.Shape, row.Numel = b.DType, shapeOf(b), int64(b.Numel())
		}
		if inF {
			res.Keys.FT++
			row.FTDType = f.DType
			if !inB {
				row.Shape, row.Numel = shapeOf(f), int64(f.Numel())
			}
		}
		switch {
		case !inF:
			row.Relation = OnlyInBase
			res.Keys.OnlyInBase = append(res.Keys.OnlyInBase, name)
			continue
		case !inB:
			row.Relation = OnlyInFT
			res.Keys.OnlyInFT = append(res.Keys.OnlyInFT, name)
			continue
		}
		res.Keys.Common++
		if !slices.Equal(b.Shape, f.Shape) {
			row.Relation, row.FTShape = ShapeChanged, shapeOf(f)
			continue
		}
		switch mode {
		case ModeHeader:
			row.Relation = SameHeader
			if b.DType != f.DType {
				row.Relation = DTypeChanged
			}
			continue
		case ModeBytes:
			if b.DType != f.DType {
				row.Relation = DTypeChanged
				continue
			}
			plans = append(plans, &plan{row: row, b: b, f: f, kind: kindRaw})
			continue
		}
		if !b.DType.IsFloat() || !f.DType.IsFloat() {
			if b.DType != f.DType {
				row.Relation = DTypeChanged
				continue
			}
			plans = append(plans, &plan{row: row, b: b, f: f, kind: kindRaw})
			continue
		}
		plans = append(plans, &plan{row: row, b: b, f: f, base: base, ft: ft})
	}
	if len(plans) > 0 {
		e := newEngine(opt, mode)
		for _, p := range plans {
			opt.Progress.AddTotal(int64(p.b.NBytes() + p.f.NBytes()))
		}
		if err := e.run(ctx, plans); err != nil {
			return nil, err
		}
		res.BytesRead = e.bytesRead.Load()
	}
	groups := map[string]*GroupSummary{}
	for _, g := range ckpt.Groups() {
		groups[g] = &GroupSummary{Group: g}
	}
	for i := range res.Tensors {
		t := &res.Tensors[i]
		res.Summary.Add(t.Relation)
		groups[t.Group].Add(t.Relation)
	}
	for _, g := range ckpt.Groups() {
		if groups[g].Total() > 0 {
			res.Groups = append(res.Groups, *groups[g])
		}
	}
	return res, nil
}

func shapeOf(t *ckpt.Tensor) []int64 {
	if t.Shape == nil {
		return []int64{}
	}
	return t.Shape
}

// prepare decides how to compare the values of two float tensors of the
// same shape; it reads the block scales (small) of FP8 weights.
func (p *plan) prepare() error {
	if p.kind == kindRaw {
		return nil
	}
	b, f := p.b, p.f
	var err error
	if p.bs, err = newSide(p.base, b); err != nil {
		return fmt.Errorf("base %s: %w", p.base.Source, err)
	}
	if p.fs, err = newSide(p.ft, f); err != nil {
		return fmt.Errorf("fine-tune %s: %w", p.ft.Source, err)
	}
	switch {
	case b.DType == f.DType:
		p.kind = kindSame
		p.scalesSame = p.bs.scaled() == p.fs.scaled() && (!p.bs.scaled() || p.bs.sameScale(p.fs))
	case p.bs.scaled() && !p.fs.scaled() && isWide(f.DType):
		p.kind, p.q, p.w = kindRequant, p.bs, p.fs
	case p.fs.scaled() && !p.bs.scaled() && isWide(b.DType):
		p.kind, p.q, p.w = kindRequant, p.fs, p.bs
	default:
		p.kind = kindCross
	}
	return nil
}

// isWide reports whether dt is a float wider than FP8 that the recipe
// quantises from.
func isWide(dt ckpt.DType) bool {
	switch dt {
	case ckpt.BF16, ckpt.F16, ckpt.F32, ckpt.F64:
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

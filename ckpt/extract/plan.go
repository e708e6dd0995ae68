package extract

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// Output dtype modes (PlanOptions.DType, Options.DType, the CLI's --dtype).
const (
	Keep = "keep" // every tensor as stored; FP8 weights stay FP8
	BF16 = "bf16"
	F16  = "f16"
	F32  = "f32"
)

// defaultChunkBytes bounds each buffer used while streaming one tensor.
const defaultChunkBytes = 8 << 20

// minChunkBytes keeps one element of the widest dtype (F64) in a chunk.
const minChunkBytes = 16

// NoMatchError is the globs Match and Exclude selecting no tensor of Source
// (Tensors tensors), or, when DType is set, only quantisation scales, which
// are not values under that float dtype. It matches ckpt.ErrEmptySelection.
type NoMatchError struct {
	Match, Exclude []string
	Source         string
	Tensors        int
	DType          string
}

// Error is the message of the NoMatchError, the globs named as the
// Options fields.
func (e *NoMatchError) Error() string {
	s := "Match " + strings.Join(e.Match, ", ")
	if len(e.Match) == 0 {
		s = "(all)"
	}
	if len(e.Exclude) > 0 {
		s += " Exclude " + strings.Join(e.Exclude, ", ")
	}
	return e.With(s, "DType")
}

// With is the message of the NoMatchError with globs the description of
// Match and Exclude, and dtype the name of the DType option.
func (e *NoMatchError) With(globs, dtype string) string {
	if e.DType != "" {
		return fmt.Sprintf("%v %s in %s but quantisation scales, which are not values under %s %s (select their weights to dequantise them)",
			ckpt.ErrEmptySelection, globs, e.Source, dtype, e.DType)
	}
	return fmt.Sprintf("%v %s in %s (%d tensors)", ckpt.ErrEmptySelection, globs, e.Source, e.Tensors)
}

// Is makes errors.Is(err, ckpt.ErrEmptySelection) true.
func (e *NoMatchError) Is(target error) bool { return target == ckpt.ErrEmptySelection }

// PlanOptions select and convert the tensors to extract.
type PlanOptions struct {
	// Match and Exclude are ckpt.NewMatcher globs; no Match selects all.
	Match, Exclude []string
	// Select, when set, is the selection compiled already (Match and
	// Exclude are then not read).
	Select *ckpt.Matcher
	// DType is Keep (default), BF16, F16 or F32. With a float dtype,
	// block-FP8 weights are dequantised (and the scales dropped); a
	// quantised weight whose scale is missing or of a scheme ckpt does not
	// read fails NewPlan (ckpt.QuantScheme: *ckpt.MissingScaleError,
	// *ckpt.UnknownScaleError); every other tensor that ckpt can decode as
	// floats (BF16, F16, F32, F64, F8_E8M0, an FP8 scale) is rounded to the
	// dtype (nearest even; F64 goes through float32 first); integer, bool
	// and complex tensors are copied as they are. A tensor already in the
	// dtype is copied byte for byte.
	DType string
	// WithScales adds, under Keep, the scale companions
	// (ckpt.ScaleCompanions: weight_scale_inv, ...) of every selected
	// quantised weight even when the globs do not select them (or exclude them).
	WithScales bool
	// MaxShardSize, when positive and smaller than the payload, splits the
	// output into shards of at most this many payload bytes (a weight and its
	// scale stay together; a larger tensor gets a shard of its own).
	MaxShardSize int64
	// ChunkBytes bounds each streaming buffer (default 8 MiB;
	// a piece converted and written at once holds at most 1 MiB).
	ChunkBytes int64
	// Workers is how many workers convert and write the pieces of a file
	// at once (Plan.Write); 0 means GOMAXPROCS, at most 4.
	Workers int
	// Progress, if set, counts output bytes and finished tensors.
	Progress *ckpt.Progress
	// AllowNonFinite extracts tensors holding NaN or Inf (Result.NonFinite
	// counts them); by default the first one fails Write with
	// *ckpt.NonFiniteError.
	AllowNonFinite bool
	// Words are the caller's words for these options (DType, WithScales)
	// in the plan's warnings; nil spells them as Go does.
	Words ckpt.Words
}

// Action says how a tensor is produced.
type Action string

// Actions.
const (
	Copy       Action = "copy"       // raw bytes, unchanged
	Convert    Action = "convert"    // decoded to float32 and re-encoded
	Dequantize Action = "dequantize" // FP8 code × block scale, encoded
)

// Item is one output tensor.
type Item struct {
	ckpt.WriteSpec              // output name, dtype and shape
	Source         *ckpt.Tensor // the tensor it is made from
	Action         Action
	// Values holds the block scale of a dequantised weight.
	Values *ckpt.Values
	// Shard is the index in Plan.Shards of the file that holds it.
	Shard int
}

// nBytes is the size of the output tensor's data.
func (it *Item) nBytes() int64 {
	return int64(it.Source.Numel()) * int64(it.DType.Bits()) / 8
}

// Shard is one output file.
type Shard struct {
	// Name is the shard file name (model-0000k-of-0000n.safetensors) when
	// the output is sharded; "" for a single file (named by Write).
	Name  string
	Items []*Item // natural order by name
	Bytes int64   // payload bytes
}

// Plan is what Write will produce: decided from headers and scales only.
type Plan struct {
	Source   string
	DType    string  // the PlanOptions.DType mode
	Items    []*Item // natural order by name
	Shards   []Shard
	Sharded  bool
	Metadata map[string]string // __metadata__ of every output file
	// TotalBytes is the payload (sum of tensor bytes), the index's total_size.
	TotalBytes int64
	// Config is the source config (nil if none); copied into a directory output.
	Config *ckpt.Config
	// DropQuantization is set when the output has no FP8 weights left
	// (every one dequantised or converted), so that the copied config.json
	// loses its quantization_config.
	DropQuantization bool
	// Subset is set when the selection leaves source tensors out: the
	// copied config.json then records it (SubsetKey), so that verify
	// expects only the tensors of the selection.
	Subset *ckpt.Subset
	// Warnings are things the user should know (a quantised weight
	// extracted under keep without its scale, or without a scale at all).
	Warnings []string
	chunk    int64
	nworkers int
	progress *ckpt.Progress
	guard    *ckpt.FiniteGuard
}

// nonFinite lists the tensors written with NaN or Inf values (only with
// PlanOptions.AllowNonFinite), after Write.
func (p *Plan) nonFinite() []ckpt.NonFinite { return p.guard.Counts() }

// Counts returns how many items are copied, converted and dequantised.
func (p *Plan) Counts() (copied, converted, dequantized int) {
	for _, it := range p.Items {
		switch it.Action {
		case Copy:
			copied++
		case Convert:
			converted++
		case Dequantize:
			dequantized++
		}
	}
	return
}

// TargetDType maps a dtype mode to the output float dtype ("" for Keep).
func TargetDType(mode string) (numfmt.DType, error) {
	switch strings.ToLower(mode) {
	case "", Keep:
		return "", nil
	case BF16:
		return numfmt.BF16, nil
	case F16:
		return numfmt.F16, nil
	case F32:
		return numfmt.F32, nil
	}
	return "", fmt.Errorf("invalid dtype %q (want keep, bf16, f16 or f32)", mode)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// NewPlan selects and plans the tensors of c to extract. It reads headers
// and, for dequantised weights, their (small) block scales; no other data.
func NewPlan(c *ckpt.Checkpoint, opt PlanOptions) (*Plan, error) {
	target, err := TargetDType(opt.DType)
	if err != nil {
		return nil, err
	}
	m := opt.Select
	if m == nil {
		if m, err = ckpt.NewMatcher(opt.Match, opt.Exclude); err != nil {
			return nil, err
		}
	}
	match, exclude := m.Include(), m.Exclude()
	if opt.MaxShardSize < 0 {
		return nil, fmt.Errorf("invalid max shard size %d", opt.MaxShardSize)
	}
	if opt.Workers < 0 {
		return nil, fmt.Errorf("invalid worker count %d", opt.Workers)
	}
	p := &Plan{Source: c.Source, DType: strings.ToLower(opt.DType), Config: c.Config, chunk: opt.ChunkBytes, nworkers: opt.Workers, progress: opt.Progress,
		guard: &ckpt.FiniteGuard{Allow: opt.AllowNonFinite, Action: "extract it"}}
	if p.DType == "" {
		p.DType = Keep
	}
	if p.chunk <= 0 {
		p.chunk = defaultChunkBytes
	}
	p.chunk = max(p.chunk, minChunkBytes)

	// Every glob must match some tensor: an --exclude that matches none
	// would extract what it was meant to leave out.
	if err := m.CheckSelection(c.Source, c.Names()); err != nil {
		return nil, err
	}
	selected := map[string]bool{}
	for _, t := range c.Tensors {
		if m.Match(t.Name) {
			selected[t.Name] = true
		}
	}
	if len(selected) == 0 {
		return nil, &NoMatchError{Match: match, Exclude: exclude, Source: c.Source, Tensors: len(c.Tensors)}
	}
	if target == "" && opt.WithScales {
		for _, t := range c.Tensors {
			if selected[t.Name] && c.IsQuantized(t) {
				for _, s := range c.ScaleCompanions(t) {
					selected[s.Name] = true
				}
			}
		}
	}
	// dropped: scales consumed by the dequantisation of their weight.
	dropped := map[string]bool{}
	for _, t := range c.Tensors {
		if !selected[t.Name] {
			continue
		}
		if !t.DType.Known() {
			return nil, fmt.Errorf("tensor %s of %s: unknown dtype %s cannot be written", ckpt.Quote(t.Name), t.File.Location, ckpt.Quote(string(t.DType)))
		}
		it := &Item{WriteSpec: ckpt.WriteSpec{Name: t.Name, DType: t.DType, Shape: t.Shape}, Source: t, Action: Copy}
		if target != "" {
			// ckpt.QuantScheme: a quantised weight is its codes plus its
			// scale; one without a scale ckpt can apply is refused.
			q, err := c.QuantScheme(t)
			if err != nil {
				return nil, err
			}
			switch {
			case q.Scheme != quant.Plain:
				// every scheme through the one reader (ckpt.NewQuantValues);
				// an MXFP4 X_blocks becomes X [..., G*32].
				v, err := ckpt.NewQuantValues(t, q)
				if err != nil {
					return nil, err
				}
				it.Name, it.Shape = q.Name, q.Shape
				it.DType, it.Action, it.Values = target, Dequantize, v
				for _, s := range q.Companions {
					dropped[s.Name] = true
				}
			case t.DType.IsFloat():
				it.DType = target
				if t.DType != target {
					it.Action = Convert
				}
			}
		} else if w := keepWarning(c, t, selected, opt.Words); w != "" {
			p.Warnings = append(p.Warnings, w)
		}
		p.Items = append(p.Items, it)
	}
	kept := p.Items[:0]
	for _, it := range p.Items {
		if dropped[it.Name] {
			continue
		}
		if target != "" && ckpt.IsBookkeeping(it.Source.Name) {
			// A scale is not a value: under a float dtype it is consumed by
			// its weight's dequantisation or left out, never converted.
			p.Warnings = append(p.Warnings, scaleLeftOut(c, it.Source, selected, p.DType, opt.Words))
			continue
		}
		kept = append(kept, it)
	}
	p.Items = kept
	if len(p.Items) == 0 {
		return nil, &NoMatchError{Match: match, Exclude: exclude, Source: c.Source, Tensors: len(c.Tensors), DType: p.DType}
	}
	for _, it := range p.Items {
		p.TotalBytes += it.nBytes()
	}
	p.DropQuantization = target != "" && c.Config.Quantization() != nil
	if len(selected) < len(c.Tensors) {
		p.Subset = &ckpt.Subset{Match: nonNil(match), Exclude: nonNil(exclude)}
	}
	p.Metadata = commonMetadata(p.Items)
	// A scale stays in its weight's shard (ckpt.ScaleCompanions).
	owner := map[string]string{}
	for _, it := range p.Items {
		if c.IsQuantized(it.Source) {
			for _, s := range c.ScaleCompanions(it.Source) {
				owner[s.Name] = it.Name
			}
		}
	}
	p.shard(opt.MaxShardSize, owner)
	return p, nil
}

// scaleLeftOut says why the scale s is not written under a float dtype
// (words: the caller's words for the options).
func scaleLeftOut(c *ckpt.Checkpoint, s *ckpt.Tensor, selected map[string]bool, dtype string, words ckpt.Words) string {
	i := strings.LastIndexByte(s.Name, '.')
	name := s.Name[i+1:]
	w, ok := strings.CutSuffix(s.Name, ckpt.ScaleSuffix) // block FP8: <weight>_scale_inv
	if !ok {
		w = s.Name[:i+1] + "weight" // <module>.weight_scale, <module>.input_scale, ...
	}
	why := fmt.Sprintf("its weight %s is not in the checkpoint", ckpt.Quote(w))
	if wt, found := c.Lookup(w); found {
		switch {
		case !c.IsQuantized(wt):
			why = fmt.Sprintf("its weight %s is %s, not quantised: nothing applies it", ckpt.Quote(w), wt.DType)
		case !selected[w]:
			why = fmt.Sprintf("its weight %s is not extracted (select it to dequantise it with this scale)", ckpt.Quote(w))
		}
	}
	return fmt.Sprintf("tensor %s (%s) is a quantisation scale, not a value: left out of the %s %s output; %s",
		ckpt.Quote(s.Name), name, words.Of("DType"), dtype, why)
}

// keepWarning says what is wrong with extracting the quantised weight t
// under keep without its scale: the scale is not selected, or the source
// has none (or one ckpt cannot read). "" when nothing is. w are the
// caller's words for the options that would bring the scale along.
func keepWarning(c *ckpt.Checkpoint, t *ckpt.Tensor, selected map[string]bool, w ckpt.Words) string {
	withScales, bf16 := "add "+w.Of("WithScales"), "use "+w.Of("DType")+" "+BF16
	q, err := c.QuantScheme(t)
	var missing *ckpt.MissingScaleError
	var unknown *ckpt.UnknownScaleError
	switch {
	case errors.As(err, &missing):
		return fmt.Sprintf("tensor %s is %s without a scale (no %s in the source): the output holds its codes alone",
			ckpt.Quote(t.Name), t.DType, ckpt.Quote(missing.Want))
	case errors.As(err, &unknown):
		for _, s := range unknown.Companions {
			if !selected[s.Name] {
				return fmt.Sprintf("tensor %s is %s with scale companion %s, which is not extracted: the output cannot be dequantised (%s)",
					ckpt.Quote(t.Name), t.DType, ckpt.Quote(s.Name), withScales)
			}
		}
	case err == nil && q.Scheme == quant.BlockFP8 && !selected[q.Scale.Name]:
		return fmt.Sprintf("tensor %s is FP8 with block scale %s, which is not extracted: the output cannot be dequantised (%s, or %s)",
			ckpt.Quote(t.Name), ckpt.Quote(q.Scale.Name), withScales, bf16)
	case err == nil && q.Scale != nil:
		for _, s := range []*ckpt.Tensor{q.Scale, q.Global} {
			if s != nil && !selected[s.Name] {
				return fmt.Sprintf("tensor %s is %s with scale companion %s, which is not extracted: the output cannot be dequantised (%s, or %s)",
					ckpt.Quote(t.Name), quant.SpecOf(q.Scheme).Title, ckpt.Quote(s.Name), withScales, bf16)
			}
		}
	}
	return ""
}

// commonMetadata is the source __metadata__ when every output tensor comes
// from files with the same one, else {"format": "pt"}.
func commonMetadata(items []*Item) map[string]string {
	var md map[string]string
	for i, it := range items {
		h := it.Source.File.Header
		if !h.HasMetadata || (i > 0 && !maps.Equal(md, h.Metadata)) {
			return map[string]string{"format": "pt"}
		}
		md = h.Metadata
	}
	if md == nil {
		return map[string]string{"format": "pt"}
	}
	return maps.Clone(md)
}

// shard assigns items to shards, greedily in natural order of units (a
// weight together with its scales: owner maps each scale companion to its
// weight).
func (p *Plan) shard(maxSize int64, owner map[string]string) {
	inOut := map[string]bool{}
	for _, it := range p.Items {
		inOut[it.Name] = true
	}
	unitOf := func(it *Item) string {
		if w, ok := owner[it.Name]; ok && inOut[w] {
			return w
		}
		return it.Name
	}
	var keys []string
	units := map[string][]*Item{}
	for _, it := range p.Items {
		k := unitOf(it)
		if _, ok := units[k]; !ok {
			keys = append(keys, k)
		}
		units[k] = append(units[k], it)
	}
	sort.SliceStable(keys, func(i, j int) bool { return ckpt.NaturalLess(keys[i], keys[j]) })
	p.Sharded = maxSize > 0 && p.TotalBytes > maxSize
	p.Shards = []Shard{{}}
	for _, k := range keys {
		var b int64
		for _, it := range units[k] {
			b += it.nBytes()
		}
		cur := &p.Shards[len(p.Shards)-1]
		if p.Sharded && len(cur.Items) > 0 && cur.Bytes+b > maxSize {
			p.Shards = append(p.Shards, Shard{})
			cur = &p.Shards[len(p.Shards)-1]
		}
		for _, it := range units[k] {
			it.Shard = len(p.Shards) - 1
			cur.Items = append(cur.Items, it)
		}
		cur.Bytes += b
	}
	for i := range p.Shards {
		sort.SliceStable(p.Shards[i].Items, func(a, b int) bool {
			return ckpt.NaturalLess(p.Shards[i].Items[a].Name, p.Shards[i].Items[b].Name)
		})
		if p.Sharded {
			p.Shards[i].Name = shardName(i, len(p.Shards))
		}
	}
}

// shardName is the conventional name of shard i (0-based) of n.
func shardName(i, n int) string {
	return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n)
}

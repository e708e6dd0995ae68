package diff

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/numfmt"
)

// Mode selects how much data Compare reads.
type Mode string

// Modes of Compare.
const (
	// ModeHeader compares keys, dtypes and shapes only; no tensor data is read.
	ModeHeader Mode = "header"
	// ModeBytes compares raw bytes only, stopping at the first differing
	// chunk of a tensor; relations are identical or changed (or
	// dtype_changed/shape_changed from the headers).
	ModeBytes Mode = "bytes"
	// ModeValues compares dequantised values with statistics (the default).
	ModeValues Mode = "values"
)

// ParseMode checks a --mode value ("" means values).
func ParseMode(s string) (Mode, bool) {
	m := Mode(s)
	if m == "" {
		m = ModeValues
	}
	if !m.known() {
		return "", false
	}
	return m, true
}

// known reports whether m is one of the modes (not "").
func (m Mode) known() bool {
	return m == ModeHeader || m == ModeBytes || m == ModeValues
}

// Relation is how a tensor of the fine-tune relates to the base's.
type Relation string

// Relations, as the command contract defines them.
const (
	Identical        Relation = "identical"
	Changed          Relation = "changed"
	RequantIdentical Relation = "requant_identical"
	DTypeChanged     Relation = "dtype_changed"
	ShapeChanged     Relation = "shape_changed"
	OnlyInBase       Relation = "only_in_base"
	OnlyInFT         Relation = "only_in_ft"
	// SameHeader is used in header mode for tensors whose dtype and shape
	// agree: without reading data it cannot tell identical from changed.
	// In values and bytes mode it is the relation of the common tensors of one dtype and shape whose data CompareOptions.Sample left
	// out.
	SameHeader Relation = "same_header"
	// NoChangeSeen is used for sampled tensors (CompareOptions.SampleBytes) only:
	// two sides of one dtype and no sampled element differs, which a sample
	// cannot turn into identical.
	NoChangeSeen Relation = "no_change_seen"
	// RequantIdenticalSeen is used for sampled tensors (CompareOptions.SampleBytes)
	// only: a block-FP8 / wider-float pair whose sampled codes all
	// re-quantise exactly with their stored scales (and whose blocks
	// sampled whole have the recipe's scale), which a sample cannot turn
	// into requant_identical (docs/sampling.md).
	RequantIdenticalSeen Relation = "requant_identical_seen"
)

// Relations lists the relations in report order. Every tensor row has
// exactly one, so the counts of a Summary add up to its tensors.
var Relations = []Relation{Identical, Changed, RequantIdentical, DTypeChanged, ShapeChanged, OnlyInBase, OnlyInFT,
	SameHeader, NoChangeSeen, RequantIdenticalSeen}

// Float is a float64 that encodes NaN and ±Inf as JSON null.
type Float float64

// MarshalJSON encodes finite values as numbers and the rest as null.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// Tensor is one row of the comparison: a tensor of the base, the
// fine-tune or both.
type Tensor struct {
	Name      string       `json:"name"`
	Relation  Relation     `json:"relation"`
	BaseDType numfmt.DType `json:"base_dtype,omitempty"`
	FTDType   numfmt.DType `json:"ft_dtype,omitempty"`
	// Shape is the base's shape (the fine-tune's for only_in_ft).
	Shape []int64 `json:"shape"`
	// FTShape is the fine-tune's shape when it differs (shape_changed).
	FTShape []int64 `json:"ft_shape,omitempty"`
	Numel   int64   `json:"numel"`
	// ChangedElems counts elements whose stored value differs (values
	// mode). Across dtypes (requant pairs included), elements whose decoded
	// values differ. In a sampled row, of the SampledElems compared.
	ChangedElems *int64 `json:"changed_elems,omitempty"`
	MaxAbsDiff   *Float `json:"max_abs_diff,omitempty"`
	RelL2        *Float `json:"rel_l2,omitempty"`
	Cosine       *Float `json:"cosine,omitempty"`
	// RequantMismatchElems and RequantMismatchBlocks are set when one side
	// is block FP8 and the other a wider float: how many FP8 codes and how
	// many blocks (a differing scale or any differing code) re-quantising
	// the wider side fails to reproduce. Both zero means requant_identical.
	// In a sampled row, of the sampled codes, and the distinct blocks with
	// such a code (or sampled whole with a scale not the recipe's).
	RequantMismatchElems  *int64 `json:"requant_mismatch_elems,omitempty"`
	RequantMismatchBlocks *int64 `json:"requant_mismatch_blocks,omitempty"`
	// RequantRecipe names the recipe the requant counts are of when one
	// side is an MXFP4 or NVFP4 weight, which have more than one recipe
	// (numfmt: "ocp-floor" or "triton-round-up"; "modelopt", or
	// "modelopt-stored-global" when the wider side's amax / 2688 is not
	// the stored weight_scale_2): the first that reproduces the codes and
	// scales, else the one with the fewest mismatching codes. Empty for
	// FP8, which has one.
	RequantRecipe string `json:"requant_recipe,omitempty"`
	// ZeroSignCodes counts FP8 codes that differ only in the sign of zero
	// (+0 on one side, -0 on the other). FP8 codes are compared by decoded
	// value, so these count as equal (as do two NaN codes), both for the
	// identical check of two FP8 tensors and for requant_identical.
	ZeroSignCodes int64 `json:"zero_sign_codes,omitempty"`
	// Sampled is set when only a sample of the tensor was compared
	// (CompareOptions.SampleBytes): the statistics are over SampledElems elements
	// and the relation is changed, no_change_seen, requant_identical_seen
	// or dtype_changed.
	Sampled      bool   `json:"sampled,omitempty"`
	SampledElems *int64 `json:"sampled_elems,omitempty"`
	// SampledRanges are the compared ranges [start, end) of flat element
	// indices (of bytes, for dtypes narrower than a byte), the same on
	// both sides.
	SampledRanges [][2]int64 `json:"sampled_ranges,omitempty"`
	// ChangedFraction is ChangedElems over the elements compared
	// (SampledElems, or Numel when read whole; set in sampled diffs), and
	// ChangedFractionCI95 its 95 %
	// interval for a sampled tensor: the range of changed fractions of the
	// whole tensor that the sample is consistent with, treating the sampled
	// ranges as clusters (ClusterInterval), so that a change confined to
	// rows the sample missed widens it instead of being ruled out.
	ChangedFraction     *Float    `json:"changed_fraction,omitempty"`
	ChangedFractionCI95 *[2]Float `json:"changed_fraction_ci95,omitempty"`
	// Group is the summary group: text_layers, mtp, visual or other.
	Group string `json:"group"`
	// NonFinite counts NaN and Inf values of each side (values mode, only
	// when either has some); Note says why statistics are NaN or Inf, or
	// that CompareOptions.Sample left the data out.
	NonFinite *NonFiniteCounts `json:"nonfinite,omitempty"`
	Note      string           `json:"note,omitempty"`
}

// Summary counts tensors by relation.
type Summary struct {
	Identical        int64 `json:"identical"`
	Changed          int64 `json:"changed"`
	RequantIdentical int64 `json:"requant_identical"`
	DTypeChanged     int64 `json:"dtype_changed"`
	ShapeChanged     int64 `json:"shape_changed"`
	OnlyInBase       int64 `json:"only_in_base"`
	OnlyInFT         int64 `json:"only_in_ft"`
	// SameHeader is non-zero in header mode, and with CompareOptions.Sample.
	SameHeader int64 `json:"same_header,omitempty"`
	// NoChangeSeen and RequantIdenticalSeen are non-zero in sampled diffs
	// (CompareOptions.SampleBytes) only.
	NoChangeSeen         int64 `json:"no_change_seen,omitempty"`
	RequantIdenticalSeen int64 `json:"requant_identical_seen,omitempty"`
}

// add counts one relation.
func (s *Summary) add(r Relation) {
	switch r {
	case Identical:
		s.Identical++
	case Changed:
		s.Changed++
	case RequantIdentical:
		s.RequantIdentical++
	case DTypeChanged:
		s.DTypeChanged++
	case ShapeChanged:
		s.ShapeChanged++
	case OnlyInBase:
		s.OnlyInBase++
	case OnlyInFT:
		s.OnlyInFT++
	case SameHeader:
		s.SameHeader++
	case NoChangeSeen:
		s.NoChangeSeen++
	case RequantIdenticalSeen:
		s.RequantIdenticalSeen++
	}
}

// Count returns the count of one relation.
func (s Summary) Count(r Relation) int64 {
	switch r {
	case Identical:
		return s.Identical
	case Changed:
		return s.Changed
	case RequantIdentical:
		return s.RequantIdentical
	case DTypeChanged:
		return s.DTypeChanged
	case ShapeChanged:
		return s.ShapeChanged
	case OnlyInBase:
		return s.OnlyInBase
	case OnlyInFT:
		return s.OnlyInFT
	case SameHeader:
		return s.SameHeader
	case NoChangeSeen:
		return s.NoChangeSeen
	case RequantIdenticalSeen:
		return s.RequantIdenticalSeen
	}
	return 0
}

// total is the number of tensors counted.
func (s Summary) total() int64 {
	var n int64
	for _, r := range Relations {
		n += s.Count(r)
	}
	return n
}

// differs reports whether any tensor differs: anything but identical,
// same_header (header mode, or data left out by CompareOptions.Sample) and
// no_change_seen (no difference found in a sample). Like
// requant_identical, requant_identical_seen is a difference (of dtype).
func (s Summary) differs() bool {
	return s.total()-s.Identical-s.SameHeader-s.NoChangeSeen > 0
}

// group returns the group of a tensor name (ckpt.GroupOf).
func group(name string) string {
	g, _, _ := ckpt.GroupOf(name)
	return g
}

// GroupSummary is the picture of one group (text_layers, mtp, visual,
// other).
type GroupSummary struct {
	Group string `json:"group"`
	Tally
}

// Keys is the key-set comparison.
type Keys struct {
	Base       int      `json:"base"`
	FT         int      `json:"ft"`
	Common     int      `json:"common"`
	OnlyInBase []string `json:"only_in_base"`
	OnlyInFT   []string `json:"only_in_ft"`
}

// Result is the whole comparison. Tensors are in natural name order.
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema         `json:"schema_version"`
	Base    string              `json:"base"`
	FT      string              `json:"ft"`
	Mode    Mode                `json:"mode"`
	Summary Summary             `json:"summary"`
	Config  []ckpt.ConfigChange `json:"config"`
	Tensors []Tensor            `json:"tensors"`
	// Extras beyond the contract's fields.
	Keys   Keys           `json:"keys"`
	Groups []GroupSummary `json:"groups"`
	// Sampled is set when CompareOptions.Sample left tensors out: only the data
	// of SampleTensors tensors (the drawn ones and their scale
	// companions) was compared; every other tensor still has its relation
	// from the headers (same_header when dtype and shape agree).
	Sampled       bool `json:"sampled,omitempty"`
	SampleTensors int  `json:"sample_tensors,omitempty"`
	// BytesRead is the tensor data read from both sides (0 in header mode).
	BytesRead int64 `json:"bytes_read"`
	// Sample describes a sampled diff (CompareOptions.SampleBytes): what was read
	// of each side.
	Sample *SampleInfo `json:"sample,omitempty"`
	// Layers is the per-layer picture (CompareOptions.ByLayer).
	Layers []LayerSummary `json:"layers,omitempty"`
	// Warnings are those of opening the sides (Run), not in the document.
	Warnings []string `json:"-"`
	// GeneratedBy names the tool, version and time that wrote the report
	// (set by the caller).
	GeneratedBy *ckpt.Generator `json:"generated_by,omitempty"`
}

// SampleInfo describes a sampled diff.
type SampleInfo struct {
	// BytesPerTensor is CompareOptions.SampleBytes: the most bytes sampled per
	// tensor and side (0 with a budget); BudgetBytes is
	// CompareOptions.SampleBudget, the bytes per side spread over the tensors.
	BytesPerTensor int64  `json:"bytes_per_tensor"`
	BudgetBytes    int64  `json:"budget_bytes,omitempty"`
	Seed           uint64 `json:"seed"`
	// SampledTensors were compared on a sample; WholeTensors were read
	// whole (no larger than BytesPerTensor, or a scale tensor) and
	// classified exactly.
	SampledTensors int `json:"sampled_tensors"`
	WholeTensors   int `json:"whole_tensors"`
	// Base and FT say what was read of each side.
	Base SideRead `json:"base"`
	FT   SideRead `json:"ft"`
}

// SideRead is what a sampled diff read of one checkpoint.
type SideRead struct {
	// BytesRead counts the bytes of tensor data read (headers not
	// included), Reads the coalesced reads (over HTTP, one Range request
	// each per 8 MiB, straight to the file's redirect target, retries
	// aside).
	BytesRead int64 `json:"bytes_read"`
	Reads     int64 `json:"reads"`
	// Requests counts the HTTP requests the side's store made during the
	// diff, retries included (absent for stores that make none).
	Requests int64 `json:"requests,omitempty"`
	// BytesTotal is the data size of the side's selected tensors: what a
	// full comparison would read at most.
	BytesTotal int64 `json:"bytes_total"`
}

// Differs reports whether the checkpoints differ in keys, config or any
// tensor (the exit status 1 of ckpt diff). Changes of bookkeeping config
// keys (ckpt.ConfigBookkeeping, which contracts do not record either) and
// changes after which transformers builds the same model
// (ckpt.CompareConfigNoted) are notes, not differences.
func (r *Result) Differs() bool {
	return r.Summary.differs() || r.ConfigDifferences() > 0
}

// ConfigDifferences counts the config changes that are differences: all
// but the notes (ckpt.ConfigChange.Bookkeeping, ckpt.ConfigChange.BuildsSame).
func (r *Result) ConfigDifferences() int {
	n := 0
	for _, c := range r.Config {
		if !c.Bookkeeping && !c.BuildsSame {
			n++
		}
	}
	return n
}

// Document is the diff JSON document (docs/cli.md): the result with its
// verdict, the differs flag of the JSON Lines summary record.
type Document struct {
	*Result
	Differs bool `json:"differs"`
}

// Document returns the result as its JSON document.
func (r *Result) Document() Document {
	return Document{Result: r, Differs: r.Differs()}
}

var _ json.Marshaler = Float(0)

package verify

import (
	"context"
	"fmt"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// Arch is the architecture profile verify holds a checkpoint to.
type Arch string

// The architecture profiles of Options.Arch and CheckOptions.Arch.
const (
	ArchAuto   Arch = "auto"    // chosen from model_type / architectures
	ArchQwen35 Arch = "qwen3_5" // Qwen3.5 and Qwen3.5-MoE (ckpt/arch)
	ArchNone   Arch = "none"    // no architecture checks
)

// known reports whether a is one of the profiles (or "", ArchAuto).
func (a Arch) known() bool {
	switch a {
	case "", ArchAuto, ArchQwen35, ArchNone:
		return true
	}
	return false
}

// defaultWorkers is the read parallelism by default (the read size is
// ckpt.StreamChunk's).
const defaultWorkers = 4

// CheckOptions tune Check.
type CheckOptions struct {
	// Arch selects the architecture profile: ArchAuto (default, also "":
	// chosen from model_type / architectures), ArchQwen35 or ArchNone.
	Arch Arch
	// ReadData also reads tensor data: scale values, FP8 NaN codes,
	// NaN/Inf in float tensors, per-tensor xxh3, and file SHA-256 against
	// a DigestStore.
	ReadData bool
	// Workers bounds concurrent reads (default 4).
	Workers int
	// ChunkSize is the read size per worker in bytes (default 256 KiB from a
	// local directory or Hugging Face cache, else 4 MiB);
	// peak memory for data checks is about Workers × ChunkSize.
	ChunkSize int
	// Progress, if set, counts bytes read by the data checks.
	Progress *ckpt.Progress
	// Words are the caller's words for the options the findings mention
	// (Options.Words).
	Words ckpt.Words
}

// Result is the result of Checkpoint and of the workflow Run (the verify
// JSON document): every finding, in check order.
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema ckpt.Schema    `json:"schema_version"`
	Source string         `json:"source"`
	OK     bool           `json:"ok"`
	Checks []ckpt.Finding `json:"findings"` // JSON "findings", as everywhere (schema 1; "checks" before)
	// Strict is set with Options.Strict: warnings fail the report too.
	Strict bool `json:"strict,omitempty"`
	// Against is the comparison with a contract, when Run was given one
	// (Options.Against).
	Against *contract.Comparison `json:"against,omitempty"`
	// Hashes maps tensor names to their xxh3-64 (16 hex digits) when
	// ReadData was set and the tensor could be read.
	Hashes map[string]string `json:"-"`
	// Profile is the architecture profile used ("" for none).
	Profile string `json:"-"`
	// Allowed are the --allow-finding values and the failing and warning
	// findings each accepted (Options.Allowances); absent when none was given.
	Allowed   []Allowance `json:"allowed,omitempty"`
	allowedBy []string
}

// Counts returns how many checks have each status.
func (r *Result) Counts() map[ckpt.Status]int {
	m := map[ckpt.Status]int{}
	for _, c := range r.Checks {
		m[c.Status]++
	}
	return m
}

// add appends findings (such as a contract.Comparison's) and keeps OK up to date.
func (r *Result) add(cs ...ckpt.Finding) {
	for _, c := range cs {
		if c.Tensors == nil {
			c.Tensors = []string{}
		}
		if c.Status == ckpt.Fail || (r.Strict && c.Status == ckpt.Warn) {
			r.OK = false
		}
		r.Checks = append(r.Checks, c)
	}
}

// setStrict makes warnings fail the report (verify --strict): OK is false
// when any finding, present or added later, is a warning or a failure.
func (r *Result) setStrict() {
	r.Strict = true
	for _, c := range r.Checks {
		if c.Status == ckpt.Warn {
			r.OK = false
		}
	}
}

// Failed returns the findings that fail or warn, in report order.
func (r *Result) Failed() []ckpt.Finding {
	out := []ckpt.Finding{}
	for _, c := range r.Checks {
		if c.Status == ckpt.Fail || c.Status == ckpt.Warn {
			out = append(out, c)
		}
	}
	return out
}

// addComparison adds the checks of a comparison with a contract and keeps
// the comparison for the report.
func (r *Result) addComparison(cmp *contract.Comparison) {
	r.add(cmp.Checks...)
	r.Against = cmp
}

// Check runs every check on an opened checkpoint and returns all findings.
// It returns an error only when the context is cancelled or the options are
// invalid; problems of the checkpoint are findings. Open the checkpoint with
// ckpt.Options{Lenient: true} so that integrity problems (missing shards,
// truncated files) become findings instead of open errors.
func Check(ctx context.Context, c *ckpt.Checkpoint, opt CheckOptions) (*Result, error) {
	r := &Result{Source: c.Source, OK: true}
	if !opt.Arch.known() {
		return nil, fmt.Errorf("unknown profile %s (want auto, qwen3_5 or none)", ckpt.Quote(string(opt.Arch)))
	}
	in := newInventory(c)
	in.words = opt.Words
	r.add(integrityChecks(c)...)
	r.add(headerChecks(c)...)
	r.add(quantChecks(ctx, c, in, opt)...)
	arch, profile := archChecks(c, in, opt.Arch)
	r.Profile = profile
	r.add(arch...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, hashes, digests, err := dataChecks(ctx, c, opt)
	if err != nil {
		return nil, err
	}
	r.Hashes = hashes
	r.add(data...)
	cache, err := cacheChecks(ctx, c, opt, digests)
	if err != nil {
		return nil, err
	}
	r.add(cache...)
	return r, nil
}

// inventory indexes the checkpoint's tensors for the checks.
type inventory struct {
	c      *ckpt.Checkpoint
	byName map[string]*ckpt.Tensor
	quant  *quant.Config
	// notConvert is the modules_to_not_convert transformers applies
	// (notConvertOf); nil without a quantization_config.
	notConvert *quant.NotConvertList
	// words are the caller's (CheckOptions.Words).
	words ckpt.Words
}

func newInventory(c *ckpt.Checkpoint) *inventory {
	in := &inventory{c: c, byName: make(map[string]*ckpt.Tensor, len(c.Tensors))}
	for _, t := range c.Tensors {
		in.byName[t.Name] = t
	}
	in.quant = c.Config.Quantization()
	in.notConvert = notConvertOf(in.quant)
	return in
}

package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/contract"
	"github.com/ckpt-dev/ckpt/ckpt/quant"
)

// Status is the outcome of one check (ckpt.Status).
type Status = ckpt.Status

// The statuses of a check. Only Fail makes a report not OK.
const (
	Pass = ckpt.Pass
	Fail = ckpt.Fail
	Warn = ckpt.Warn
	Skip = ckpt.Skip
)

// Check is one finding of verify: the project's one finding type,
// ckpt.Finding, with a check id (stable, see the package doc), its status,
// a message that names the tensor, file or config key and says what was
// expected and what was found, and the tensors concerned.
type Check = ckpt.Finding

// Profiles for Options.Profile.
const (
	ProfileAuto    = "auto"
	ProfileQwen35  = "qwen3_5"
	ProfileNone    = "none"
	defaultChunk   = 4 << 20
	localChunk     = 256 << 10 // default read size from a local directory
	defaultWorkers = 4
)

// Options tune Run.
type Options struct {
	// Profile selects the architecture profile: "auto" (default: chosen
	// from model_type / architectures), "qwen3_5" or "none".
	Profile string
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
}

// Report is the result of Run: every finding, in check order.
type Report struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema ckpt.Schema `json:"schema_version"`
	Source string      `json:"source"`
	OK     bool        `json:"ok"`
	Checks []Check     `json:"findings"` // JSON "findings", as everywhere (schema 1; "checks" before)
	// Strict is set by SetStrict: warnings fail the report too.
	Strict bool `json:"strict,omitempty"`
	// Against is the comparison with a contract, when AddComparison was
	// called (verify --against).
	Against *contract.Comparison `json:"against,omitempty"`
	// Hashes maps tensor names to their xxh3-64 (16 hex digits) when
	// ReadData was set and the tensor could be read.
	Hashes map[string]string `json:"-"`
	// Profile is the architecture profile used ("" for none).
	Profile string `json:"-"`
	// Allowed are the --allow-finding values and the failing and warning
	// findings each accepted (Allow); absent when none was given.
	Allowed   []Allowance `json:"allowed,omitempty"`
	allowedBy []string
}

// Counts returns how many checks have each status.
func (r *Report) Counts() map[Status]int {
	m := map[Status]int{}
	for _, c := range r.Checks {
		m[c.Status]++
	}
	return m
}

// Add appends findings (such as a contract.Comparison's) and keeps OK up to date.
func (r *Report) Add(cs ...Check) {
	for _, c := range cs {
		if c.Tensors == nil {
			c.Tensors = []string{}
		}
		if c.Status == Fail || (r.Strict && c.Status == Warn) {
			r.OK = false
		}
		r.Checks = append(r.Checks, c)
	}
}

// SetStrict makes warnings fail the report (verify --strict): OK is false
// when any finding, present or added later, is a warning or a failure.
func (r *Report) SetStrict() {
	r.Strict = true
	for _, c := range r.Checks {
		if c.Status == Warn {
			r.OK = false
		}
	}
}

// Failed returns the findings that fail or warn, in report order.
func (r *Report) Failed() []Check {
	out := []Check{}
	for _, c := range r.Checks {
		if c.Status == Fail || c.Status == Warn {
			out = append(out, c)
		}
	}
	return out
}

// AddComparison adds the checks of a comparison with a contract and keeps
// the comparison for the report.
func (r *Report) AddComparison(cmp *contract.Comparison) {
	r.Add(cmp.Checks...)
	r.Against = cmp
}

// Run runs every check on an opened checkpoint and returns all findings.
// It returns an error only when the context is cancelled or the options are
// invalid; problems of the checkpoint are findings. Open the checkpoint with
// ckpt.Options{Lenient: true} so that integrity problems (missing shards,
// truncated files) become findings instead of open errors.
func Run(ctx context.Context, c *ckpt.Checkpoint, opt Options) (*Report, error) {
	r := &Report{Source: c.Source, OK: true}
	switch opt.Profile {
	case "", ProfileAuto, ProfileQwen35, ProfileNone:
	default:
		return nil, fmt.Errorf("unknown profile %s (want auto, qwen3_5 or none)", ckpt.Quote(opt.Profile))
	}
	in := newInventory(c)
	r.Add(integrityChecks(c)...)
	r.Add(headerChecks(c)...)
	r.Add(quantChecks(ctx, c, in, opt)...)
	arch, profile := archChecks(c, in, opt.Profile)
	r.Profile = profile
	r.Add(arch...)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, hashes, digests, err := dataChecks(ctx, c, opt)
	if err != nil {
		return nil, err
	}
	r.Hashes = hashes
	r.Add(data...)
	cache, err := cacheChecks(ctx, c, opt, digests)
	if err != nil {
		return nil, err
	}
	r.Add(cache...)
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

// names lists up to max quoted names, with "and N more".
func names(ns []string, max int) string {
	var b strings.Builder
	for i, n := range ns {
		if i == max {
			fmt.Fprintf(&b, " and %d more", len(ns)-max)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(ckpt.EscapeName(n))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// Options tune Run.
type Options struct {
	VerifyOptions
	// Source is the checkpoint the cache must have been built from.
	Source string
	// Openers resolve non-local sources (see ckpt.SourceOpener).
	Openers []ckpt.SourceOpener
	// Rules is the profile JSON file the cache was built with; "" for the
	// built-in profile the manifest names.
	Rules string
	// Select picks the cache folder when dir is a root holding several.
	Select cache.Selector
	// Set overrides profile variables (NAME=VALUE) over the settings the
	// manifest records.
	Set []string
	// MinMem, when positive, also fails the check when MemAvailable (read
	// from MemInfo, default /proc/meminfo) is below it.
	MinMem  int64
	MemInfo string
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Result is the cache verify JSON document (docs/cli.md): every
// finding of Run, OK when there is none.
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema       ckpt.Schema `json:"schema_version"`
	Dir          string      `json:"dir"`
	Source       string      `json:"source"`
	OK           bool        `json:"ok"`
	Profile      string      `json:"profile,omitempty"`
	Mesh         string      `json:"mesh,omitempty"`
	Files        int         `json:"files"`
	Bytes        int64       `json:"bytes"`
	MemAvailable int64       `json:"mem_available,omitempty"`
	// Rehash: every source tensor was read and hashed (VerifyOptions.Rehash);
	// otherwise sources whose cheap identity (file size, mtime, offset) is
	// unchanged were trusted without reading them, and Rehashed counts the
	// others, which were read.
	Rehash   bool           `json:"rehash"`
	Rehashed int            `json:"rehashed"`
	Findings []ckpt.Finding `json:"findings"`
}

// Trusted says how the sources were checked, for the verdict line.
func (r *Result) Trusted() string {
	if r.Rehash {
		return fmt.Sprintf("every source tensor read and hashed (%d)", r.Rehashed)
	}
	s := "sources trusted by file size and mtime, not read"
	if r.Rehashed > 0 {
		s = fmt.Sprintf("sources trusted by file size and mtime, not read (%d whose size or mtime changed were hashed)", r.Rehashed)
	}
	return s + "; --rehash reads them"
}

// Run is the fail-closed preflight of `ckpt cache verify`: it checks
// the available memory (with MinMem), reads the manifest of the cache root
// dir, makes the plan of the source with the manifest's profile, mesh,
// device and tag (mapping.Resolve), and runs Verify. Everything wrong with
// the cache or the machine is a finding (ids Finding*); a source that no
// longer maps gives one stale finding per plan problem. Run returns an
// error only when the source cannot be read, the profile cannot be
// loaded, or ctx is cancelled.
func Run(ctx context.Context, dir string, opt Options) (*Result, error) {
	res := &Result{Dir: dir, Source: opt.Source, Findings: []ckpt.Finding{}}
	done := func() (*Result, error) {
		res.OK = len(res.Findings) == 0
		return res, nil
	}
	if opt.MinMem > 0 {
		mi := opt.MemInfo
		if mi == "" {
			mi = "/proc/meminfo"
		}
		avail, err := MemAvailable(mi)
		if err != nil {
			res.Findings = append(res.Findings, fail(FindingMemory, "", err.Error()))
		} else {
			res.MemAvailable = avail
			if avail < opt.MinMem {
				res.Findings = append(res.Findings, fail(FindingMemory, "", fmt.Sprintf("MemAvailable is %s, below --min-mem %s", ckpt.FormatBytes(avail), ckpt.FormatBytes(opt.MinMem))))
			}
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		res.Findings = append(res.Findings, fail(FindingManifest, "", fmt.Sprintf("%s is not a cache directory", dir)))
		return done()
	}
	folder, err := cache.ResolveFolder(dir, opt.Select)
	if err != nil {
		var amb *cache.AmbiguousCacheError
		if errors.As(err, &amb) {
			return nil, err
		}
		res.Findings = append(res.Findings, fail(FindingManifest, "", err.Error()))
		return done()
	}
	m, err := cache.ReadManifest(folder.Path())
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s has no %s: the cache is incomplete (no build finished there)", folder.Path(), cache.ManifestName)
			var ue *cache.UnfinishedError
			if errors.As(cache.CheckFinished(folder.Path()), &ue) {
				msg = ue.Error()
			}
		}
		res.Findings = append(res.Findings, fail(FindingManifest, cache.ManifestName, msg))
		return done()
	}
	res.Profile, res.Mesh = m.Profile, m.Mesh
	if opt.Rules == "" {
		if _, err := mapping.Builtin(m.Profile); err != nil {
			return nil, fmt.Errorf("the manifest names profile %q, which is not built in: pass the profile with --rules", m.Profile)
		}
	}
	po := mapping.PlanOptions{Profile: m.Profile, Rules: opt.Rules, Mesh: m.Mesh, Device: m.Device, Tag: m.Tag, Set: opt.Set, Base: m.Settings, Variant: opt.Variant}
	c, plan, err := mapping.Resolve(ctx, opt.Source, po, opt.Openers...)
	var pe *mapping.PlanError
	if errors.As(err, &pe) {
		c.Close()
		for _, p := range pe.Problems {
			res.Findings = append(res.Findings, fail(FindingStale, "",
				fmt.Sprintf("the source no longer maps with the cache's profile %s on mesh %s: problem (%s): %s", m.Profile, m.Mesh, p.ID, p.Message), p.Tensors...))
		}
		return done()
	}
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for _, f := range m.Files {
		opt.Progress.AddTotal(f.Size)
	}
	rep, err := Verify(ctx, folder.Root, m, c, plan, opt.VerifyOptions)
	if err != nil {
		return nil, err
	}
	res.Files, res.Bytes = rep.Files, rep.Bytes
	res.Rehash, res.Rehashed = opt.Rehash, rep.Rehashed
	res.Findings = append(res.Findings, rep.Findings...)
	return done()
}

// Request is what `ckpt cache verify` asks for: the check of the cache
// folders of Dir (a cache folder, or a cache root: the folders Select
// matches, all by default) against the checkpoint Source.
type Request struct {
	Dir, Source string
	// Openers resolve non-local sources (see ckpt.SourceOpener).
	Openers []ckpt.SourceOpener
	// Rules, Set, Select and MemInfo are as in Options.
	Rules   string
	Set     []string
	Select  cache.Selector
	MemInfo string
	// MinMem is the --min-mem size ("" for no memory check).
	MinMem string
	VerifyOptions
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
}

// Validate refuses a request that is itself wrong before any work: the
// errors are *ckpt.UsageError with the CLI's messages.
func (r Request) Validate() error {
	_, err := r.options()
	return err
}

// options are the request as Options of Run.
func (r Request) options() (Options, error) {
	if r.Source == "" {
		return Options{}, &ckpt.UsageError{Reason: "cache verify needs --source SRC (the checkpoint the cache is for)"}
	}
	var minMem int64
	if r.MinMem != "" {
		var err error
		if minMem, err = ckpt.ParseSize(r.MinMem); err != nil {
			return Options{}, &ckpt.UsageError{Option: "--min-mem", Reason: err.Error()}
		}
	}
	return Options{VerifyOptions: r.VerifyOptions, Source: r.Source, Openers: r.Openers, Rules: r.Rules, Select: r.Select, Set: r.Set,
		MinMem: minMem, MemInfo: r.MemInfo, Variant: r.Variant}, nil
}

// AllResult is the outcome of RunAll: one cache verify document per cache
// folder checked. With several folders the JSON document is AllResult
// itself; with one it is that folder's Result (Single).
type AllResult struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema `json:"schema_version"`
	Dir     string      `json:"dir"`
	Source  string      `json:"source"`
	OK      bool        `json:"ok"`
	Folders []*Result   `json:"folders"`
}

// Single is the result of the one folder checked, nil when there were
// several.
func (r *AllResult) Single() *Result {
	if len(r.Folders) != 1 {
		return nil
	}
	return r.Folders[0]
}

// Failed counts the folders that failed their check.
func (r *AllResult) Failed() int {
	n := 0
	for _, f := range r.Folders {
		if !f.OK {
			n++
		}
	}
	return n
}

// Summary is the closing JSON Lines record of a cache verify of one
// cache folder: the document's verdict and counts.
type Summary struct {
	Dir      string `json:"dir"`
	Source   string `json:"source"`
	OK       bool   `json:"ok"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	Findings int    `json:"findings"`
}

// SummaryRecord is the result's closing JSON Lines record.
func (r *Result) SummaryRecord() Summary {
	return Summary{r.Dir, r.Source, r.OK, r.Files, r.Bytes, len(r.Findings)}
}

// AllSummary is the closing JSON Lines record of a cache verify of
// several cache folders: the verdict, the folders and how many failed, the
// files, bytes and findings of all of them.
type AllSummary struct {
	Dir      string `json:"dir"`
	Source   string `json:"source"`
	OK       bool   `json:"ok"`
	Folders  int    `json:"folders"`
	Failed   int    `json:"failed"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	Findings int    `json:"findings"`
}

// SummaryRecord is the closing JSON Lines record of several folders'
// checks.
func (r *AllResult) SummaryRecord() AllSummary {
	s := AllSummary{Dir: r.Dir, Source: r.Source, OK: r.OK, Folders: len(r.Folders), Failed: r.Failed()}
	for _, f := range r.Folders {
		s.Files, s.Bytes, s.Findings = s.Files+f.Files, s.Bytes+f.Bytes, s.Findings+len(f.Findings)
	}
	return s
}

// FolderFinding is a finding row of a multi-folder cache verify (JSON
// Lines): the finding's keys after "dir", the folder's path.
type FolderFinding struct {
	Dir     string
	Finding ckpt.Finding
}

// MarshalJSON writes {"dir": ..., then the finding's keys}.
func (f FolderFinding) MarshalJSON() ([]byte, error) {
	dir, err := json.Marshal(f.Dir)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(f.Finding)
	if err != nil {
		return nil, err
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("finding %s is not a JSON object", f.Finding.ID)
	}
	out := append([]byte(`{"dir":`), dir...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...), nil
}

// Rows are the findings of every folder with their folder's dir, in
// order (the JSON Lines rows of several folders' checks).
func (r *AllResult) Rows() []FolderFinding {
	var rows []FolderFinding
	for _, f := range r.Folders {
		for _, fi := range f.Findings {
			rows = append(rows, FolderFinding{f.Dir, fi})
		}
	}
	return rows
}

// RunAll is the workflow of `ckpt cache verify`: it validates the request
// (Validate) and runs Run on every cache folder of req.Dir that
// req.Select matches: Dir itself when it is a cache folder, else each
// matching folder of the cache root Dir (all of them when Select is
// empty), one result each, in the order of cache.Folders. A root with no
// matching folder gives one result with the finding Run gives.
func RunAll(ctx context.Context, req Request) (*AllResult, error) {
	opt, err := req.options()
	if err != nil {
		return nil, err
	}
	dir := req.Dir
	all, err := runAll(ctx, dir, opt)
	if err != nil {
		return nil, err
	}
	res := &AllResult{Dir: dir, Source: req.Source, OK: true, Folders: all}
	for _, f := range all {
		res.OK = res.OK && f.OK
	}
	return res, nil
}

// runAll is Run of every cache folder of dir that opt.Select matches.
func runAll(ctx context.Context, dir string, opt Options) ([]*Result, error) {
	var paths []string
	if cache.IsFolderName(filepath.Base(filepath.Clean(dir))) {
		paths = []string{dir}
	} else if all, err := cache.Folders(dir); err == nil {
		for _, f := range all {
			if opt.Select.Match(f) {
				paths = append(paths, f.Path())
			}
		}
	}
	if len(paths) <= 1 {
		r, err := Run(ctx, dir, opt)
		if err != nil {
			return nil, err
		}
		return []*Result{r}, nil
	}
	var out []*Result
	for _, p := range paths {
		o := opt
		o.Select = cache.Selector{}
		r, err := Run(ctx, p, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

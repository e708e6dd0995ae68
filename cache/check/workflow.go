package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// BuildSummary is the cache build JSON document (docs/cli.md).
type BuildSummary struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema            ckpt.Schema `json:"schema_version"`
	Out               string      `json:"out"`
	Manifest          string      `json:"manifest"`
	Profile           string      `json:"profile"`
	Mesh              string      `json:"mesh"`
	CacheDir          string      `json:"cache_dir"`
	Files             int         `json:"files"`
	Built             []string    `json:"built"`
	Skipped           int         `json:"skipped"`
	Removed           []string    `json:"removed"`
	SourceTensors     int         `json:"source_tensors"`
	SourceElements    int64       `json:"source_elements"`
	SourceBytes       int64       `json:"source_bytes"`
	Rehashed          int         `json:"rehashed"`
	Seconds           float64     `json:"seconds"`
	ElementsPerSecond float64     `json:"elements_per_second"`
	// Warnings are the plan's per-target warnings grouped by rule
	// (mapping.Plan.GroupedWarnings), then the build's notes (Notes).
	Warnings []string `json:"warnings"`
	// Unknown are files in the cache folder no ckpt build recorded (left
	// alone); NonFinite the source tensors built with NaN/Inf kept.
	Unknown   []string         `json:"unknown"`
	NonFinite []ckpt.NonFinite `json:"nonfinite"`
	// PerDevice and Memory are the DRAM each device holds under the plan
	// and whether it fits (mapping.Plan.Memory; set by the caller, which
	// knows the device DRAM).
	PerDevice []mapping.DeviceBytes `json:"per_device,omitempty"`
	Memory    *mapping.Memory       `json:"memory,omitempty"`
}

// Summary is the build result of plan written to the cache root out, as
// the cache build JSON document; seconds is the wall time of the command.
func (r *BuildResult) Summary(out string, plan *mapping.Plan, seconds float64) BuildSummary {
	s := BuildSummary{Out: out, Manifest: filepath.Join(FolderOf(out, plan.CacheDir).Path(), ManifestName), Profile: plan.Profile.Name, Mesh: plan.Mesh.String(),
		CacheDir: plan.CacheDir, Files: len(r.Manifest.Files), Built: r.Built, Skipped: len(r.Skipped), Removed: r.Removed,
		SourceTensors: r.SourceTensors, SourceElements: r.SourceElements, SourceBytes: r.SourceBytes, Rehashed: r.Rehashed,
		Seconds: seconds, Warnings: append(plan.GroupedWarnings(), r.Notes()...),
		Unknown: append([]string{}, r.Unknown...), NonFinite: append([]ckpt.NonFinite{}, r.NonFinite...)}
	if seconds > 0 {
		s.ElementsPerSecond = float64(r.SourceElements) / seconds
	}
	if s.Built == nil {
		s.Built = []string{}
	}
	if s.Removed == nil {
		s.Removed = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	return s
}

// Notes are the notes of a build: a stale lock taken over, an earlier
// build of another source replaced, tensors built with NaN/Inf kept,
// unknown files left alone.
func (r *BuildResult) Notes() []string {
	var out []string
	if l := r.StaleLock; l != nil {
		out = append(out, fmt.Sprintf("took over the lock of a build that no longer runs (%s)", l))
	}
	if r.Replaced != "" {
		out = append(out, fmt.Sprintf("the cache folder held a build of %s; it now holds this source's", ckpt.EscapeName(r.Replaced)))
	}
	if s := ckpt.NonFiniteNote(r.NonFinite); s != "" {
		out = append(out, s+"; recorded in the manifest")
	}
	if n := len(r.Unknown); n > 0 {
		out = append(out, fmt.Sprintf("%d file(s) in the cache folder are not from a ckpt build and were left alone (first: %s)", n, ckpt.EscapeName(r.Unknown[0])))
	}
	return out
}

// CheckOptions tune Check.
type CheckOptions struct {
	VerifyOptions
	// Source is the checkpoint the cache must have been built from.
	Source string
	// Openers resolve non-local sources (see ckpt.SourceOpener).
	Openers []ckpt.SourceOpener
	// Rules is the profile JSON file the cache was built with; "" for the
	// built-in profile the manifest names.
	Rules string
	// Select picks the cache folder when dir is a root holding several.
	Select Selector
	// Set overrides profile variables (NAME=VALUE) over the settings the
	// manifest records.
	Set []string
	// MinMem, when positive, also fails the check when MemAvailable (read
	// from MemInfo, default /proc/meminfo) is below it.
	MinMem  int64
	MemInfo string
}

// CheckResult is the cache verify JSON document (docs/cli.md): every
// finding of Check, OK when there is none.
type CheckResult struct {
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
func (r *CheckResult) Trusted() string {
	if r.Rehash {
		return fmt.Sprintf("every source tensor read and hashed (%d)", r.Rehashed)
	}
	s := "sources trusted by file size and mtime, not read"
	if r.Rehashed > 0 {
		s = fmt.Sprintf("sources trusted by file size and mtime, not read (%d whose size or mtime changed were hashed)", r.Rehashed)
	}
	return s + "; --rehash reads them"
}

// Check is the fail-closed preflight of `ckpt cache verify`: it checks
// the available memory (with MinMem), reads the manifest of the cache root
// dir, makes the plan of the source with the manifest's profile, mesh,
// device and tag (mapping.Resolve), and runs Verify. Everything wrong with
// the cache or the machine is a finding (ids Finding*); a source that no
// longer maps gives one stale finding per plan problem. Check returns an
// error only when the source cannot be read, the profile cannot be
// loaded, or ctx is cancelled.
func Check(ctx context.Context, dir string, opt CheckOptions) (*CheckResult, error) {
	res := &CheckResult{Dir: dir, Source: opt.Source, Findings: []ckpt.Finding{}}
	done := func() (*CheckResult, error) {
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
	folder, err := ResolveFolder(dir, opt.Select)
	if err != nil {
		var amb *AmbiguousCacheError
		if errors.As(err, &amb) {
			return nil, err
		}
		res.Findings = append(res.Findings, fail(FindingManifest, "", err.Error()))
		return done()
	}
	m, err := ReadManifest(folder.Path())
	if err != nil {
		msg := err.Error()
		if errors.Is(err, fs.ErrNotExist) {
			msg = fmt.Sprintf("%s has no %s: the cache is incomplete (no build finished there)", folder.Path(), ManifestName)
			var ue *UnfinishedError
			if errors.As(CheckFinished(folder.Path()), &ue) {
				msg = ue.Error()
			}
		}
		res.Findings = append(res.Findings, fail(FindingManifest, ManifestName, msg))
		return done()
	}
	res.Profile, res.Mesh = m.Profile, m.Mesh
	if opt.Rules == "" {
		if _, err := mapping.Builtin(m.Profile); err != nil {
			return nil, fmt.Errorf("the manifest names profile %q, which is not built in: pass the profile with --rules", m.Profile)
		}
	}
	po := mapping.PlanOptions{Profile: m.Profile, Rules: opt.Rules, Mesh: m.Mesh, Device: m.Device, Tag: m.Tag, Set: opt.Set, Base: m.Settings}
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

// CheckAll is Check of every cache folder of dir that opt.Select matches:
// dir itself when it is a cache folder, else each matching folder of the
// cache root dir (all of them when Select is empty), one result each, in
// the order of Folders. A root with no matching folder gives one result
// with the finding Check gives.
func CheckAll(ctx context.Context, dir string, opt CheckOptions) ([]*CheckResult, error) {
	var paths []string
	if folderRE.MatchString(filepath.Base(filepath.Clean(dir))) {
		paths = []string{dir}
	} else if all, err := Folders(dir); err == nil {
		for _, f := range all {
			if opt.Select.match(f) {
				paths = append(paths, f.Path())
			}
		}
	}
	if len(paths) <= 1 {
		r, err := Check(ctx, dir, opt)
		if err != nil {
			return nil, err
		}
		return []*CheckResult{r}, nil
	}
	var out []*CheckResult
	for _, p := range paths {
		o := opt
		o.Select = Selector{}
		r, err := Check(ctx, p, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, r)
	}
	return out, nil
}

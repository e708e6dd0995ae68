package check

import (
	"context"
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

// RunAll is Run of every cache folder of dir that opt.Select matches:
// dir itself when it is a cache folder, else each matching folder of the
// cache root dir (all of them when Select is empty), one result each, in
// the order of cache.Folders. A root with no matching folder gives one result
// with the finding Run gives.
func RunAll(ctx context.Context, dir string, opt Options) ([]*Result, error) {
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

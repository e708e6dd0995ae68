package identify

import (
	"context"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/ckpt"
)

// Options is what `ckpt cache identify` asks for: the cache (Dir,
// Select among the folders of a root), the candidates (Profiles or Rules,
// as DirOptions) and the source. With Source the candidates are plans
// of it and the closest one's data is compared too (not with
// HeadersOnly; Workers, NaN and Progress go to that comparison). Without
// it, the source a ckpt manifest in the folder names is planned (names
// and headers only); a cache with no such manifest, as the serving stack
// writes it, is identified from its file names and headers alone
// (DirNames).
type Options struct {
	Dir         string
	Source      string
	Openers     []ckpt.SourceOpener
	Profiles    []string
	Rules       string
	Select      cache.Selector
	HeadersOnly bool
	// NaN is the NaN style of the data comparison ("" for
	// build.NaNVector, cache build's default).
	NaN      build.NaN
	Workers  int
	Progress *ckpt.Progress
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Words are the caller's words for the options of cache build that
	// Result.BuildFlags gives: "Ignore" (mapping.PlanOptions.Ignore of build.Options.Plan),
	// "AllowNonFinite" and "NaN" (of build.WriteOptions); the data
	// comparison's differences name "NaN" too (DirOptions.Words).
	Words ckpt.Words
}

// SummaryRecord is the closing JSON Lines record of cache identify.
type SummaryRecord struct {
	Dir        string   `json:"dir"`
	Source     string   `json:"source"`
	Exact      bool     `json:"exact"`
	Profile    string   `json:"profile,omitempty"`
	Overrides  []string `json:"overrides"`
	Candidates int      `json:"candidates"`
	// Vision, VisionMissing, VisionEmpty, VisionOther and VisionOwner are as in
	// Result.
	Vision        *SummaryRecord `json:"vision,omitempty"`
	VisionMissing string         `json:"vision_missing,omitempty"`
	VisionEmpty   string         `json:"vision_empty,omitempty"`
	VisionOther   string         `json:"vision_other,omitempty"`
	VisionOwner   string         `json:"vision_owner,omitempty"`
}

// SummaryRecord is the result's closing JSON Lines record; Exact covers the
// vision folder too (Vision, its own record, when it was identified).
func (r *Result) SummaryRecord() SummaryRecord {
	s := SummaryRecord{Dir: r.Dir, Source: r.Source, Exact: r.Exact, Overrides: []string{}, Candidates: len(r.Candidates),
		VisionMissing: r.VisionMissing, VisionEmpty: r.VisionEmpty, VisionOther: r.VisionOther, VisionOwner: r.VisionOwner}
	if r.Best != nil {
		s.Profile, s.Overrides = r.Best.Profile, r.Best.Overrides
	}
	if r.Vision != nil {
		v := r.Vision.SummaryRecord()
		s.Vision = &v
	}
	return s
}

// Run is the workflow of `ckpt cache identify`: it validates the
// request (errors there are *ckpt.UsageError, before any work), finds the
// source (Source, else the ckpt manifest's, else none), opens it and runs
// Dir, or DirNames without a source. The result carries the
// source's warnings (also when Run fails after opening it) and
// the cache build flags names and headers cannot show (BuildFlags).
//
// Dir a cache root or device folder asks about a whole model: when the
// folder it resolves to has a vision folder (cache.FindCompanion: the one its
// manifest names, or a stack's beside a folder without a manifest), that
// folder is identified too (Vision; its source is its own manifest's when
// Source is empty), and Exact covers both; a vision folder the manifest
// names that is not there is VisionMissing, one with no .tensorbin file
// VisionEmpty, and the result is not exact;
// so is one of another model (VisionOther).
// Dir a cache folder is that folder only.
//
// Rules and Profiles together, or a NaN that is no NaN style, are a
// *ckpt.OptionError.
func Run(ctx context.Context, req Options) (*Result, error) {
	if req.Rules != "" && len(req.Profiles) > 0 {
		return nil, &ckpt.OptionError{Field: "Rules", Reason: "and Profiles are exclusive"}
	}
	if req.NaN != "" {
		if _, err := req.NaN.Bits(); err != nil {
			return nil, &ckpt.OptionError{Field: "NaN", Reason: err.Error()}
		}
	}
	res, err := run(ctx, req, "")
	if err != nil || cache.IsFolderName(filepath.Base(filepath.Clean(req.Dir))) {
		return res, err
	}
	f, err := cache.ResolveFolder(req.Dir, req.Select)
	if err != nil {
		return res, err
	}
	comp, _, exists, ok := cache.FindCompanion(f)
	switch {
	case !ok:
		return res, nil
	case !exists:
		res.VisionMissing, res.Exact = comp.Path(), false
		return res, nil
	}
	// A vision folder with no file left is a model missing a part (a
	// difference, as cache verify says), not a folder that cannot be read.
	if files, err := cache.TensorbinFiles(comp.Path()); err == nil && len(files) == 0 {
		res.VisionEmpty, res.Exact = comp.Path(), false
		return res, nil
	}
	vreq := req
	vreq.Dir, vreq.Select = comp.Path(), cache.Selector{}
	prefer := ""
	if res.Best != nil {
		prefer = res.Best.Profile // of the vision parts that tie, the text folder's profile's
	}
	vres, err := run(ctx, vreq, prefer)
	if vres != nil {
		for _, w := range vres.Warnings {
			if !slices.Contains(res.Warnings, w) {
				res.Warnings = append(res.Warnings, w)
			}
		}
	}
	if err != nil {
		return res, err
	}
	vres.Warnings = nil
	res.Vision = vres
	res.Exact = res.Exact && vres.Exact
	// A vision folder of another model (a build of another mesh, device,
	// source or variant into the same device folder, or the stack's for
	// another mesh) is not this model's, however well it reproduces.
	if owner, ok := cache.PartOf(f, comp); ok {
		res.VisionOwner = owner
		res.VisionOther = "its manifest says it holds the vision part of " + owner + ", not of this folder"
	} else if vres.Mesh != res.Mesh {
		res.VisionOther = "it is for mesh " + vres.Mesh + ", not this folder's " + res.Mesh
	}
	if res.VisionOther != "" {
		res.Exact = false
	}
	return res, nil
}

// run is Run of the one cache folder req.Dir resolves to;
// prefer is the profile that wins a tie (DirOptions.prefer).
func run(ctx context.Context, req Options, prefer string) (*Result, error) {
	nan := req.NaN
	if nan == "" {
		nan = build.NaNVector
	}
	opt := DirOptions{Profiles: req.Profiles, Rules: req.Rules, Select: req.Select,
		Data: req.Source != "" && !req.HeadersOnly, Workers: req.Workers, NaN: nan, Progress: req.Progress, prefer: prefer,
		Words: req.Words}
	src := req.Source
	f, err := cache.ResolveFolder(req.Dir, req.Select)
	if err != nil {
		return nil, err
	}
	if m, err := cache.ReadManifest(f.Path()); err == nil {
		if src == "" {
			src = m.Source
		}
		// The candidates leave out what the build left out.
		opt.Ignore = cache.IgnoreGlobs(m.Ignore)
	}
	if src == "" {
		res, err := DirNames(ctx, req.Dir, opt)
		if err != nil {
			return nil, err
		}
		res.BuildFlags = buildFlagsOf(res, string(nan), req.Words)
		return res, nil
	}
	c, err := ckpt.Open(ctx, src, ckpt.Options{Variant: req.Variant, Words: req.Words}, req.Openers...)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var warnings []string
	for _, is := range c.Issues {
		if is.Status == ckpt.Warn {
			warnings = append(warnings, is.Message)
		}
	}
	res, err := Dir(ctx, req.Dir, c, opt)
	if err != nil {
		return &Result{Warnings: warnings}, err
	}
	res.Warnings = warnings
	res.BuildFlags = buildFlagsOf(res, string(nan), req.Words)
	return res, nil
}

// buildFlagsOf gives the cache build flags that names and headers cannot
// show: those the folder's ckpt manifest records (a build that accepted
// NaN/Inf, and its NaN style), else, when the data comparison met NaN/Inf
// in the source, AllowNonFinite with the NaN style it was made with; w
// names cache build's options (Options.Words).
func buildFlagsOf(r *Result, nan string, w ckpt.Words) string {
	s := ""
	m, err := cache.ReadManifest(r.Dir)
	if err == nil {
		for _, g := range cache.IgnoreGlobs(m.Ignore) {
			s += " " + w.Of("Ignore") + " " + shellQuote(g)
		}
	}
	switch {
	case err == nil && m.AllowNonFinite:
		s += " " + w.Of("AllowNonFinite")
		if m.NaN != "" {
			s += " " + w.Of("NaN") + " " + m.NaN
		}
	case len(r.NonFinite) > 0:
		s += " " + w.Of("AllowNonFinite") + " " + w.Of("NaN") + " " + nan
	}
	return s
}

// shellQuote quotes a glob for a shell line: in single quotes, a quote inside closed, escaped and reopened.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

package identify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// DirOptions say which candidates Dir tries: the built-in
// profiles (all of them when Profiles is empty) or one profile file
// (Rules), each with every setting of its variables that can be
// overridden.
type DirOptions struct {
	Profiles []string
	Rules    string
	// Select picks the cache folder when dir is a root holding several.
	Select cache.Selector
	// Data also compares the data of the closest candidate: its files are
	// built (without fsync) into Scratch ("" for the system's temporary
	// directory) in batches of at most ScratchBytes (default 2 GiB), each
	// compared with the cache's file shard by shard, as cache compare
	// does, then removed. Workers and NaN go to those builds.
	Data         bool
	Scratch      string
	ScratchBytes int64
	Workers      int
	NaN          build.NaN
	// Progress counts bytes compared (nil-safe).
	Progress *ckpt.Progress
	// Ignore are --ignore globs every candidate plans with (those the
	// folder's ckpt manifest records).
	Ignore []string
	// Words are the caller's words for the options the data comparison's
	// differences name ("NaN", build.CompareOptions.Words) and the plan
	// problems of a candidate ("Device", "Rules": mapping.PlanOptions.Words).
	Words ckpt.Words
	// prefer is the profile that wins a tie before the default one (the
	// text folder's, for its vision folder: both profiles' vision parts
	// plan the same files).
	prefer string
}

// Candidate is one profile with one setting of its variables, held
// against the cache: Differences counts what Plan finds (missing and
// extra files, differing header fields), what every candidate is ranked
// by; Data counts the data differences of the one candidate whose data was
// compared (DataCompared: the closest, with DirOptions.Data), which
// are not in Differences. An exact match has neither. Overrides
// lists the variables set away from their default for the mesh
// ("proj_1d_decode=false"). Problem is set instead when the checkpoint
// does not map with the candidate (then it cannot match).
type Candidate struct {
	Profile     string           `json:"profile"`
	Settings    mapping.Settings `json:"settings"`
	Overrides   []string         `json:"overrides"`
	Differences int              `json:"differences"`
	Missing     int              `json:"missing"`
	Extra       int              `json:"extra"`
	Headers     int              `json:"header_differences"`
	Data        int              `json:"data_differences"`
	// DataCompared: this candidate's data was compared (Data counts its
	// differences); false for the others.
	DataCompared bool   `json:"data_compared"`
	Problem      string `json:"problem,omitempty"`
}

// Result is the cache identify JSON document: the cache folder,
// its mesh, device and tag as its path names them, every candidate from
// the closest to the farthest, and the report of the closest one (its
// remaining differences; none when Exact).
type Result struct {
	Schema ckpt.Schema `json:"schema_version"`
	Dir    string      `json:"dir"`
	Source string      `json:"source"`
	Mesh   string      `json:"mesh"`
	// MeshFrom says how the mesh of a vision folder named without one and
	// without a ckpt manifest was inferred (cache.InferMesh: its .tp<N>
	// file names, the text folder beside it); "" when the folder's name
	// or manifest gives it.
	MeshFrom string `json:"mesh_from,omitempty"`
	Device   string `json:"device"`
	Tag      string `json:"tag"`
	// Part is "vision" for a vision folder (its manifest says so, or it
	// is named without a mesh): each candidate is its plan's vision part.
	Part  string `json:"part,omitempty"`
	Files int    `json:"files"`
	// DataCompared says whether the closest candidate\'s data was compared
	// (DirOptions.Data); DataBytes how many shard bytes.
	DataCompared bool  `json:"data_compared"`
	DataBytes    int64 `json:"data_bytes"`
	// NonFinite lists the source tensors of the compared files that hold
	// NaN or Inf (a build of them needs --allow-nonfinite; the data
	// comparison builds them anyway, as the serving stack does).
	NonFinite []ckpt.NonFinite `json:"nonfinite,omitempty"`
	// NamesOnly: no source, the candidates' plans were made from the
	// cache's file names (DirNames); NotCompared says what that
	// leaves out.
	NamesOnly   bool              `json:"names_only,omitempty"`
	NotCompared []string          `json:"not_compared,omitempty"`
	Exact       bool              `json:"exact"`
	Best        *Candidate        `json:"best"`
	Ties        []string          `json:"ties,omitempty"`
	Candidates  []Candidate       `json:"candidates"`
	Report      *compare.Document `json:"report"`
	// Warnings are the messages of the source's warning issues (not in
	// the document: the CLI prints them on stderr). BuildFlags are the
	// cache build options the line that rebuilds the cache needs beyond
	// the profile, mesh, device, tag and settings, in the words of
	// Options.Words (the CLI's: " --allow-nonfinite --nan scalar"; "" for
	// none).
	Warnings   []string `json:"-"`
	BuildFlags string   `json:"-"`
	// Vision is the identification of the model's vision folder, when
	// the cache root or device folder asked about holds one beside this
	// folder (Run); Exact then covers both. VisionMissing is the
	// path of the vision folder this folder's manifest names when it is
	// not there (not identified; Exact is false); VisionEmpty the path of
	// one that holds no .tensorbin file (likewise). VisionOther says, in
	// words, why the vision folder beside this one is another model's
	// (its manifest names another main folder whose part differs, or its
	// mesh is not this folder's): it is identified, but Exact is false.
	// VisionOwner is that other main folder when a manifest names it.
	Vision        *Result `json:"vision,omitempty"`
	VisionMissing string  `json:"vision_missing,omitempty"`
	VisionEmpty   string  `json:"vision_empty,omitempty"`
	VisionOther   string  `json:"vision_other,omitempty"`
	VisionOwner   string  `json:"vision_owner,omitempty"`
	report        *compare.Report
}

// FolderExact says whether the closest candidate reproduces this folder
// exactly (Exact without the vision folder).
func (r *Result) FolderExact() bool {
	return r.Best != nil && r.Best.Differences == 0 && r.Best.Data == 0
}

// ClosestReport is the comparison of the closest candidate's plan with the
// cache.
func (r *Result) ClosestReport() *compare.Report { return r.report }

// Dir names the profile and variable settings whose plan of the
// checkpoint c reproduces the cache in dir: for every candidate (each
// built-in profile, or opt's, with every combination of its overridable
// variables) it plans c on the mesh, device folder and tag the cache's
// path names, and holds the plan against the cache's file names and
// headers (compare.Headers). The closest candidate is the one with the fewest
// differences (then the fewest overrides, then the default profile); the
// result is exact when it has none. dir is a cache folder or a root with
// one (opt.Select picks among several).
func Dir(ctx context.Context, dir string, c *ckpt.Checkpoint, opt DirOptions) (*Result, error) {
	try := func(p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings, fdir string, _ []string, vision bool) (tried, error) {
		cand, plan, rep, err := tryCandidate(c, p, mesh, set, fdir, vision, opt.Words)
		return tried{cand: cand, plan: plan, rep: rep}, err
	}
	res, best, err := search(ctx, dir, opt, try)
	if err != nil {
		return nil, err
	}
	res.Source = c.Source
	if best == nil {
		return res, nil
	}
	if opt.Data {
		n, nonFinite, err := compareClosest(ctx, c, best.plan, res.Dir, best.rep, opt)
		if err != nil {
			return nil, err
		}
		res.DataCompared, res.DataBytes, res.NonFinite = true, n, nonFinite
		res.Candidates[0].DataCompared = true
		for _, d := range best.rep.Diffs {
			if d.Kind == compare.DiffData {
				// Apart from Differences: the other candidates' data is
				// not compared, so only names and headers rank them.
				res.Candidates[0].Data++
			}
		}
	}
	res.finish(best.rep)
	return res, nil
}

// DirNames is Dir without the source checkpoint, for a cache
// the serving stack wrote (no ckpt manifest names its source): every
// candidate's plan is made from the cache's file names (mapping.PlanNames:
// the decoder layers, their types and the config-dependent files the names
// show) and held against the names and headers (compare.Headers with OwnShape: each file's
// own shape stands for the planned one). NotCompared says what names and
// headers cannot show (shapes, data, config-dependent files absent from
// the cache). A vision folder is held against each profile's vision part,
// planned so (its mesh, when neither its name nor a manifest gives it,
// inferred by cache.InferMesh). opt.Data is ignored: there is no source
// to build from.
func DirNames(ctx context.Context, dir string, opt DirOptions) (*Result, error) {
	headers := compare.NewHeaderCache()
	try := func(p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings, fdir string, files []string, vision bool) (tried, error) {
		if vision {
			return tryVisionNames(p, mesh, set, fdir, files, headers)
		}
		settings, err := p.Resolve(mesh, set)
		if err != nil {
			return tried{}, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		plan, notes, err := mapping.PlanNames(p, mesh, set, p.Device, files)
		if err != nil {
			return tried{}, err
		}
		rep, err := compare.Headers(plan, fdir, compare.HeadersOptions{OwnShape: true, Cache: headers})
		if err != nil {
			return tried{}, err
		}
		cand := Candidate{Profile: p.Name, Settings: settings, Overrides: overrides(p, mesh, settings)}
		cand.count(rep)
		return tried{cand: cand, plan: plan, rep: rep, notes: notes}, nil
	}
	res, best, err := search(ctx, dir, opt, try)
	if err != nil {
		return nil, err
	}
	res.NamesOnly = true
	if best == nil {
		return res, nil
	}
	res.NotCompared = append(best.notes, "data not compared: no source")
	res.finish(best.rep)
	return res, nil
}

// tryVisionNames is DirNames's candidate for a vision folder: the
// plan of p's vision part (in p's device folder and architecture, as
// mapping.BuildWith plans it) from the folder's file names, held against
// their headers. A profile without a vision part cannot match.
func tryVisionNames(p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings, fdir string, files []string, headers *compare.HeaderCache) (tried, error) {
	cand := visionCandidate(p, mesh, set)
	if p.Vision == nil {
		cand.Problem = "the profile has no vision part to plan a vision folder"
		cand.Differences = -1
		return tried{cand: cand}, nil
	}
	vp := *p.Vision
	vp.Arch, vp.Device = p.Arch, p.Device
	plan, notes, err := mapping.PlanNames(&vp, mesh, set, vp.Device, files)
	if err != nil {
		return tried{}, fmt.Errorf("vision part of profile %s: %w", p.Name, err)
	}
	maps.Copy(cand.Settings, plan.Settings)
	rep, err := compare.Headers(plan, fdir, compare.HeadersOptions{OwnShape: true, Cache: headers})
	if err != nil {
		return tried{}, err
	}
	cand.count(rep)
	return tried{cand: cand, plan: plan, rep: rep, notes: notes}, nil
}

// visionSettings are the settings a vision folder is tried with for
// profile p: every combination of its vision part's overridable variables
// (host_vision_embed), defaults first, with instruct as the folder's name
// says (the text switches do not change the vision files).
func visionSettings(p *mapping.Profile, mesh mapping.Mesh, instruct bool) []mapping.Settings {
	if p.Vision == nil {
		return []mapping.Settings{{mapping.VarInstruct: instruct}}
	}
	var out []mapping.Settings
	for _, s := range settingsOf(p.Vision, mesh) {
		if s[mapping.VarInstruct] == instruct {
			out = append(out, s)
		}
	}
	if len(out) == 0 { // a vision part without the instruct variable
		out = settingsOf(p.Vision, mesh)
	}
	return out
}

// visionCandidate is the candidate of profile p for a vision folder with
// the vision part's settings set: the overrides are those away from the
// vision part's defaults (instruct=true for the instruct folder).
func visionCandidate(p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings) Candidate {
	cand := Candidate{Profile: p.Name, Settings: maps.Clone(set), Overrides: []string{}}
	if cand.Settings == nil {
		cand.Settings = mapping.Settings{}
	}
	if p.Vision != nil {
		cand.Overrides = overrides(p.Vision, mesh, set)
	}
	return cand
}

// tried is one candidate held against the cache: its plan, the report
// and what the plan could not decide.
type tried struct {
	cand  Candidate
	plan  *mapping.Plan
	rep   *compare.Report
	notes []string
}

// search tries every candidate on the cache folder of dir (try makes
// and holds its plan; files are the folder's .tensorbin paths) and ranks
// them, closest first. It returns the closest that maps (nil when none
// does); the caller finishes the result with its report.
func search(ctx context.Context, dir string, opt DirOptions,
	try func(p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings, fdir string, files []string, vision bool) (tried, error)) (*Result, *tried, error) {
	f, err := cache.ResolveFolder(dir, opt.Select)
	if err != nil {
		return nil, nil, err
	}
	files, err := cache.TensorbinFiles(f.Path())
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("cache folder %s holds no %s file: nothing to identify", f.Path(), mapping.FileExt)
	}
	meshName, meshFrom := f.Mesh(), ""
	if meshName == "" {
		// A vision folder the serving stack wrote: no mesh in its name,
		// no manifest to record it.
		inf, err := cache.InferMesh(f, files)
		if err != nil {
			return nil, nil, err
		}
		meshName, meshFrom = inf.Mesh, inf.From
	}
	mesh, err := mapping.ParseMesh(meshName)
	if err != nil {
		return nil, nil, fmt.Errorf("cache folder %s: %w", f.Path(), err)
	}
	res := &Result{Dir: f.Path(), Mesh: mesh.String(), MeshFrom: meshFrom, Device: f.Device(), Tag: f.Tag(), Files: len(files), Candidates: []Candidate{}}
	// A vision folder: its manifest says so, or (a stack's) it is named
	// without a mesh. Its files do not depend on the text model's
	// switches or tag: each profile is tried once, with instruct set for
	// the instruct folder, and the text tag is the default one.
	vision := f.Unmeshed()
	if m, err := cache.ReadManifest(f.Path()); err == nil {
		vision = m.Part == mapping.PartVision
	}
	if vision {
		res.Part = mapping.PartVision
	}
	profiles, err := identifyProfiles(opt)
	if err != nil {
		return nil, nil, err
	}
	if vision && len(profiles) > 0 {
		res.Tag = profiles[0].Tag // the text tag a build that writes this folder takes by default
	}
	var all []tried
	for _, p := range profiles {
		p = p.WithIgnores(opt.Ignore)
		p.Device = f.Device()
		var sets []mapping.Settings
		if vision {
			sets = visionSettings(p, mesh, f.Tag() == mapping.VisionInstructTag)
		} else {
			p.Tag = f.Tag()
			sets = settingsOf(p, mesh)
		}
		for _, set := range sets {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			t, err := try(p, mesh, set, f.Path(), files, vision)
			if err != nil {
				return nil, nil, err
			}
			all = append(all, t)
		}
	}
	order := make([]int, len(all))
	for i := range order {
		order[i] = i
	}
	rank := func(c Candidate) int {
		if c.Differences < 0 {
			return int(^uint(0) >> 1)
		}
		return c.Differences
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := all[order[i]].cand, all[order[j]].cand
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if len(a.Overrides) != len(b.Overrides) {
			return len(a.Overrides) < len(b.Overrides)
		}
		if opt.prefer != "" && (a.Profile == opt.prefer) != (b.Profile == opt.prefer) {
			return a.Profile == opt.prefer
		}
		return a.Profile == mapping.BuiltinName && b.Profile != mapping.BuiltinName
	})
	for _, k := range order {
		res.Candidates = append(res.Candidates, all[k].cand)
	}
	if len(order) == 0 || res.Candidates[0].Differences < 0 {
		return res, nil, nil
	}
	return res, &all[order[0]], nil
}

// finish sets the verdict from the closest candidate (Candidates[0]) and
// its report.
func (r *Result) finish(rep *compare.Report) {
	best := r.Candidates[0]
	r.report = rep
	r.Best = &best
	doc := rep.Document()
	r.Report = &doc
	r.Exact = best.Differences == 0 && best.Data == 0
	for _, c := range r.Candidates[1:] {
		if c.Differences == best.Differences {
			r.Ties = append(r.Ties, describeCandidate(c))
		}
	}
}

// count sets the candidate's differences from its report.
func (c *Candidate) count(rep *compare.Report) {
	c.Differences = len(rep.Diffs)
	for _, d := range rep.Diffs {
		switch d.Kind {
		case compare.DiffMissing:
			c.Missing++
		case compare.DiffExtra:
			c.Extra++
		default:
			c.Headers++
		}
	}
}

// tryCandidate holds the plan of c with profile p and the variables set
// against the cache folder dir (compare.Headers). A checkpoint that does not map so
// gives a candidate with Problem set (Differences -1) and no plan; w names
// the options the plan's problems mention (mapping.BuildWith).
func tryCandidate(c *ckpt.Checkpoint, p *mapping.Profile, mesh mapping.Mesh, set mapping.Settings, dir string, vision bool, w ckpt.Words) (
	Candidate, *mapping.Plan, *compare.Report, error) {
	var cand Candidate
	if !vision {
		settings, err := p.Resolve(mesh, set)
		if err != nil {
			return Candidate{}, nil, nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		cand = Candidate{Profile: p.Name, Settings: settings, Overrides: overrides(p, mesh, settings)}
	} else {
		cand = visionCandidate(p, mesh, set)
	}
	plan, err := mapping.BuildWith(c, p, mesh, set, w)
	var pe *mapping.PlanError
	switch {
	case errors.As(err, &pe):
		cand.Problem = fmt.Sprintf("%d plan problem(s), first: %s", len(pe.Problems), pe.Problems[0].Message)
		cand.Differences = -1
		return cand, nil, nil, nil
	case err != nil:
		return Candidate{}, nil, nil, err
	}
	if vision {
		if plan.Vision == nil {
			cand.Problem = "the checkpoint has no vision tower (no vision_config in config.json) to plan a vision folder"
			cand.Differences = -1
			return cand, nil, nil, nil
		}
		plan = plan.Vision
		cand.Settings = plan.Settings
	}
	rep, err := compare.Headers(plan, dir, compare.HeadersOptions{})
	if err != nil {
		return Candidate{}, nil, nil, err
	}
	cand.count(rep)
	return cand, plan, rep, nil
}

// describeCandidate is "profile" or "profile with a=false, b=true".
func describeCandidate(c Candidate) string {
	if len(c.Overrides) == 0 {
		return c.Profile
	}
	s := c.Profile + " with "
	for i, o := range c.Overrides {
		if i > 0 {
			s += ", "
		}
		s += o
	}
	return s
}

// Describe is the candidate as a person reads it: the profile, and the
// --set overrides that reproduce the cache.
func (c Candidate) Describe() string { return describeCandidate(c) }

func identifyProfiles(opt DirOptions) ([]*mapping.Profile, error) {
	if opt.Rules != "" {
		p, err := mapping.PlanOptions{Rules: opt.Rules}.LoadProfile()
		if err != nil {
			return nil, err
		}
		return []*mapping.Profile{p}, nil
	}
	names := opt.Profiles
	if len(names) == 0 {
		names = mapping.BuiltinNames()
	}
	var out []*mapping.Profile
	for _, n := range names {
		p, err := mapping.Builtin(n)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// settingsOf lists every combination of the profile's overridable
// variables (those not Unsupported), defaults first.
func settingsOf(p *mapping.Profile, m mapping.Mesh) []mapping.Settings {
	var vars []mapping.Variable
	for _, v := range p.Variables {
		if v.Unsupported == "" {
			vars = append(vars, v)
		}
	}
	out := make([]mapping.Settings, 0, 1<<len(vars))
	for bits := 0; bits < 1<<len(vars); bits++ {
		s := mapping.Settings{}
		for i, v := range vars {
			val := v.DefaultFor(m)
			if bits&(1<<i) != 0 {
				val = !val
			}
			s[v.Name] = val
		}
		out = append(out, s)
	}
	return out
}

// overrides lists the settings that differ from the variables' defaults
// for the mesh, as NAME=VALUE in name order.
func overrides(p *mapping.Profile, m mapping.Mesh, s mapping.Settings) []string {
	out := []string{}
	for _, v := range p.Variables {
		if val, ok := s[v.Name]; ok && val != v.DefaultFor(m) {
			out = append(out, fmt.Sprintf("%s=%v", v.Name, val))
		}
	}
	sort.Strings(out)
	return out
}

// compareClosest is build.Compare of the plan's files that rep does not
// already find missing or unreadable, its data differences and files
// within a tolerance added to rep. It returns the shard bytes compared.
func compareClosest(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, cdir string, rep *compare.Report, opt DirOptions) (
	int64, []ckpt.NonFinite, error) {
	skip := map[string]bool{}
	for _, d := range rep.Diffs {
		if d.Kind == compare.DiffMissing || d.Kind == compare.DiffUnreadable {
			skip[d.File] = true
		}
	}
	got, nonFinite, err := build.Compare(ctx, c, plan, cdir, build.CompareOptions{Skip: skip, Scratch: opt.Scratch, ScratchBytes: opt.ScratchBytes,
		Workers: opt.Workers, NaN: opt.NaN, Progress: opt.Progress, Words: opt.Words})
	if err != nil {
		return 0, nonFinite, err
	}
	rep.Diffs = append(rep.Diffs, got.Diffs...)
	rep.Tolerated = append(rep.Tolerated, got.Tolerated...)
	rep.Sort()
	return got.Bytes, nonFinite, nil
}

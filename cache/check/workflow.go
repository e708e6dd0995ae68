package check

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/build"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// DefaultMemInfo is the file MemAvailable is read from when
// DirOptions.MemInfo is empty (cache verify's --meminfo default).
const DefaultMemInfo = "/proc/meminfo"

// DirOptions tune Dir.
type DirOptions struct {
	FilesOptions
	// Source is the checkpoint the cache must have been built from; ""
	// for the source its manifest names (DirResult.SourceFromManifest).
	Source string
	// Openers resolve non-local sources (see ckpt.SourceOpener).
	Openers []ckpt.SourceOpener
	// Rules is the profile JSON file the cache was built with; "" for the
	// built-in profile the manifest names.
	Rules string
	// Select picks the cache folder when dir is a root holding several.
	Select cache.Selector
	// Set overrides profile variables over the settings the manifest
	// records.
	Set mapping.Settings
	// MinMem, when positive, also fails the check when MemAvailable (read
	// from MemInfo, default DefaultMemInfo) is below it.
	MinMem  int64
	MemInfo string
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// ReadData also compares every file's data with what the source
	// builds to (the files built into a scratch directory in batches and
	// compared shard by shard, as cache identify --source does): it reads
	// the whole source. Without it the files are held against the plan
	// (names, headers, sizes) and against the manifest's hashes, which
	// say nothing the manifest's writer could not have made up.
	ReadData bool
	// Ignore are the --ignore globs the cache must have been built with;
	// nil for those the manifest records.
	Ignore []ckpt.Glob
	// StopAtPlan makes Dir stop where it would make the plan, once the
	// manifest says there is a cache to check and the profile loads: it
	// returns a *PlanStopError (with the error of the mesh the manifest
	// records, if any) in place of the check. A caller whose own
	// options for the plan did not parse (a command line's Set or Ignore)
	// sets it to report their errors where the plan's errors are (a
	// folder that is no cache is still a finding).
	StopAtPlan bool
	// Strict makes warnings fail too (FindingCompanion of a text folder
	// checked alone).
	Strict bool
	// Words are the caller's words for the options the findings mention:
	// "MinMem" and "Ignore" (also the option of cache build that left
	// tensors out), "NaN" (of the data comparison, build.CompareOptions.Words),
	// those of the plan's problems (mapping.PlanOptions.Words: "Device",
	// "Rules"); DirResult.Verdict takes them too ("ReadData", "Rehash").
	Words ckpt.Words
}

// NoSourceError is Dir's refusal of a check with no DirOptions.Source
// when the manifest of the cache folder Folder names no source either: the
// caller must say which checkpoint the cache is for. It matches
// ckpt.ErrUsage.
type NoSourceError struct {
	Folder string
}

// Error says the manifest names no source.
func (e *NoSourceError) Error() string {
	return fmt.Sprintf("the manifest of %s names no source", e.Folder)
}

// Is makes errors.Is(err, ckpt.ErrUsage) true.
func (e *NoSourceError) Is(target error) bool { return target == ckpt.ErrUsage }

// NotBuiltinError is Dir's refusal of a check with no DirOptions.Rules
// when the profile the manifest names, Profile, is not built in: the
// caller must give the profile's rules file.
type NotBuiltinError struct {
	Profile string
}

// Error says the manifest's profile is not built in.
func (e *NotBuiltinError) Error() string {
	return fmt.Sprintf("the manifest names profile %q, which is not built in", e.Profile)
}

// PlanStopError is Dir's stop where it would make the plan of the cache
// folder Folder (DirOptions.StopAtPlan). Mesh is the *ckpt.UsageError of
// the mesh the folder's manifest records, nil when it parses: the error
// Dir returns there without StopAtPlan.
type PlanStopError struct {
	Folder string
	Mesh   error
}

// Error says where Dir stopped.
func (e *PlanStopError) Error() string {
	return fmt.Sprintf("stopped before the plan of %s (StopAtPlan)", e.Folder)
}

// DirResult is the cache verify JSON document (docs/cli.md): every
// finding of Dir, OK when there is none.
type DirResult struct {
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
	// Rehash: every source tensor was read and hashed (FilesOptions.Rehash);
	// otherwise sources whose cheap identity (file size, mtime, offset) is
	// unchanged were trusted without reading them, and Rehashed counts the
	// others, which were read.
	Rehash   bool `json:"rehash"`
	Rehashed int  `json:"rehashed"`
	// DataCompared says whether every file's data was compared with a
	// build from the source (DirOptions.ReadData), DataBytes how many shard
	// bytes; Compared says in words what the verdict rests on.
	DataCompared bool   `json:"data_compared"`
	DataBytes    int64  `json:"data_bytes"`
	Compared     string `json:"compared"`
	// Tolerated are the files whose data differs from the source's build
	// only within the tolerance of a value op their entry applies
	// (neg_exp: within 1 ulp of float32); they pass, and the verdict says
	// they were held within it, not bit for bit.
	Tolerated []compare.Tolerated `json:"within_tolerance,omitempty"`
	// Unpacked is the manifest's mark of an unpacked archive.
	Unpacked *cache.Unpacked `json:"unpacked,omitempty"`
	Findings []ckpt.Finding  `json:"findings"`
	// Ignore are the --ignore globs the source was planned with (the
	// manifest's, or DirOptions.Ignore) and the tensors each leaves out of
	// the plan now; absent when there are none.
	Ignore []cache.IgnoreRecord `json:"ignore,omitempty"`
	// SourceFromManifest: no source was given (DirOptions.Source ""), and
	// Source is the one the folder's manifest names.
	SourceFromManifest bool `json:"source_from_manifest,omitempty"`
	// VisionNotVerified is the path of the vision folder the text
	// folder's manifest names when it is not there: it was not verified,
	// and OK says nothing of it (a FindingCompanion says so).
	VisionNotVerified string `json:"vision_not_verified,omitempty"`
	// VisionOwner is, when the vision folder is there but its manifest
	// names another main folder (VisionNotVerified is then its path),
	// that folder: the vision part is another model's.
	VisionOwner string `json:"vision_owner,omitempty"`
}

// Compared values (DirResult.Compared).
const (
	// ComparedNamesHeaders: the files' names, headers and sizes against
	// the plan of the source, their bytes against the manifest's hashes,
	// the source tensors against the manifest's record of them; not the
	// files' data against the source's.
	ComparedNamesHeaders = "names, headers and the manifest's hashes"
	// ComparedData: that, and every file's data against a build from the
	// source.
	ComparedData = "names, headers, the manifest's hashes and the data built from the source"
)

// trusted says how the sources were checked, for the verdict line, w
// naming the option Rehash.
func (r *DirResult) trusted(w ckpt.Words) string {
	if r.Rehash {
		return fmt.Sprintf("every source tensor read and hashed (%d)", r.Rehashed)
	}
	s := "sources trusted by file size and mtime, not read"
	if r.Rehashed > 0 {
		s = fmt.Sprintf("sources trusted by file size and mtime, not read (%d whose size or mtime changed were hashed)", r.Rehashed)
	}
	return s + "; " + w.Of("Rehash") + " reads them"
}

// Verdict says what a passing check compared, for the verdict line: the
// data built from the source, or names and headers only; how the sources
// were checked (trusted); and that the manifest is an archive's word. w
// names the options ReadData and Rehash (as Options.Words does).
func (r *DirResult) Verdict(w ckpt.Words) string {
	if r.DataCompared {
		return fmt.Sprintf("compared %s (%s)%s; %s", r.Compared, ckpt.FormatBytes(r.DataBytes), compare.ToleratedNote(r.Tolerated), r.trusted(w))
	}
	s := fmt.Sprintf("compared %s only, not the data with the source's (%s compares it)", r.Compared, w.Of("ReadData"))
	if r.Unpacked != nil {
		from := "an archive"
		if r.Unpacked.Archive != "" {
			from = "the archive " + ckpt.EscapeName(r.Unpacked.Archive)
		}
		s += fmt.Sprintf("; the manifest came from %s, so its hashes are that archive's word", from)
	}
	return s + "; " + r.trusted(w)
}

// Dir is the fail-closed preflight of `ckpt cache verify`: it checks
// the available memory (with MinMem), reads the manifest of the cache root
// dir, makes the plan of the source with the manifest's profile, mesh,
// device and tag (mapping.Resolve), and runs Files. Everything wrong with
// the cache or the machine is a finding (ids Finding*); a source that no
// longer maps gives one stale finding per plan problem. Dir returns an
// error only when the source cannot be read, the profile cannot be
// loaded, or ctx is cancelled.
func Dir(ctx context.Context, dir string, opt DirOptions) (*DirResult, error) {
	res := &DirResult{Dir: dir, Source: ckpt.Redact(opt.Source), Findings: []ckpt.Finding{}}
	done := func() (*DirResult, error) {
		res.OK = len(res.Findings) == 0
		return res, nil
	}
	if opt.MinMem > 0 {
		mi := opt.MemInfo
		if mi == "" {
			mi = DefaultMemInfo
		}
		avail, err := memAvailable(mi)
		if err != nil {
			res.Findings = append(res.Findings, fail(FindingMemory, "", err.Error()))
		} else {
			res.MemAvailable = avail
			if avail < opt.MinMem {
				msg := fmt.Sprintf("MemAvailable is %s, below %s %s", ckpt.FormatBytes(avail), opt.Words.Of("MinMem"), ckpt.FormatBytes(opt.MinMem))
				res.Findings = append(res.Findings, fail(FindingMemory, "", msg))
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
		var nc *cache.NoCacheError
		if errors.As(err, &amb) || (errors.As(err, &nc) && nc.Checkpoint != "") {
			// Not a verdict on a cache: the wrong directory (exit 2, as
			// for cache ls, identify and pack).
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
	if opt.Source == "" {
		// The source the cache was built from, as its manifest names it.
		if m.Source == "" {
			return nil, &NoSourceError{Folder: folder.Path()}
		}
		opt.Source, res.Source, res.SourceFromManifest = m.Source, m.Source, true
		if opt.Variant == "" {
			opt.Variant = m.Variant // and the variant of it
		}
	}
	if opt.Rules == "" {
		if _, err := mapping.Builtin(m.Profile); err != nil {
			return nil, &NotBuiltinError{Profile: m.Profile}
		}
	}
	built := cache.IgnoreGlobs(m.Ignore)
	if opt.Ignore != nil && !sameSet(globTexts(opt.Ignore), built) {
		res.Findings = append(res.Findings, fail(FindingManifest, cache.ManifestName,
			fmt.Sprintf("the cache was built %s; this check plans the source %s", describeIgnores(built, opt.Words), describeIgnores(globTexts(opt.Ignore), opt.Words))))
	}
	var mesh mapping.Mesh // none recorded: mapping.DefaultMesh
	var meshErr error
	if m.Mesh != "" {
		mesh, meshErr = mapping.ParseMesh(m.Mesh)
	}
	po := mapping.PlanOptions{Profile: m.Profile, Rules: opt.Rules, Mesh: mesh, Device: m.Device, Tag: m.Tag, Set: opt.Set, Base: m.Settings, Variant: opt.Variant,
		Ignore: opt.Ignore, BaseIgnore: built, Words: opt.Words}
	if m.Part == mapping.PartVision {
		po.Tag = "" // the vision folder's tag is its own; the main profile keeps its tag
	}
	if opt.StopAtPlan || meshErr != nil {
		// Where mapping.Resolve refuses them: after the profile's errors.
		if _, err := po.LoadProfile(); err != nil {
			return nil, err
		}
		var meshUsage error
		if meshErr != nil {
			meshUsage = &ckpt.UsageError{Reason: meshErr.Error()}
		}
		if opt.StopAtPlan {
			return nil, &PlanStopError{Folder: folder.Path(), Mesh: meshUsage}
		}
		return nil, meshUsage
	}
	c, plan, err := mapping.Resolve(ctx, opt.Source, po, opt.Openers...)
	if err == nil && m.Part == mapping.PartVision {
		if plan.Vision == nil {
			c.Close()
			res.Findings = append(res.Findings, fail(FindingStale, "",
				fmt.Sprintf("the manifest is of the vision part of profile %s, and the source has no vision tower (no vision_config) to plan it", m.Profile)))
			return done()
		}
		plan = plan.Vision
	}
	var pe *mapping.PlanError
	if plan != nil {
		res.Ignore = cache.IgnoreRecords(plan)
		res.Findings = append(res.Findings, ignoreChanges(m.Ignore, res.Ignore, opt.Words)...)
	}
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
	rep, err := Files(ctx, folder.Root, m, c, plan, opt.FilesOptions)
	if err != nil {
		return nil, err
	}
	res.Files, res.Bytes = rep.Files, rep.Bytes
	res.Rehash, res.Rehashed = opt.Rehash, rep.Rehashed
	res.Unpacked = m.Unpacked
	res.Findings = append(res.Findings, rep.Findings...)
	res.Compared = ComparedNamesHeaders
	if opt.ReadData {
		n, err := verifyData(ctx, c, plan, folder, m, rep.Findings, opt)
		if err != nil {
			return nil, err
		}
		res.DataCompared, res.DataBytes, res.Compared, res.Tolerated = true, n.bytes, ComparedData, n.tolerated
		res.Findings = append(res.Findings, n.findings...)
		sortFindings(res.Findings)
	}
	return done()
}

// dataCheck is what verifyData found.
type dataCheck struct {
	bytes     int64
	findings  []ckpt.Finding
	tolerated []compare.Tolerated
}

// verifyData compares the data of every planned file that Files did not
// already find missing, truncated or corrupted with what the source builds
// to (build.Compare, the mechanism of cache identify --source), with the
// NaN style the manifest records; each differing file is a FindingData.
func verifyData(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, folder cache.Folder, m *cache.Manifest, found []ckpt.Finding,
	opt DirOptions) (dataCheck, error) {
	skip := map[string]bool{}
	for _, f := range found {
		switch f.ID {
		case FindingMissing, FindingTruncated, FindingCorrupted:
			skip[strings.TrimPrefix(f.File(), plan.CacheDir+"/")] = true
		}
	}
	nan := build.NaNVector
	if m.AllowNonFinite && m.NaN != "" {
		nan = build.NaN(m.NaN)
	}
	for _, e := range plan.Entries {
		if h, err := cache.HeaderFor(e); err == nil {
			for _, s := range h.Shards {
				opt.Progress.AddTotal(int64(s.Size))
			}
		}
	}
	rep, _, err := build.Compare(ctx, c, plan, folder.Path(), build.CompareOptions{Skip: skip, Workers: opt.Workers, NaN: nan, Progress: opt.Progress,
		Words: opt.Words})
	if err != nil {
		return dataCheck{}, err
	}
	out := dataCheck{bytes: rep.Bytes, tolerated: rep.Tolerated}
	for _, d := range rep.Diffs {
		if d.Kind != compare.DiffData {
			continue
		}
		out.findings = append(out.findings, fail(FindingData, plan.CacheDir+"/"+d.File,
			fmt.Sprintf("its data is not what the source builds (target %s): %s", d.Target, d.Message)))
	}
	return out, nil
}

// globTexts are the texts of globs.
func globTexts(globs []ckpt.Glob) []string {
	out := make([]string, len(globs))
	for i, g := range globs {
		out[i] = g.String()
	}
	return out
}

func sameSet(a, b []string) bool { return maps.Equal(uniq(a), uniq(b)) }

func uniq(v []string) map[string]bool {
	m := map[string]bool{}
	for _, x := range v {
		m[x] = true
	}
	return m
}

// describeIgnores is "with Ignore A Ignore B", or "without Ignore", w
// naming the option Ignore (the CLI: "with --ignore A --ignore B").
func describeIgnores(globs []string, w ckpt.Words) string {
	if len(globs) == 0 {
		return "without " + w.Of("Ignore")
	}
	s := "with"
	for _, g := range globs {
		s += " " + w.Of("Ignore") + " " + ckpt.Quote(g)
	}
	return s
}

// ignoreChanges are the stale findings of the Ignore globs the build
// and this plan share: a tensor a glob leaves out now that the build did
// not (the source gained it, or no rule maps it any more: the cache holds
// nothing of it), and one the build left out that it does not leave out
// now (the source lost it, or a rule maps it now).
func ignoreChanges(built, now []cache.IgnoreRecord, w ckpt.Words) []ckpt.Finding {
	was := map[string]map[string]bool{}
	for _, r := range built {
		was[r.Glob] = uniq(r.Tensors)
	}
	var out []ckpt.Finding
	for _, r := range now {
		before, ok := was[r.Glob]
		if !ok {
			continue // a glob the build did not have: the manifest finding says so
		}
		var added []string
		for _, t := range r.Tensors {
			if !before[t] {
				added = append(added, t)
			}
			delete(before, t)
		}
		if len(added) > 0 {
			out = append(out, fail(FindingStale, "", fmt.Sprintf(
				"%s of the source %s left out by %s %s now, but %s not left out by the build (the source changed since the build): %s",
				countTensors(len(added)), isAre(len(added)), w.Of("Ignore"), ckpt.Quote(r.Glob), wasWere(len(added)), escapedList(added)), added...))
		}
		var gone []string
		for t := range before {
			gone = append(gone, t)
		}
		if len(gone) > 0 {
			sort.Slice(gone, func(i, j int) bool { return ckpt.NaturalLess(gone[i], gone[j]) })
			out = append(out, fail(FindingStale, "", fmt.Sprintf("%s that the build left out by %s %s %s not left out now (the source changed since the build): %s",
				countTensors(len(gone)), w.Of("Ignore"), ckpt.Quote(r.Glob), isAre(len(gone)), escapedList(gone)), gone...))
		}
	}
	return out
}

func countTensors(n int) string {
	if n == 1 {
		return "1 tensor"
	}
	return fmt.Sprintf("%d tensors", n)
}

func escapedList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = ckpt.EscapeName(n)
	}
	return strings.Join(q, ", ")
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// Options is what `ckpt cache verify` asks for: the check of the cache
// folders of Dir (a cache folder, or a cache root: the folders Select
// matches, all by default) against the checkpoint Source ("" for the one
// each folder's manifest names).
type Options struct {
	Dir, Source string
	// Openers resolve non-local sources (see ckpt.SourceOpener).
	Openers []ckpt.SourceOpener
	// Rules, Set, Select, MinMem and MemInfo are as in DirOptions.
	Rules   string
	Set     mapping.Settings
	Select  cache.Selector
	MinMem  int64
	MemInfo string
	// ReadData compares the data too (DirOptions.ReadData).
	ReadData bool
	FilesOptions
	// Variant selects a variant of a directory source (ckpt.Options.Variant).
	Variant string
	// Ignore and StopAtPlan are as in DirOptions.
	Ignore     []ckpt.Glob
	StopAtPlan bool
	// Strict makes warnings fail too (DirOptions.Strict).
	Strict bool
	// Words are the caller's words for the options the findings mention
	// (DirOptions.Words).
	Words ckpt.Words
}

// options are the request as DirOptions of Dir.
func (r Options) options() DirOptions {
	return DirOptions{FilesOptions: r.FilesOptions, Source: r.Source, Openers: r.Openers, Rules: r.Rules, Select: r.Select, Set: r.Set,
		MinMem: r.MinMem, MemInfo: r.MemInfo, Variant: r.Variant, ReadData: r.ReadData, Ignore: r.Ignore, StopAtPlan: r.StopAtPlan, Strict: r.Strict, Words: r.Words}
}

// Result is the outcome of Run: one cache verify document per cache
// folder checked. With several folders the JSON document is Result
// itself; with one it is that folder's DirResult (Single).
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema  ckpt.Schema  `json:"schema_version"`
	Dir     string       `json:"dir"`
	Source  string       `json:"source"`
	OK      bool         `json:"ok"`
	Folders []*DirResult `json:"folders"`
}

// Single is the result of the one folder checked, nil when there were
// several.
func (r *Result) Single() *DirResult {
	if len(r.Folders) != 1 {
		return nil
	}
	return r.Folders[0]
}

// Failed counts the folders that failed their check.
func (r *Result) Failed() int {
	n := 0
	for _, f := range r.Folders {
		if !f.OK {
			n++
		}
	}
	return n
}

// DirSummaryRecord is the closing JSON Lines record of a cache verify of one
// cache folder: the document's verdict and counts.
type DirSummaryRecord struct {
	Dir      string `json:"dir"`
	Source   string `json:"source"`
	OK       bool   `json:"ok"`
	Files    int    `json:"files"`
	Bytes    int64  `json:"bytes"`
	Findings int    `json:"findings"`
}

// SummaryRecord is the result's closing JSON Lines record.
func (r *DirResult) SummaryRecord() DirSummaryRecord {
	return DirSummaryRecord{r.Dir, r.Source, r.OK, r.Files, r.Bytes, len(r.Findings)}
}

// SummaryRecord is the closing JSON Lines record of a cache verify of
// several cache folders: the verdict, the folders and how many failed, the
// files, bytes and findings of all of them.
type SummaryRecord struct {
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
func (r *Result) SummaryRecord() SummaryRecord {
	s := SummaryRecord{Dir: r.Dir, Source: r.Source, OK: r.OK, Folders: len(r.Folders), Failed: r.Failed()}
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
func (r *Result) Rows() []FolderFinding {
	var rows []FolderFinding
	for _, f := range r.Folders {
		for _, fi := range f.Findings {
			rows = append(rows, FolderFinding{f.Dir, fi})
		}
	}
	return rows
}

// Run is the workflow of `ckpt cache verify`: it runs Dir on every cache folder of req.Dir that
// req.Select matches: Dir itself when it is a cache folder, else each
// matching folder of the cache root Dir (all of them when Select is
// empty), one result each, in the order of cache.Folders. A root with no
// matching folder gives one result with the finding Dir gives.
func Run(ctx context.Context, req Options) (*Result, error) {
	opt := req.options()
	dir := req.Dir
	all, err := runAll(ctx, dir, opt)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir, Source: ckpt.Redact(req.Source), OK: true, Folders: all}
	for _, f := range all {
		res.OK = res.OK && f.OK
	}
	return res, nil
}

// runAll is Dir of every cache folder of dir that opt.Select matches.
func runAll(ctx context.Context, dir string, opt DirOptions) ([]*DirResult, error) {
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
	// A model's main folder is checked with its vision folder when that
	// is there (an archive holds one folder: a text folder unpacked alone
	// is checked alone); one that is not there, or whose manifest says it
	// is another folder's vision part (a build of another mesh into the
	// same device folder replaced it: owner[p]), is a companion finding of
	// the main folder's check (missing[p]).
	missing, owner := map[string]cache.Folder{}, map[string]string{}
	for _, p := range paths {
		f, err := cache.ResolveFolder(p, cache.Selector{})
		if err != nil {
			continue
		}
		comp, named, exists, ok := cache.FindCompanion(f)
		if !ok || !named {
			continue
		}
		if !exists {
			missing[p] = comp
			continue
		}
		if main, ok := cache.PartOf(f, comp); ok {
			missing[p], owner[p] = comp, main
			continue
		}
		if c := comp.Path(); !slices.Contains(paths, c) && c != filepath.Clean(p) {
			paths = append(paths, c)
		}
	}
	// A cache root or device folder asks about the whole model: a vision
	// folder missing there fails; the text folder named alone verifies
	// without it, saying it was not verified.
	whole := !cache.IsFolderName(filepath.Base(filepath.Clean(dir)))
	companion := func(r *DirResult, p string) {
		comp, ok := missing[p]
		if !ok {
			return
		}
		f := ckpt.Finding{ID: FindingCompanion, Files: []string{comp.Dir}}
		notThere := "is not there"
		if o := owner[p]; o != "" {
			notThere = "holds the vision part of " + ckpt.EscapeName(o) + ", not of this folder (a build of another model into the same device folder replaced it)"
		}
		if whole {
			f.Status = ckpt.Fail
			f.Message = fmt.Sprintf("the vision folder %s that the manifest of %s names %s (%s): the model's cache is incomplete",
				comp.Dir, path.Dir(comp.Dir)+"/"+filepath.Base(filepath.Clean(p)), notThere, comp.Path())
		} else {
			f.Status = ckpt.Warn
			if opt.Strict {
				f.Status = ckpt.Fail
			}
			f.Message = fmt.Sprintf("the vision folder %s that this folder's manifest names %s: not verified; this check is of the text folder only, "+
				"not of the whole model (the cache root checks both)", comp.Path(), notThere)
			r.VisionNotVerified, r.VisionOwner = comp.Path(), owner[p]
		}
		r.Findings = append(r.Findings, f)
		r.OK = r.OK && !f.Failed()
	}
	if len(paths) <= 1 {
		r, err := Dir(ctx, dir, opt)
		if err != nil {
			return nil, err
		}
		if len(paths) == 1 {
			companion(r, paths[0])
		}
		return []*DirResult{r}, nil
	}
	var out []*DirResult
	for _, p := range paths {
		o := opt
		o.Select = cache.Selector{}
		r, err := Dir(ctx, p, o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		companion(r, p)
		out = append(out, r)
	}
	return out, nil
}

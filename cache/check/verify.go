package check

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
	"golang.org/x/sync/errgroup"
)

// The ids of cache verify findings (ckpt.Finding.ID; every one fails but
// FindingCompanion of a text folder alone, a warning).
const (
	FindingMissing   ckpt.FindingID = "missing"   // a planned file is absent (or not in the manifest)
	FindingExtra     ckpt.FindingID = "extra"     // a file that is neither planned nor recorded, or a leftover of an interrupted build
	FindingTruncated ckpt.FindingID = "truncated" // shorter than its header says
	FindingCorrupted ckpt.FindingID = "corrupted" // header unreadable or not the plan's, wrong size, or data hash mismatch
	FindingStale     ckpt.FindingID = "stale"     // built from source tensors (or a plan entry) that changed since
	FindingManifest  ckpt.FindingID = "manifest"  // the manifest is absent, unreadable or for another plan
	FindingMemory    ckpt.FindingID = "memory"    // MemAvailable is below the minimum asked for, or unreadable
	FindingData      ckpt.FindingID = "data"      // (ReadData) a file's data is not what the source builds
	// FindingCompanion: the vision folder a text folder's manifest names
	// is not there. It fails the check of the cache root or device folder
	// (the whole model); of the text folder alone it is a warning (the
	// folder verifies, the model is not known complete) that fails only
	// under Strict.
	FindingCompanion ckpt.FindingID = "companion"
)

// fail is a failing finding about file (relative to the cache root; ""
// for none).
func fail(id ckpt.FindingID, file, msg string, tensors ...string) ckpt.Finding {
	f := ckpt.Finding{ID: id, Status: ckpt.Fail, Message: msg, Tensors: tensors}
	if file != "" {
		f.Files = []string{file}
	}
	return f
}

// FilesOptions tune Files.
type FilesOptions struct {
	Workers int
	// Rehash re-reads every source tensor and compares its xxh3 instead
	// of trusting an unchanged cheap identity (file size, mtime, offset).
	Rehash bool
	// Progress counts cache bytes hashed (nil-safe).
	Progress *ckpt.Progress
}

// FilesReport is the outcome of Files.
type FilesReport struct {
	Files    int            `json:"files"`
	Bytes    int64          `json:"bytes"`
	Findings []ckpt.Finding `json:"findings"`
	// Rehashed counts source tensors that were re-hashed.
	Rehashed int `json:"rehashed"`
}

// Files checks the cache folder of a plan (root/plan.CacheDir) against its
// manifest m and the plan of the current source checkpoint c, fail-closed: every planned file must
// exist, be recorded in the manifest with the plan's entry fingerprint,
// have the plan's header and size and the recorded data hash, and have been
// built from source tensors that still have the recorded contents (cheap
// identity, else xxh3; always xxh3 with Rehash). Files that are neither
// planned nor recorded, leftovers of an interrupted build and a build
// journal are reported as extra; a build that holds the folder's lock is
// reported. Only the cache folder is judged: other folders of the root are
// not looked at. Findings are sorted by file.
func Files(ctx context.Context, root string, m *cache.Manifest, c *ckpt.Checkpoint, plan *mapping.Plan, opt FilesOptions) (*FilesReport, error) {
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	rep := &FilesReport{Findings: []ckpt.Finding{}}
	var mu sync.Mutex
	add := func(f ckpt.Finding) {
		mu.Lock()
		rep.Findings = append(rep.Findings, f)
		mu.Unlock()
	}
	if m.Mesh != plan.Mesh.String() || m.CacheDir != plan.CacheDir {
		add(fail(FindingManifest, "", fmt.Sprintf("manifest is for mesh %s in %s, the plan for mesh %s in %s", m.Mesh, m.CacheDir, plan.Mesh, plan.CacheDir)))
	}
	if !maps.Equal(m.Settings, plan.Settings) {
		add(fail(FindingManifest, "", fmt.Sprintf("manifest was built with settings %s, the plan has %s", m.Settings, plan.Settings)))
	}
	recs := map[string]cache.FileRecord{}
	for _, f := range m.Files {
		recs[f.Path] = f
	}
	planned := map[string]bool{}
	for _, e := range plan.Entries {
		planned[e.File] = true
	}
	// Source hashes, computed at most once per tensor.
	var hmu sync.Mutex
	hashes := map[string]string{}
	hashOf := func(t *ckpt.Tensor) (string, error) {
		hmu.Lock()
		h, ok := hashes[t.Name]
		hmu.Unlock()
		if ok {
			return h, nil
		}
		h, err := cache.HashTensor(t, nil)
		if err != nil {
			return "", err
		}
		hmu.Lock()
		if _, ok := hashes[t.Name]; !ok {
			rep.Rehashed++
		}
		hashes[t.Name] = h
		hmu.Unlock()
		return h, nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opt.Workers)
	for _, e := range plan.Entries {
		rec, ok := recs[e.File]
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			fs, n, err := verifyEntry(root, e, rec, ok, hashOf, opt)
			for _, f := range fs {
				add(f)
			}
			mu.Lock()
			rep.Files++
			rep.Bytes += n
			mu.Unlock()
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, f := range m.Files {
		if !planned[f.Path] {
			add(fail(FindingExtra, f.Path, "recorded in the manifest but not in the current plan"))
		}
	}
	dir := cache.FolderOf(root, plan.CacheDir).Path()
	if h, ok := cache.LockHolder(dir); ok {
		add(fail(FindingManifest, plan.CacheDir+"/"+cache.LockName, fmt.Sprintf("a build is changing the cache now (%s)", h)))
	}
	err := cache.WalkFollow(dir, func(p string, isDir bool) error {
		name := filepath.Base(p)
		if isDir {
			if cache.IsTempName(name) {
				add(fail(FindingExtra, cache.RelPath(root, p), "leftover directory of an interrupted unpack"))
				return filepath.SkipDir
			}
			return nil
		}
		r := cache.RelPath(root, p)
		switch {
		case p == filepath.Join(dir, cache.ManifestName) || p == filepath.Join(dir, cache.LockName) || planned[r]:
		case p == filepath.Join(dir, cache.JournalName):
			add(fail(FindingExtra, r, "build journal: a build was interrupted; run cache build again"))
		case cache.IsTempName(name):
			add(fail(FindingExtra, r, "temporary file of an interrupted build"))
		case recs[r].Path == "":
			add(fail(FindingExtra, r, "not part of the plan nor the manifest"))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning %s: %w", dir, err)
	}
	sortFindings(rep.Findings)
	return rep, nil
}

// sortFindings sorts findings by file, then id.
func sortFindings(fs []ckpt.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File() != b.File() {
			return ckpt.NaturalLess(a.File(), b.File())
		}
		return a.ID < b.ID
	})
}

// verifyEntry checks one planned file; it returns the findings and the
// bytes hashed.
func verifyEntry(root string, e *mapping.Entry, rec cache.FileRecord, recorded bool, hashOf func(*ckpt.Tensor) (string, error),
	opt FilesOptions) ([]ckpt.Finding, int64, error) {
	var out []ckpt.Finding
	add := func(kind ckpt.FindingID, format string, args ...any) {
		out = append(out, fail(kind, e.File, fmt.Sprintf(format, args...)))
	}
	want, err := cache.HeaderFor(e)
	if err != nil {
		return nil, 0, err
	}
	path := filepath.Join(root, filepath.FromSlash(e.File))
	st, err := os.Stat(path)
	if err != nil {
		add(FindingMissing, "file is missing (target %s)", e.Target)
		return out, 0, nil
	}
	if !recorded {
		add(FindingMissing, "not recorded in the manifest (target %s): the build did not finish it", e.Target)
		return out, 0, nil
	}
	if rec.EntryXXH3 != cache.EntryHash(e) {
		add(FindingStale, "the plan entry of target %s changed since the build (rule, sources, pieces, dtype, layout or shape)", e.Target)
	}
	size := want.FileSize()
	switch {
	case !st.Mode().IsRegular():
		add(FindingCorrupted, "not a regular file")
		return out, 0, nil
	case st.Size() < size:
		add(FindingTruncated, "%d bytes, the plan's header and shards need %d", st.Size(), size)
		return out, 0, nil
	case st.Size() > size:
		add(FindingCorrupted, "%d bytes, %d more than the plan's %d", st.Size(), st.Size()-size, size)
		return out, 0, nil
	case rec.Size != size:
		add(FindingStale, "manifest records %d bytes, the plan needs %d", rec.Size, size)
	}
	f, err := os.Open(path)
	if err != nil {
		add(FindingCorrupted, "cannot open: %v", err)
		return out, 0, nil
	}
	defer f.Close()
	got, err := tensorbin.ReadTensorbinHeader(f, st.Size())
	if err != nil {
		add(FindingCorrupted, "%v", err)
		return out, 0, nil
	}
	if d := cache.DiffHeaders(want, got); d != "" {
		add(FindingCorrupted, "header differs from the plan: %s", d)
		return out, 0, nil
	}
	hh, h, err := cache.HashFile(f, int64(got.DataOffset), st.Size())
	if err != nil {
		add(FindingCorrupted, "reading data: %v", err)
		return out, 0, nil
	}
	opt.Progress.Add(st.Size())
	opt.Progress.ItemDone()
	switch {
	case h != rec.DataXXH3:
		add(FindingCorrupted, "data hash %s, manifest records %s", h, rec.DataXXH3)
	case hh != rec.HeaderXXH3:
		add(FindingCorrupted, "header bytes hash %s, manifest records %s (the header parses and matches the plan, but its bytes changed)", hh, rec.HeaderXXH3)
	}
	// Sources.
	ts := cache.EntryTensors(e)
	var changed []string
	if len(ts) != len(rec.Sources) {
		add(FindingStale, "built from %d source tensors, the plan now reads %d", len(rec.Sources), len(ts))
		return out, st.Size(), nil
	}
	for i, t := range ts {
		r := rec.Sources[i]
		if r.Name != t.Name {
			changed = append(changed, t.Name)
			continue
		}
		if !opt.Rehash && cache.SameIdentity(r, cache.Identity(t)) {
			continue
		}
		sh, err := hashOf(t)
		if err != nil {
			return out, st.Size(), err
		}
		if sh != r.XXH3 {
			changed = append(changed, t.Name)
		}
	}
	if len(changed) > 0 {
		out = append(out, fail(FindingStale, e.File, fmt.Sprintf("source tensor(s) changed since the build: %s", strings.Join(changed, ", ")), changed...))
	}
	return out, st.Size(), nil
}

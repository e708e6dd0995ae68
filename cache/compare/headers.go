package compare

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/mapping"
)

// HeaderCache holds the headers of a cache folder's files, read once for
// every candidate held against it (a header that cannot be read: its
// error). A nil HeaderCache reads each header every time.
type HeaderCache struct {
	m map[string]headerOrErr
}

// NewHeaderCache is an empty HeaderCache.
func NewHeaderCache() *HeaderCache { return &HeaderCache{m: map[string]headerOrErr{}} }

type headerOrErr struct {
	h   *tensorbin.Header
	err error
}

func (hc *HeaderCache) read(path string) (*tensorbin.Header, error) {
	if hc != nil {
		if c, ok := hc.m[path]; ok {
			return c.h, c.err
		}
	}
	f, h, err := openHeader(path)
	if err == nil {
		f.Close()
	}
	if hc != nil {
		hc.m[path] = headerOrErr{h, err}
	}
	return h, err
}

// HeadersOptions tune Headers.
type HeadersOptions struct {
	// OwnShape holds a plan without shapes (mapping.PlanNames): each
	// common file's expected header is the one the plan's entry gives the
	// shape the file's own header records, so that everything but the
	// shape (dtype, layout, memory config with its shard spec, placement,
	// distribution, shard count and sizes) is compared.
	OwnShape bool
	// Cache keeps the headers read for the next call (nil: none kept).
	Cache *HeaderCache
}

// Headers holds a mapping plan against an existing cache directory —
// typically the one the serving stack wrote for the base checkpoint —
// reading only file names and headers, never data: every planned file
// missing there (DiffMissing), every .tensorbin file there that the plan
// does not produce (DiffExtra), and every header field of a common file
// that differs from the header the plan would write (DiffHeader, A = plan,
// B = cache; shard offsets are not compared). A header that cannot be read
// is DiffUnreadable.
//
// dir is either the cache root (holding the plan's
// <device>/tensor_cache_<tag>_mesh<R>x<C> directory) or that cache
// directory itself; the report's B names the directory used. Paths in the
// report are relative to it.
func Headers(plan *mapping.Plan, dir string, opt HeadersOptions) (*Report, error) {
	ownShape, headers := opt.OwnShape, opt.Cache
	cdir := dir
	if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(plan.CacheDir))); err == nil && st.IsDir() {
		cdir = filepath.Join(dir, filepath.FromSlash(plan.CacheDir))
	}
	files, err := cache.TensorbinFiles(cdir)
	if err != nil {
		return nil, err
	}
	rep := &Report{A: plan.CacheDir, B: cdir, FilesA: len(plan.Entries), FilesB: len(files), HeadersOnly: true, Diffs: []Difference{}}
	planned := map[string]*mapping.Entry{}
	for _, e := range plan.Entries {
		p := strings.TrimPrefix(e.File, plan.CacheDir+"/")
		planned[p] = e
		if !contains(files, p) {
			rep.Diffs = append(rep.Diffs, Difference{Kind: DiffMissing, File: p, Target: e.Target,
				Message: fmt.Sprintf("planned (target %s, rule %s), not in the cache", e.Target, e.Rule)})
		}
	}
	for _, p := range files {
		e, ok := planned[p]
		if !ok {
			msg := "in the cache, not produced by the plan"
			if alt := similarPlanned(p, planned); alt != "" {
				msg += "; the plan has " + alt
			}
			rep.Diffs = append(rep.Diffs, Difference{Kind: DiffExtra, File: p, Message: msg})
			continue
		}
		rep.Common++
		var want *tensorbin.Header
		if !ownShape {
			if want, err = cache.HeaderFor(e); err != nil {
				return nil, err
			}
		}
		got, err := headers.read(filepath.Join(cdir, filepath.FromSlash(p)))
		if err != nil {
			rep.Diffs = append(rep.Diffs, Difference{Kind: DiffUnreadable, File: p, Target: e.Target, B: "unreadable", Message: err.Error()})
			continue
		}
		if ownShape {
			se := *e
			se.DeviceShape = make([]int64, len(got.Spec.Shape))
			for i, d := range got.Spec.Shape {
				se.DeviceShape[i] = int64(d)
			}
			if want, err = cache.HeaderFor(&se); err != nil {
				// The shape cannot be stored as the rule says (a DRAM
				// width-sharded file that is not 2-D).
				rep.Diffs = append(rep.Diffs, Difference{Kind: DiffHeader, File: p, Target: e.Target, Field: "shape",
					A: "as rule " + e.Rule + " stores it", B: cache.FormatDims(got.Spec.Shape), Message: err.Error()})
				continue
			}
		}
		diffs := headerDiffs(p, want, got)
		for i := range diffs {
			diffs[i].Target = e.Target
		}
		if len(diffs) == 0 {
			rep.Identical++
		}
		rep.Diffs = append(rep.Diffs, diffs...)
	}
	sortDiffs(rep.Diffs)
	return rep, nil
}

// similarPlanned names the planned files that look like p renamed (e.g.
// qkvzab.dramshard for qkvzab.il): those in the same directory whose cache
// name shares the longest dotted prefix with p's, at most three of them.
func similarPlanned(p string, planned map[string]*mapping.Entry) string {
	dir, base := path.Split(mapping.CacheName(p))
	segs := strings.Split(base, ".")
	best, cands := 0, []string(nil)
	for q := range planned {
		qd, qb := path.Split(mapping.CacheName(q))
		if qd != dir {
			continue
		}
		qs := strings.Split(qb, ".")
		n := 0
		for n < len(segs) && n < len(qs) && segs[n] == qs[n] {
			n++
		}
		switch {
		case n == 0 || n < best:
		case n > best:
			best, cands = n, []string{q}
		default:
			cands = append(cands, q)
		}
	}
	if len(cands) == 0 || len(cands) > 3 {
		return ""
	}
	sort.Strings(cands)
	return strings.Join(cands, ", ")
}

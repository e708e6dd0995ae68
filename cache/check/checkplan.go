package check

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/mapping"
)

// planAgainst holds a mapping plan against an existing cache directory —
// typically the one the serving stack wrote for the base checkpoint —
// reading only file names and headers, never data: every planned file
// missing there (compare.DiffMissing), every .tensorbin file there that the plan
// does not produce (compare.DiffExtra), and every header field of a common file
// that differs from the header the plan would write (compare.DiffHeader, A = plan,
// B = cache; shard offsets are not compared). A header that cannot be read
// is compare.DiffUnreadable.
//
// dir is either the cache root (holding the plan's
// <device>/tensor_cache_<tag>_mesh<R>x<C> directory) or that cache
// directory itself; the report's B names the directory used. Paths in the
// report are relative to it.
func planAgainst(plan *mapping.Plan, dir string) (*compare.Report, error) {
	return compare.Headers(plan, dir, compare.HeadersOptions{})
}

// PlanModel is planAgainst for every folder of a model: the plan's own folder
// and, for a plan with a vision part (mapping.Plan.Vision), its vision
// folder, in that order. dir is the cache root (both folders are compared
// there), the text folder (its vision folder is the one beside it, in the
// same device folder), or the vision folder itself (only the vision part
// is compared). A vision folder that is not there gives a report with
// every planned file missing.
func PlanModel(plan *mapping.Plan, dir string) ([]*compare.Report, error) {
	vp := plan.Vision
	clean := filepath.Clean(dir)
	if vp != nil && filepath.Base(clean) == path.Base(vp.CacheDir) {
		rep, err := planAgainst(vp, dir)
		if err != nil {
			return nil, err
		}
		return []*compare.Report{rep}, nil
	}
	rep, err := planAgainst(plan, dir)
	if err != nil {
		return nil, err
	}
	if vp == nil {
		return []*compare.Report{rep}, nil
	}
	vdir := filepath.Join(filepath.Dir(clean), path.Base(vp.CacheDir))
	if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(plan.CacheDir))); err == nil && st.IsDir() {
		vdir = filepath.Join(dir, filepath.FromSlash(vp.CacheDir))
	}
	if st, err := os.Stat(vdir); err != nil || !st.IsDir() {
		miss := &compare.Report{A: vp.CacheDir, B: vdir, FilesA: len(vp.Entries), HeadersOnly: true, Diffs: []compare.Difference{}}
		for _, e := range vp.Entries {
			miss.Diffs = append(miss.Diffs, compare.Difference{Kind: compare.DiffMissing, File: strings.TrimPrefix(e.File, vp.CacheDir+"/"), Target: e.Target,
				Message: fmt.Sprintf("planned (target %s, rule %s), not in the cache: no vision folder %s", e.Target, e.Rule, vdir)})
		}
		return []*compare.Report{rep, miss}, nil
	}
	vrep, err := planAgainst(vp, vdir)
	if err != nil {
		return nil, err
	}
	return []*compare.Report{rep, vrep}, nil
}

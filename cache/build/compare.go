package build

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/compare"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/mapping"
)

// CompareOptions tune Compare.
type CompareOptions struct {
	// Skip are the files (relative to the cache folder) not compared:
	// those already found missing or unreadable.
	Skip map[string]bool
	// Scratch is where the files are built ("" for the system's temporary
	// directory), in batches of at most ScratchBytes of planned file size
	// (default 2 GiB).
	Scratch      string
	ScratchBytes int64
	// Workers and NaN go to the builds (NaN and Inf are built, not
	// refused) and Workers to the comparisons.
	Workers int
	NaN     NaN
	// Progress counts shard bytes compared (nil-safe).
	Progress *ckpt.Progress
	// Words are the caller's words for the option a difference's message
	// names ("NaN", compare.DirsOptions.Words).
	Words ckpt.Words
}

// Compare builds the files of plan that the cache folder dir also holds
// (all but opt.Skip) into a scratch root, in batches, and compares each
// with the folder's file shard by shard (compare.FileData: within the
// tolerance of its entry, mapping.Entry.Tolerance, when it applies a value
// op that is not exactly reproducible); the scratch root is removed. The
// report holds the data differences (each with its entry's target), the
// files within a tolerance, both sorted by file, and the shard bytes
// compared (Bytes); the NaN and Inf values the builds met are returned
// beside it.
func Compare(ctx context.Context, c *ckpt.Checkpoint, plan *mapping.Plan, dir string, opt CompareOptions) (*compare.Report, []ckpt.NonFinite, error) {
	budget := opt.ScratchBytes
	if budget <= 0 {
		budget = 2 << 30
	}
	rep := &compare.Report{}
	scratch, err := os.MkdirTemp(opt.Scratch, "ckpt-identify-")
	if err != nil {
		return nil, nil, fmt.Errorf("scratch directory for the data comparison: %w", err)
	}
	defer os.RemoveAll(scratch)
	var nonFinite []ckpt.NonFinite
	var batch []*mapping.Entry
	var size int64
	dirs := compare.DirsOptions{Workers: opt.Workers, Progress: opt.Progress, Words: opt.Words}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		sub := *plan
		sub.Entries = batch
		root := filepath.Join(scratch, "batch")
		// NaN and Inf are built, not refused: the cache under test holds
		// whatever its builder wrote (the serving stack does not refuse
		// them), and the NaN style (opt.NaN) only shows with them.
		sum, err := Write(ctx, c, &sub, root, WriteOptions{Workers: opt.Workers, NoSync: true, NaN: opt.NaN, AllowNonFinite: true})
		if err != nil {
			return fmt.Errorf("building the closest candidate's files to compare their data: %w", err)
		}
		nonFinite = append(nonFinite, sum.NonFinite...)
		for _, e := range batch {
			rel := strings.TrimPrefix(e.File, plan.CacheDir+"/")
			diffs, tol, n, err := compare.FileData(ctx, filepath.Join(root, filepath.FromSlash(e.File)), filepath.Join(dir, filepath.FromSlash(rel)), rel,
				compare.FileDataOptions{Tolerance: e.Tolerance(), Target: e.Target, DirsOptions: dirs})
			if err != nil {
				return err
			}
			rep.Bytes += n
			for _, d := range diffs {
				if d.Kind == compare.DiffData {
					d.Target = e.Target
					rep.Diffs = append(rep.Diffs, d)
				}
			}
			if tol != nil {
				rep.Tolerated = append(rep.Tolerated, *tol)
			}
		}
		batch, size = batch[:0], 0
		return os.RemoveAll(root)
	}
	for _, e := range plan.Entries {
		rel := strings.TrimPrefix(e.File, plan.CacheDir+"/")
		if opt.Skip[rel] {
			continue
		}
		h, err := cache.HeaderFor(e)
		if err != nil {
			return rep, nonFinite, err
		}
		if size > 0 && size+h.FileSize() > budget {
			if err := flush(); err != nil {
				return rep, nonFinite, err
			}
		}
		batch = append(batch, e)
		size += h.FileSize()
	}
	if err := flush(); err != nil {
		return rep, nonFinite, err
	}
	rep.Sort()
	return rep, nonFinite, nil
}

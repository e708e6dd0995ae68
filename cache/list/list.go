package list

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
)

// Result is the cache ls JSON document (docs/cli.md).
type Result struct {
	// Schema is the document's schema_version (ckpt.SchemaVersion).
	Schema ckpt.Schema       `json:"schema_version"`
	Dir    string            `json:"dir"`
	Files  []cache.ListEntry `json:"files"`
	// Unfinished says, for each listed cache folder whose build did not
	// finish (UnfinishedError), why: such a folder has no manifest, never
	// verifies and cannot be packed.
	Unfinished []string `json:"unfinished,omitempty"`
}

// Unreadable counts the files whose header could not be read.
func (r *Result) Unreadable() int {
	n := 0
	for _, e := range r.Files {
		if e.Error != "" {
			n++
		}
	}
	return n
}

// Bytes is the size of all the listed files.
func (r *Result) Bytes() int64 {
	var total int64
	for _, e := range r.Files {
		total += e.Bytes
	}
	return total
}

// SummaryRecord is the closing JSON Lines record of cache ls.
type SummaryRecord struct {
	Dir        string `json:"dir"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	Unreadable int    `json:"unreadable"`
}

// SummaryRecord is the listing's closing JSON Lines record.
func (r *Result) SummaryRecord() SummaryRecord {
	return SummaryRecord{r.Dir, len(r.Files), r.Bytes(), r.Unreadable()}
}

// Options is what `ckpt cache ls` asks for: the files under Dir, or
// those of the cache folder of the root Dir that Select picks.
type Options struct {
	Dir    string
	Select cache.Selector
}

// Run is the workflow of `ckpt cache ls`: cache.List of a directory that
// must exist. When opt.Dir is a cache folder, or opt.Select names one of a
// cache root, the listing is of that folder (cache.ResolveFolder);
// otherwise of everything under the directory. Every listed cache folder
// whose build did not finish is named in Unfinished. It reads headers
// only, and does not look at ctx.
func Run(ctx context.Context, opt Options) (*Result, error) {
	dir, sel := opt.Dir, opt.Select
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("listing %s: not a directory", dir)
	}
	var folders []string
	if sel != (cache.Selector{}) || cache.IsFolderName(filepath.Base(filepath.Clean(dir))) {
		f, err := cache.ResolveFolder(dir, sel)
		if err != nil {
			return nil, err
		}
		dir = f.Path()
		folders = []string{dir}
	} else if fs, err := cache.Folders(dir); err == nil {
		for _, f := range fs {
			folders = append(folders, f.Path())
		}
	}
	es, err := cache.List(dir)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 && len(folders) == 0 {
		if f := cache.CheckpointFile(dir); f != "" {
			// A checkpoint directory is not an empty cache: refused as
			// pack and identify refuse it.
			return nil, &cache.NoCacheError{Dir: dir, Checkpoint: f}
		}
	}
	if es == nil {
		es = []cache.ListEntry{}
	}
	res := &Result{Dir: dir, Files: es}
	for _, f := range folders {
		var ue *cache.UnfinishedError
		if errors.As(cache.CheckFinished(f), &ue) {
			res.Unfinished = append(res.Unfinished, ue.Error())
		}
	}
	return res, nil
}

package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// snapshotPathOpener opens a local path that lies in a Hugging Face cache
// snapshot (…/models--ORG--NAME/snapshots/<commit>[/FILE]) through a
// cacheStore, so that the snapshot's links into ../../blobs/ are followed
// (a plain directory store refuses links out of the directory) while
// nothing escapes the repository folder, and partial downloads and blob
// digests are known as with hf:ORG/NAME@<commit>. Other paths are left to
// the default local opener.
func snapshotPathOpener() ckpt.SourceOpener {
	return func(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
		if strings.Contains(src, "://") || strings.HasPrefix(src, "hf:") {
			return nil, "", false, nil
		}
		abs, err := filepath.Abs(src)
		if err != nil {
			return nil, "", false, nil
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, "", false, nil // the local opener reports it
		}
		dir, entry := abs, ""
		if !st.IsDir() {
			dir, entry = filepath.Dir(abs), filepath.Base(abs)
		}
		if id, ok := isRepoFolder(dir); ok && entry == "" {
			// A models--ORG--NAME folder: its main revision.
			s, err := openCache(filepath.Dir(dir), Repo{ID: id})
			if err != nil {
				return nil, "", true, err
			}
			return s, "", true, nil
		}
		commit := filepath.Base(dir)
		snapshots := filepath.Dir(dir)
		repoDir := filepath.Dir(snapshots)
		folder := filepath.Base(repoDir)
		rest, ok := strings.CutPrefix(folder, "models--")
		if filepath.Base(snapshots) != "snapshots" || !ok || !isCommit(commit) {
			return nil, "", false, nil
		}
		org, name, ok := strings.Cut(rest, "--")
		if !ok {
			org, name = "", rest
		}
		id := name
		if org != "" {
			id = org + "/" + name
		}
		s, err := openCache(filepath.Dir(repoDir), Repo{ID: id, Revision: commit})
		if err != nil {
			return nil, "", false, nil // not a well-formed cache: treat as a plain directory
		}
		return s, entry, true, nil
	}
}

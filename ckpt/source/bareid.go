package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// bareRepoID matches ORG/NAME[@REV] as the hf CLI takes a repository id
// (hf download Qwen/Qwen3.5-27B-FP8): names of letters, digits, '-', '_'
// and '.', not starting with '.' or '-'.
var bareRepoID = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*/[A-Za-z0-9_][A-Za-z0-9_.-]*(@[^/]+)?$`)

// BareRepoError says a local source that does not exist is written like a
// Hugging Face repository id, and names the two source forms that read
// one: hf: (the local cache, saying whether it holds the repository) and
// hf:// (the hub). It matches fs.ErrNotExist.
type BareRepoError struct {
	Source string
	// Cached: the local cache holds a folder of the repository (at
	// CacheDir); CacheDir is "" when the cache cannot be located.
	Cached   bool
	CacheDir string
}

// Error is the message of the BareRepoError.
func (e *BareRepoError) Error() string {
	cache := "the local Hugging Face cache"
	switch {
	case e.Cached:
		cache += " (it holds this repository)"
	case e.CacheDir != "":
		repo, _, _ := parseRepoPath(e.Source)
		cache += fmt.Sprintf(" (it does not hold this repository: hf download %s fetches it)", repo.ID)
	}
	return fmt.Sprintf("opening %s: no such file or directory; it looks like a Hugging Face repository id: hf:%s reads %s, hf://%s reads the hub",
		e.Source, e.Source, cache, e.Source)
}

// Is makes errors.Is(err, fs.ErrNotExist) true.
func (e *BareRepoError) Is(target error) bool { return target == fs.ErrNotExist }

// bareRepoOpener answers a local source that does not exist and is written
// like a repository id (ORG/NAME[@REV], as hf takes it) with a
// *BareRepoError; any other source is left to the next opener (ok false).
// It opens nothing.
func bareRepoOpener(getenv func(string) string) ckpt.SourceOpener {
	return func(ctx context.Context, src string) (ckpt.Store, string, bool, error) {
		if !bareRepoID.MatchString(src) {
			return nil, "", false, nil
		}
		if _, err := os.Lstat(src); !errors.Is(err, fs.ErrNotExist) {
			return nil, "", false, nil // it exists (or cannot be told): a local path
		}
		repo, err := parseRepo(src)
		if err != nil {
			return nil, "", false, nil
		}
		e := &BareRepoError{Source: src}
		if root, err := hfCacheRoot(getenv); err == nil {
			e.CacheDir = filepath.Join(root, RepoFolder(repo.ID))
			if st, err := os.Stat(e.CacheDir); err == nil && st.IsDir() {
				e.Cached = true
			}
		}
		return nil, "", true, e
	}
}

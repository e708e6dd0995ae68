package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ckpt-dev/ckpt/ckpt"
)

// CheckpointOutError says the output of a build is a directory holding a
// checkpoint (safetensors files or an index), not a cache root: the
// source and the output were most likely swapped. Nothing was written.
type CheckpointOutError struct {
	Out  string
	File string // the checkpoint file found there
}

func (e *CheckpointOutError) Error() string {
	return fmt.Sprintf("refusing to build a cache into %s: it holds a checkpoint (%s), not a cache root; are the source and the output swapped?", e.Out, ckpt.EscapeName(e.File))
}

// checkOutRoot refuses a cache root that holds a checkpoint: an index, or
// a .safetensors file directly in it. A root that does not exist yet is
// fine.
func checkOutRoot(out string) error {
	ents, err := os.ReadDir(out)
	if err != nil {
		return nil // missing (created later) or unreadable (the build says why)
	}
	var found []string
	for _, d := range ents {
		n := d.Name()
		if n == ckpt.IndexFile || strings.HasSuffix(n, ".safetensors") || strings.HasSuffix(n, ".safetensors.index.json") {
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	for _, n := range found {
		if strings.HasSuffix(n, ".json") {
			return &CheckpointOutError{Out: out, File: n}
		}
	}
	return &CheckpointOutError{Out: out, File: found[0]}
}

// UnfinishedError says a cache folder holds a build that did not finish:
// it has no manifest, and a build journal or lock that a build left there.
// Such a folder never verifies and cannot be packed; building again
// resumes it.
type UnfinishedError struct {
	Folder string
	// Files counts the .tensorbin files the build finished so far.
	Files int
	// Holder is the live process still building it, if any.
	Holder *LockInfo
}

func (e *UnfinishedError) Error() string {
	if e.Holder != nil {
		return fmt.Sprintf("%s is an unfinished build: no %s yet, a build is running there (%s)", e.Folder, ManifestName, e.Holder)
	}
	return fmt.Sprintf("%s is an unfinished build: no %s, a build there stopped before it finished (%d .tensorbin file(s) so far); run cache build again to resume it", e.Folder, ManifestName, e.Files)
}

// NoManifestError says a cache folder has no manifest and no trace of a
// ckpt build: it was written by another tool, or its manifest was removed.
type NoManifestError struct{ Folder string }

func (e *NoManifestError) Error() string {
	return fmt.Sprintf("%s has no %s: it was not built by ckpt cache build (or its manifest was removed)", e.Folder, ManifestName)
}

// Unwrap makes a missing manifest match fs.ErrNotExist.
func (e *NoManifestError) Unwrap() error { return fs.ErrNotExist }

// CheckFinished reports whether the cache folder dir holds a finished
// build: nil when its manifest exists, *UnfinishedError when a build
// journal or lock is there without one, *NoManifestError otherwise.
func CheckFinished(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, ManifestName)); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // present (or unreadable: reading it says why)
	}
	_, jerr := os.Stat(filepath.Join(dir, JournalName))
	_, lerr := os.Stat(filepath.Join(dir, LockName))
	if jerr != nil && lerr != nil {
		return &NoManifestError{Folder: dir}
	}
	e := &UnfinishedError{Folder: dir}
	if files, err := tensorbinFiles(dir); err == nil {
		e.Files = len(files)
	}
	if h, ok := LockHolder(dir); ok {
		e.Holder = &h
	}
	return e
}

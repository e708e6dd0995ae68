package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

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

// Error says the folder's build is unfinished: still running (naming the
// holder) or stopped, with the files done so far and how to resume it.
func (e *UnfinishedError) Error() string {
	if e.Holder != nil {
		return fmt.Sprintf("%s is an unfinished build: no %s yet, a build is running there (%s)", e.Folder, ManifestName, e.Holder)
	}
	return fmt.Sprintf("%s is an unfinished build: no %s, a build there stopped before it finished (%d .tensorbin file(s) so far); "+
		"run cache build again to resume it", e.Folder, ManifestName, e.Files)
}

// NoManifestError says a cache folder has no manifest and no trace of a
// ckpt build: it was written by another tool, or its manifest was removed.
type NoManifestError struct{ Folder string }

// Error says the folder has no manifest and was not built by ckpt cache
// build.
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
	if files, err := TensorbinFiles(dir); err == nil {
		e.Files = len(files)
	}
	if h, ok := LockHolder(dir); ok {
		e.Holder = &h
	}
	return e
}

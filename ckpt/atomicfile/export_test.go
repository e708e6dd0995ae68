package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// The helpers below are used by the tests only; they are not part of the
// package's API.

// Stream reports whether the file is a character device or FIFO written
// through (Open), not a temporary file renamed into place.
func (f *File) Stream() bool { return f.stream }

// WriteFile writes data to path atomically (Create, Write, Commit).
func WriteFile(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// Rename renames from to to and fsyncs to's directory: the move of a
// finished file or folder into place.
func Rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return &WriteError{Op: "renaming into", Path: to, Err: err}
	}
	return SyncDir(filepath.Dir(to))
}

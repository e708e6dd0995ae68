// Package atomicfile places output files atomically: a file is written
// under a temporary name beside its target (".<name>.tmp-*"), fsynced,
// renamed over the target and its directory fsynced, so that the target is
// either its old self or complete, never partly written. Every failure is a
// *WriteError (errors.Is ErrWrite): the tool's own side could not write its
// output, as opposed to input that could not be read.
//
// The pattern:
//
//	f, err := atomicfile.Create(path)
//	if err != nil {
//		return err
//	}
//	defer f.Abort() // nil-safe; a no-op after Commit
//	... write to f ...
//	return f.Commit()
//
// An output a command was asked to write (-o, --out, --dir) goes through
// Place, the one output policy (Open for files): links are followed and
// never replaced, a character device or FIFO is written through, anything
// else that is not a regular file is refused, and so is every input of the
// same command. Create alone is for the files a writer places inside a
// folder it owns (a cache folder, an extract directory being assembled).
//
// It is a leaf package: it imports only the standard library.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// ErrWrite is matched (with errors.Is) by every *WriteError: the tool could
// not write its own output (disk full, permission denied, read-only file
// system, a missing output directory). It is the opposite of
// ckpt.ErrMalformed, which blames the input.
var ErrWrite = errors.New("cannot write output")

// WriteError is a failure on the tool's own side while creating, writing,
// syncing or renaming an output file or directory.
type WriteError struct {
	Op   string // "creating", "writing", "syncing", "renaming", ...
	Path string // the output path, "" when Err names it
	Err  error
}

// Error is the operation, the path and the cause ("writing out.bin: ..."),
// leaving out the parts that are empty.
func (e *WriteError) Error() string {
	switch {
	case e.Op == "" && e.Path == "":
		return e.Err.Error()
	case e.Path == "":
		return e.Op + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *WriteError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrWrite) true.
func (e *WriteError) Is(target error) bool { return target == ErrWrite }

// TempPattern is the os.CreateTemp pattern of the temporary files of path:
// ".<base>.tmp-*" in path's directory (cache.IsTempName recognises it).
func TempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// File is a file written under a temporary name in the target's directory
// and renamed into place by Commit after an fsync; Abort (or a crash) leaves
// the target untouched.
type File struct {
	*os.File
	target string
	done   bool
	// NoSync makes Commit rename without fsyncing the file and its
	// directory: the rename is still atomic for every other process, but
	// the bytes reach the disk only with the kernel's write-back, so a
	// power loss or kernel crash soon after can leave the file under its
	// final name with contents that were never written.
	NoSync bool
	// syncDir is SyncDir (tests inject failures).
	syncDir func(dir string) error
	// stream: the target is a character device or FIFO written through
	// (Open): no temporary name, no rename, no fsync.
	stream bool
}

// Create starts writing path atomically: it creates the temporary file
// (mode 0644, as os.Create would). Every error of the file's creation,
// writes, sync and rename is a *WriteError.
func Create(path string) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), TempPattern(path))
	if err != nil {
		return nil, &WriteError{Op: "creating", Path: path, Err: unpath(err)}
	}
	// os.CreateTemp makes 0600 files; a checkpoint or cache file is as
	// readable as one written by os.Create.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, &WriteError{Op: "creating", Path: path, Err: unpath(err)}
	}
	return &File{File: f, target: path}, nil
}

// named gives an error of the temporary file the target's path: a message
// names the file the user asked for, never ".<name>.tmp-123".
func (f *File) named(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == f.File.Name() {
		return &fs.PathError{Op: pe.Op, Path: f.target, Err: pe.Err}
	}
	return err
}

// unpath is the cause of a *fs.PathError or *os.LinkError (which name the
// temporary file), for a WriteError that names the target itself.
func unpath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// Target is the path the file is renamed to by Commit (for a stream, the
// path it was opened at).
func (f *File) Target() string { return f.target }

// Write writes to the temporary file; an error is a *WriteError.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if err != nil {
		err = &WriteError{Err: f.named(err)}
	}
	return n, err
}

// WriteAt writes to the temporary file at off; an error is a *WriteError.
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	if err != nil {
		err = &WriteError{Err: f.named(err)}
	}
	return n, err
}

// Truncate sizes the temporary file; an error is a *WriteError.
func (f *File) Truncate(size int64) error {
	if err := f.File.Truncate(size); err != nil {
		return &WriteError{Err: f.named(err)}
	}
	return nil
}

// Chmod sets the temporary file's mode (a stream's device or FIFO is left
// as it is); an error is a *WriteError.
func (f *File) Chmod(mode os.FileMode) error {
	if f.stream {
		return nil
	}
	if err := f.File.Chmod(mode); err != nil {
		return &WriteError{Err: f.named(err)}
	}
	return nil
}

// Commit fsyncs (unless NoSync), closes and renames the file into place,
// then fsyncs the directory (unless NoSync). On a failure before the rename
// the temporary file is removed and the target is untouched; a failure to
// sync the directory after the rename is reported too (the target is in
// place, but may not survive a power loss). A stream (Open of a character
// device or FIFO) is only closed. A second Commit, or one after Abort, does
// nothing.
func (f *File) Commit() error {
	if f.done {
		return nil
	}
	f.done = true
	if f.stream {
		if err := f.File.Close(); err != nil {
			return &WriteError{Op: "closing", Path: f.target, Err: err}
		}
		return nil
	}
	if !f.NoSync {
		if err := f.File.Sync(); err != nil {
			f.File.Close()
			os.Remove(f.File.Name())
			return &WriteError{Op: "syncing", Path: f.target, Err: unpath(err)}
		}
	}
	if err := f.File.Close(); err != nil {
		os.Remove(f.File.Name())
		return &WriteError{Op: "closing", Path: f.target, Err: unpath(err)}
	}
	if err := os.Rename(f.File.Name(), f.target); err != nil {
		os.Remove(f.File.Name())
		return &WriteError{Op: "renaming into", Path: f.target, Err: unpath(err)}
	}
	if f.NoSync {
		return nil
	}
	if f.syncDir != nil {
		return f.syncDir(filepath.Dir(f.target))
	}
	return SyncDir(filepath.Dir(f.target))
}

// Abort removes the temporary file (a stream is closed: what was written
// to it stays written). It is nil-safe, idempotent and a no-op
// after Commit, so that `defer f.Abort()` follows every successful Create.
func (f *File) Abort() {
	if f == nil || f.done {
		return
	}
	f.done = true
	f.File.Close()
	if !f.stream {
		os.Remove(f.File.Name())
	}
}

// SyncDir fsyncs a directory, so that the renames and removals in it
// survive a power loss. Failures are *WriteError. On Windows, where a
// directory cannot be fsynced, it does nothing.
func SyncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return &WriteError{Op: "syncing directory", Path: dir, Err: err}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &WriteError{Op: "syncing directory", Path: dir, Err: err}
	}
	return nil
}

// NameTarget makes err, an error of writing into the temporary folder tmp
// that is renamed to target when complete, name target instead of tmp in
// its message (errors.Is and errors.As still see err); nil stays nil.
func NameTarget(err error, tmp, target string) error {
	if err == nil || tmp == "" || !strings.Contains(err.Error(), tmp) {
		return err
	}
	return &targetNamed{err: err, tmp: tmp, target: target}
}

type targetNamed struct {
	err         error
	tmp, target string
}

func (e *targetNamed) Error() string { return strings.ReplaceAll(e.err.Error(), e.tmp, e.target) }
func (e *targetNamed) Unwrap() error { return e.err }

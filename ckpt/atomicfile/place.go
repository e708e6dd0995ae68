package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrRefused is matched (with errors.Is) by every *RefusedError: an output
// path names something an output must not be written onto (an input of the
// same command, a directory, a block device, a non-empty directory). The
// command line is wrong; nothing was written.
var ErrRefused = errors.New("refusing to write output")

// RefusedError is an output path Place refused before anything was
// written: Flag is how the command line gave it ("-o", "--out", "--dir"),
// Path the path as given, Reason why.
type RefusedError struct {
	Flag, Path, Reason string
}

// Error is the flag (when given), the path and the reason it was refused.
func (e *RefusedError) Error() string {
	if e.Flag == "" {
		return e.Path + " " + e.Reason
	}
	return e.Flag + " " + e.Path + " " + e.Reason
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// Kind is what an output path names, as Place found it.
type Kind int

const (
	// KindNew: nothing is there; the file or directory is created.
	KindNew Kind = iota
	// KindRegular: a regular file, replaced atomically (temporary name beside
	// it, fsync, rename).
	KindRegular
	// KindStream: a character device or a FIFO (/dev/stdout, /dev/null, a
	// named pipe), written through: opened for writing, never replaced.
	KindStream
	// KindDir: an existing directory (Policy.Dir).
	KindDir
)

// Policy says what a command's output may be written onto; Place applies
// it.
type Policy struct {
	// Flag is the output's flag in messages ("-o", "--out", "--dir").
	Flag string
	// Inputs are the files the command reads (every shard, index,
	// config.json, cache file): an output that is one of them (the same
	// device and inode, through any link) is refused.
	Inputs []string
	// InputDirs are folders the command reads as a whole (the cache
	// folder cache pack archives): a file written anywhere inside one
	// (its real path, links followed, under the same directory: device
	// and inode) would become part of what it reads, or be left there as
	// a file it does not know, and is refused. A character device or FIFO
	// inside one, written through, leaves no file and is not refused.
	InputDirs []string
	// InputsAre names the inputs in the refusal ("the checkpoint being
	// read"); "" says "the input".
	InputsAre string
	// Seek: the writer writes at offsets (WriteAt, Truncate), so a
	// character device or a FIFO, which it could only stream to, is
	// refused.
	Seek bool
	// Dir: the output is a directory (a new name or an existing
	// directory; anything else is refused). Empty: an existing directory
	// must be empty.
	Dir, Empty bool
}

// inputsAre is InputsAre, or "the input" when it is empty.
func (p Policy) inputsAre() string {
	if p.InputsAre == "" {
		return "the input"
	}
	return p.InputsAre
}

// Target is where Place found an output goes.
type Target struct {
	// Path is the path to write: the path given with its symbolic links
	// followed to what they name (a link is never replaced; a dangling
	// link names the file to create). A KindStream target keeps the path given.
	Path string
	Kind Kind
}

// maxLinks bounds the symbolic links followed (Linux's own limit).
const maxLinks = 40

// Place is the output policy of every file and directory a command is
// asked to write (-o, --out, --dir); every writer of such an output calls
// it (Open calls it for files):
//
//   - symbolic links are followed: the output goes to the file the link
//     names, never over the link itself (a dangling link's target is
//     created);
//   - a new name is created, a regular file replaced atomically (Create);
//   - a character device or a FIFO (/dev/stdout, /dev/null, a named pipe)
//     is written through, never replaced; refused when Policy.Seek;
//   - a directory, a socket, a block device or anything else is refused
//     for a file (Policy.Dir: a directory or a new name, anything else
//     refused; Policy.Empty: a non-empty directory refused);
//   - a file that is one of Policy.Inputs (the same device and inode) is
//     refused (CheckInputs), and so is a new or regular file inside one of
//     Policy.InputDirs.
//
// A refusal is a *RefusedError (nothing was written); a path that cannot
// be examined (permission denied on its directory) is a *WriteError.
func Place(path string, p Policy) (Target, error) {
	refuse := func(reason string, args ...any) (Target, error) {
		return Target{}, &RefusedError{Flag: p.Flag, Path: path, Reason: fmt.Sprintf(reason, args...)}
	}
	if path == "" {
		return refuse("is empty")
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		to, err := followLinks(path)
		if err != nil {
			return Target{}, &WriteError{Op: "resolving", Path: path, Err: err}
		}
		if err := checkInsideInputs(path, to, p); err != nil {
			return Target{}, err
		}
		return Target{Path: to, Kind: KindNew}, nil
	}
	if errors.Is(err, syscall.ELOOP) {
		return refuse("is a loop of symbolic links")
	}
	if err != nil {
		return Target{}, &WriteError{Op: "examining", Path: path, Err: err}
	}
	if err := CheckInputs(path, p); err != nil {
		return Target{}, err
	}
	mode := st.Mode()
	switch {
	case p.Dir && mode.IsDir():
		if p.Empty {
			ents, err := os.ReadDir(path)
			if err != nil {
				return Target{}, &WriteError{Op: "reading", Path: path, Err: err}
			}
			if len(ents) > 0 {
				return refuse("is a directory that is not empty (%d entries, %s first): refusing to write into it", len(ents), quoteName(ents[0].Name()))
			}
		}
		return Target{Path: path, Kind: KindDir}, nil
	case p.Dir:
		return refuse("is %s, not a directory: refusing to replace it", describe(mode))
	case mode.IsDir():
		return refuse("is a directory, not a file: refusing to write over it")
	case mode.IsRegular():
		to, err := filepath.EvalSymlinks(path)
		if err != nil {
			return Target{}, &WriteError{Op: "resolving", Path: path, Err: err}
		}
		if st2, err := os.Stat(to); err != nil || !os.SameFile(st, st2) {
			return refuse("is a link that cannot be followed to its file (%s): refusing to replace it", to)
		}
		if err := checkInsideInputs(path, to, p); err != nil {
			return Target{}, err
		}
		return Target{Path: to, Kind: KindRegular}, nil
	case mode&(fs.ModeCharDevice|fs.ModeNamedPipe) != 0:
		if p.Seek {
			return refuse("is %s: this output is written at offsets and needs a regular file (or a directory)", describe(mode))
		}
		return Target{Path: path, Kind: KindStream}, nil
	}
	return refuse("is %s: an output is written to a regular file, a character device or a FIFO, never over anything else", describe(mode))
}

// CheckInputs refuses (a *RefusedError) an existing output path that is
// one of p.Inputs: the same device and inode, whatever links lead to
// either. Inputs that cannot be examined are skipped (they are not the
// output); so is an output that does not exist.
func CheckInputs(path string, p Policy) error {
	if len(p.Inputs) == 0 {
		return nil
	}
	out, err := os.Stat(path)
	if err != nil {
		return nil
	}
	for _, in := range p.Inputs {
		if st, err := os.Stat(in); err == nil && os.SameFile(out, st) {
			return &RefusedError{Flag: p.Flag, Path: path, Reason: fmt.Sprintf("is %s, a file of %s: refusing to write over an input", in, p.inputsAre())}
		}
	}
	return nil
}

// checkInsideInputs refuses a file to be written at to (path as given)
// inside one of p.InputDirs: a directory that contains to's directory,
// itself or any of its parents, compared by device and inode after the
// links of the path are followed (so a link or a bind mount of the folder
// is the folder). A directory that cannot be resolved (it does not exist:
// the write fails on its own) is not inside anything.
func checkInsideInputs(path, to string, p Policy) error {
	if len(p.InputDirs) == 0 {
		return nil
	}
	var dirs []os.FileInfo
	var names []string
	for _, d := range p.InputDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			dirs, names = append(dirs, st), append(names, d)
		}
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(to))
	if err != nil {
		return nil
	}
	parent, err = filepath.Abs(parent)
	if err != nil {
		return nil
	}
	for {
		if st, err := os.Stat(parent); err == nil {
			for i, d := range dirs {
				if os.SameFile(st, d) {
					return &RefusedError{Flag: p.Flag, Path: path,
						Reason: fmt.Sprintf("is inside %s, the folder of %s: refusing to write into an input", names[i], p.inputsAre())}
				}
			}
		}
		up := filepath.Dir(parent)
		if up == parent {
			return nil
		}
		parent = up
	}
}

// followLinks follows the symbolic links of a path that Stat found
// missing: a dangling link names the path to create (relative targets are
// relative to the link's directory); a path that is not a link is itself.
func followLinks(path string) (string, error) {
	p := path
	for range maxLinks {
		st, err := os.Lstat(p)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		to, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		p = to
	}
	return "", fmt.Errorf("more than %d symbolic links", maxLinks)
}

// describe names a file mode for a refusal: "a directory", "a block
// device", ...
func describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsRegular():
		return "a regular file"
	}
	return fmt.Sprintf("a file of mode %v", m)
}

// quoteName quotes a directory entry's name for a message (Go syntax, so
// that a hostile name cannot reach the terminal raw).
func quoteName(s string) string { return fmt.Sprintf("%q", s) }

// Open applies the output policy (Place, with p.Dir unset) to path and
// opens the file to write: a new or regular file through Create (written
// under a temporary name, renamed into place by Commit), a character
// device or FIFO written through (Commit and Abort close it; what was
// written stays written). A FIFO's open waits for a reader, as a shell
// redirection does. Every error but a refusal (*RefusedError) is a
// *WriteError.
func Open(path string, p Policy) (*File, error) {
	p.Dir, p.Empty = false, false
	t, err := Place(path, p)
	if err != nil {
		return nil, err
	}
	if t.Kind != KindStream {
		return Create(t.Path)
	}
	f, err := os.OpenFile(t.Path, os.O_WRONLY, 0)
	if err != nil {
		return nil, &WriteError{Op: "opening", Path: path, Err: err}
	}
	return &File{File: f, target: path, stream: true}, nil
}

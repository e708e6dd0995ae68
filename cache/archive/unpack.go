package archive

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/klauspost/compress/zstd"
)

// Limits on what an archive may ask for, checked before anything is
// written: no path component longer than a file system takes, no path
// longer than maxPathBytes.
const (
	maxNameBytes = 255
	maxPathBytes = 1024
)

// BadArchiveError says an archive is not one cache pack writes, or lies
// about what it holds: Entry names the tar entry (or manifest.json) at
// fault, "" for the archive as a whole. It matches ckpt.ErrMalformed
// (exit 2: the input is bad, not our side).
type BadArchiveError struct {
	Entry  string
	Reason string
}

// The reason copies names the archive gives (a device, a cache_dir): it
// is shown with their control and bidirectional characters escaped
// (ckpt.EscapeName), as the entry is quoted.
func (e *BadArchiveError) Error() string {
	if e.Entry == "" {
		return "bad archive: " + ckpt.EscapeName(e.Reason)
	}
	return fmt.Sprintf("bad archive: entry %s: %s", strconv.Quote(e.Entry), ckpt.EscapeName(e.Reason))
}

// Is makes errors.Is(err, ckpt.ErrMalformed) true.
func (e *BadArchiveError) Is(target error) bool { return target == ckpt.ErrMalformed }

func bad(entry, format string, args ...any) error {
	return &BadArchiveError{Entry: entry, Reason: fmt.Sprintf(format, args...)}
}

// FolderMismatchError says the archive holds another cache folder than the
// one the request named.
type FolderMismatchError struct {
	Named, Archive string // cache folders (<device>/tensor_cache_<tag>_mesh<R>x<C>)
	Path           string // the folder named
	// Companion is the archive's second folder (a vision model's vision
	// folder), "" for an archive of one folder.
	Companion string
}

// Error names the folder asked for and the archive's folder, with their
// names escaped for the terminal.
func (e *FolderMismatchError) Error() string {
	msg := e.message()
	return ckpt.EscapeName(msg) // the archive's folder names, and the path named
}

func (e *FolderMismatchError) message() string {
	if e.Companion != "" {
		return fmt.Sprintf("the archive holds cache folders %s and %s (one model), not %s (named by %s): unpack it into the cache root, or name a folder %s or %s",
			e.Archive, e.Companion, e.Named, e.Path, path.Base(e.Archive), path.Base(e.Companion))
	}
	return fmt.Sprintf("the archive holds cache folder %s, not %s (named by %s): unpack it into the cache root, or name a folder %s",
		e.Archive, e.Named, e.Path, path.Base(e.Archive))
}

// ExtractOptions tune Extract.
type ExtractOptions struct {
	Progress *ckpt.Progress // counts bytes extracted (nil-safe)
	// Archive is the archive's name recorded in the unpacked manifest
	// (cache.Unpacked; its base name only).
	Archive string

	noSync bool // (fuzzing) skip the fsyncs
	now    func() time.Time
	// freeBytes (tests) replaces the file system's free space (freeBytes).
	freeBytes func(dir string) (int64, bool)
	// exchange (tests) replaces the swap of a staged folder into place.
	exchange func(stage, dir string) (string, error)
}

// Unpacked is what Extract placed.
type Unpacked struct {
	Manifest *cache.Manifest
	// Folder is the cache folder written (its path: Folder.Path()).
	Folder cache.Folder
	// Replaced is set when the folder existed and was replaced; Dropped
	// lists its files (relative to the cache root) that the archive does
	// not hold: they are gone with the old folder.
	Replaced bool
	Dropped  []string
	// Warnings: what went wrong after the new folders were in place (an
	// old copy could not be removed).
	Warnings []string
	// Companion is what Extract placed of the model's vision folder when
	// the archive holds both folders of a vision model (Manifest, Folder,
	// ... are then the main folder's); nil for an archive of one folder.
	Companion *Unpacked
	// Missing is the path of the folder the manifest names as its
	// companion when the archive does not hold it (it was packed alone):
	// that folder is left as it is. "" otherwise.
	Missing string
}

// Extract extracts an archive written by Write into dest: a cache root (the
// archive's folder, <device>/tensor_cache_<tag>_mesh<R>x<C>, is written
// under it) or a cache folder (its name is tensor_cache_<tag>_mesh<R>x<C>;
// the archive must hold exactly that folder of that device). An archive of
// a vision model's two folders (Write) writes both, beside each other; a
// dest that names one of them places the other beside it.
//
// Nothing the archive says is trusted: its manifest (the first entry; an
// archive of an earlier version with the manifest last is read twice when
// r can seek) must name a cache folder consistent with its own device, tag
// and mesh and list only clean .tensorbin paths inside it; a second
// manifest (the second entry, <cache_dir>/manifest.json) must be the
// vision folder the first names as its companion, naming the first back;
// every entry must be a regular file a manifest lists, once, declaring the
// recorded size, and its header must parse and describe exactly that size
// before its data is written; its bytes must hash to the recorded hashes.
// Any of these failing is a *BadArchiveError naming the entry. Before the
// data of the first file is written, the free space beside the folders
// must hold the files of all of them (counted together where they share a
// file system), else a *atomicfile.WriteError naming the folder and both sizes.
//
// Each folder is staged in a temporary folder beside it (same file system,
// also when the device folder is a link to another one), under the
// folder's lock (cache.LockFolder; *cache.LockedError when another process
// holds it), with the manifest (marked cache.Unpacked) written last; only
// when every folder of the archive is staged, checked and synced is each
// swapped in with one atomic rename (an exchange with the existing
// folder, which is then removed). On any failure before that, every
// existing folder, its manifest included, is as it was, and nothing of the
// unpack is left behind. Of two folders the vision folder is swapped in
// first and the main folder last, so that a main folder from the archive
// always has the archive's vision folder beside it; when the second swap
// fails the first is swapped back. Only a crash in the instant between the
// two renames leaves the vision folder from the archive beside the main
// folder as it was (unpacking again completes it).
func Extract(ctx context.Context, r io.Reader, dest string, opt ExtractOptions) (*Unpacked, error) {
	if opt.now == nil {
		opt.now = time.Now
	}
	if opt.freeBytes == nil {
		opt.freeBytes = freeBytes
	}
	if opt.exchange == nil {
		opt.exchange = exchange
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(64<<20))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(archiveReader{zr})
	s, seekable := r.(io.Seeker)
	mb, legacy, err := readManifest(tr, seekable)
	if err != nil {
		return nil, err
	}
	if legacy {
		// The manifest was last (an archive of an earlier ckpt): it is
		// known now, read the entries again from the start.
		if _, err := s.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		if err := zr.Reset(r); err != nil {
			return nil, err
		}
		tr = tar.NewReader(archiveReader{zr})
	}
	m, err := checkManifest(mb, cache.ManifestName)
	if err != nil {
		return nil, err
	}
	u := &unpacker{opt: opt, legacy: legacy, mb: mb}
	var cm *cache.Manifest
	if !legacy {
		// A second folder's manifest comes right after the first one.
		if cm, err = u.readCompanion(tr, m); err != nil {
			return nil, err
		}
	}
	named := cache.IsFolderName(filepath.Base(filepath.Clean(dest)))
	main := &part{m: m, folder: cache.FolderOf(dest, m.CacheDir)}
	main.path = main.folder.Path()
	u.parts = []*part{main}
	var vision *part
	if cm != nil {
		vision = &part{m: cm, folder: cache.FolderOf(dest, cm.CacheDir)}
		vision.path = vision.folder.Path()
		u.parts = append(u.parts, vision)
	}
	if named {
		f, err := cache.ResolveFolder(dest, cache.Selector{})
		if err != nil {
			return nil, err
		}
		at, other := main, vision // the part at dest, the one beside it
		if vision != nil && f.Dir == cm.CacheDir {
			at, other = vision, main
		}
		if f.Dir != at.m.CacheDir {
			e := &FolderMismatchError{Named: f.Dir, Archive: m.CacheDir, Path: dest}
			if cm != nil {
				e.Companion = cm.CacheDir
			}
			return nil, e
		}
		at.folder, at.path = f, dest
		if other != nil {
			other.folder = cache.FolderOf(f.Root, other.m.CacheDir)
			other.path = filepath.Join(filepath.Dir(dest), path.Base(other.m.CacheDir))
		}
	}
	if m.Companion != "" && cm == nil {
		u.missing = filepath.Join(filepath.Dir(main.path), path.Base(m.Companion))
	}
	u.owner = map[string]*part{}
	for _, p := range u.parts {
		p.recs = map[string]cache.FileRecord{}
		for _, f := range p.m.Files {
			p.recs[f.Path] = f
			u.owner[f.Path] = p
		}
	}
	return u.run(ctx, tr)
}

// unpacker is one Extract at work.
type unpacker struct {
	opt    ExtractOptions
	mb     []byte // the first manifest's bytes
	legacy bool
	parts  []*part          // the main folder first
	owner  map[string]*part // the part each listed file belongs to
	seen   map[string]bool
	// pending is the entry read after the first manifest that was not a
	// second one; eof says the archive ended there.
	pending *tar.Header
	eof     bool
	// companionEntry is the name of the second manifest's entry ("" for
	// none); missing the path of a companion the archive lacks.
	companionEntry, missing string

	spaceChecked bool
}

// part is one cache folder of the archive being unpacked.
type part struct {
	m      *cache.Manifest
	folder cache.Folder
	path   string // the folder as named (root/cache_dir, or dest)

	real    string      // path with its links resolved: where the swap happens
	created []string    // directories this unpack created, outermost first
	lock    *cache.Lock // the folder's
	stage   string      // the staging folder beside real
	root    *os.Root    // stage
	recs    map[string]cache.FileRecord
	dirs    map[string]bool // staged directories (relative to the stage)

	// Of an archive of two folders: stageLock is the lock taken in the
	// staged folder before the swap, so that the folder placed first
	// stays locked until both are; moved is where the old folder is once
	// the staged one is in place (placed).
	stageLock *cache.Lock
	moved     string
	placed    bool
	res       *Unpacked
}

// run stages, checks and swaps; on failure it undoes what it created.
func (u *unpacker) run(ctx context.Context, tr *tar.Reader) (res *Unpacked, err error) {
	defer func() {
		if err != nil {
			for i := len(u.parts) - 1; i >= 0; i-- {
				u.parts[i].undo()
			}
		}
	}()
	for i, p := range u.parts {
		if err := p.prepare(u.parts[:i]); err != nil {
			return nil, err
		}
	}
	u.seen = map[string]bool{}
	if err := u.extractAll(ctx, tr); err != nil {
		return nil, err
	}
	return u.place()
}

package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ckpt-dev/ckpt/cache"
	"github.com/ckpt-dev/ckpt/cache/tensorbin"
	"github.com/ckpt-dev/ckpt/ckpt"
	"github.com/ckpt-dev/ckpt/ckpt/atomicfile"
	"github.com/ckpt-dev/ckpt/mapping"
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
// file system), else a *ckpt.WriteError naming the folder and both sizes.
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

// readCompanion reads the entry after the first manifest: the manifest of
// the model's second folder (returned, checked) when it is
// <m.Companion>/manifest.json, else the first file entry, kept for
// extractAll (nil manifest).
func (u *unpacker) readCompanion(tr *tar.Reader, m *cache.Manifest) (*cache.Manifest, error) {
	h, err := tr.Next()
	if err == io.EOF {
		u.eof = true
		return nil, nil
	}
	if err != nil {
		return nil, asBad("", err)
	}
	if m.Companion == "" || h.Name != companionManifestName(m.Companion) {
		u.pending = h
		return nil, nil
	}
	if h.Typeflag != tar.TypeReg {
		return nil, bad(h.Name, "not a regular file")
	}
	// The two manifests together within the bound of one: an archive of
	// two folders needs no more memory than one of a folder.
	if left := int64(maxManifestBytes - len(u.mb)); h.Size < 0 || h.Size > left {
		return nil, bad(h.Name, "%d bytes (the two manifests at most %d together, the first has %d)", h.Size, maxManifestBytes, len(u.mb))
	}
	cb, err := io.ReadAll(tr)
	if err != nil {
		return nil, asBad(h.Name, err)
	}
	cm, err := checkManifest(cb, h.Name)
	if err != nil {
		return nil, err
	}
	if m.Part != "" || cm.Part != mapping.PartVision {
		return nil, bad(h.Name, "the second manifest must be of the vision folder of the first (a main folder), not part %s of part %s",
			strconv.Quote(cm.Part), strconv.Quote(m.Part))
	}
	if why := pairProblem(m, cm); why != "" {
		return nil, bad(h.Name, "not the other folder of the model of %s: %s", m.CacheDir, why)
	}
	u.companionEntry = h.Name
	return cm, nil
}

// archiveReader marks errors of reading the archive (truncated or damaged
// zstd, a truncated tar stream) as the archive's.
type archiveReader struct{ r io.Reader }

func (a archiveReader) Read(p []byte) (int, error) {
	n, err := a.r.Read(p)
	if err != nil && err != io.EOF {
		err = bad("", "decompressing: %v", err)
	}
	return n, err
}

// readManifest reads the manifest: the first entry, or (legacy, when the
// archive can be read again) the last one, found by reading through the
// archive without writing anything.
func readManifest(tr *tar.Reader, rescan bool) (mb []byte, legacy bool, err error) {
	last, n := "", 0 // the entry being skipped: a read error is within it
	var lastSize int64
	for first := true; ; first = false {
		h, err := tr.Next()
		if err == io.EOF {
			if n == 0 {
				return nil, false, bad("", "no %s (the archive is empty)", cache.ManifestName)
			}
			return nil, false, bad("", "no %s among its %d entries, the last %s of %s (the archive is incomplete, or not a cache archive)",
				cache.ManifestName, n, strconv.Quote(last), ckpt.FormatBytes(lastSize))
		}
		if err != nil {
			return nil, false, asBad(last, err)
		}
		if h.Name != cache.ManifestName {
			if !rescan {
				return nil, false, bad(cache.ManifestName, "not the first entry of the archive (an archive of an earlier ckpt read from a stream: unpack it from a file)")
			}
			last, lastSize = h.Name, h.Size
			n++
			if err := plainEntry(h); err != nil {
				return nil, false, err
			}
			if h.Typeflag == tar.TypeReg {
				// Read past without writing, but not past a header that
				// does not describe the entry's size (a bomb of zeros).
				if _, _, err := readHead(tr, h.Name, h.Size); err != nil {
					return nil, false, err
				}
			}
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, false, bad(h.Name, "not a regular file")
		}
		if h.Size < 0 || h.Size > maxManifestBytes {
			return nil, false, bad(h.Name, "%d bytes (at most %d)", h.Size, maxManifestBytes)
		}
		mb, err := io.ReadAll(tr)
		if err != nil {
			return nil, false, asBad(h.Name, err)
		}
		return mb, !first, nil
	}
}

// asBad makes an error of reading the archive a *BadArchiveError about
// entry.
func asBad(entry string, err error) error {
	var b *BadArchiveError
	if errors.As(err, &b) {
		if b.Entry == "" && entry != "" {
			return &BadArchiveError{Entry: entry, Reason: b.Reason}
		}
		return b
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return bad(entry, "the archive ends inside it (truncated)")
	}
	return bad(entry, "%v", err)
}

// checkManifest parses the archive's manifest and refuses one that is not
// self-consistent: its cache_dir must be the folder of its own device, tag
// and mesh, and its files clean, distinct .tensorbin paths in that folder
// with no file where another one needs a directory, of sizes that can hold
// their headers.
func checkManifest(mb []byte, entry string) (*cache.Manifest, error) {
	m, err := cache.ParseManifest(mb, "in the archive")
	if err != nil {
		return nil, bad(entry, "%v", err)
	}
	mesh, err := mapping.ParseMesh(m.Mesh)
	if err != nil {
		return nil, bad(entry, "%v", err)
	}
	want := mapping.CacheDir(m.Device, m.Tag, mesh)
	if m.Part == mapping.PartVision {
		want = mapping.UnmeshedCacheDir(m.Device, m.Tag) // a vision folder is named without the mesh
	}
	if m.CacheDir != want || !cache.IsFolderName(path.Base(m.CacheDir)) {
		return nil, bad(entry, "cache_dir %s is not the folder of its device %s, tag %s and mesh %s (%s)",
			strconv.Quote(m.CacheDir), strconv.Quote(m.Device), strconv.Quote(m.Tag), m.Mesh, strconv.Quote(want))
	}
	if err := checkFolderNames(m); err != "" {
		return nil, bad(entry, "%s", err)
	}
	files := map[string]bool{}
	dirs := map[string]bool{}
	var total int64
	for _, f := range m.Files {
		rel := strings.TrimPrefix(f.Path, m.CacheDir+"/")
		switch {
		case files[f.Path]:
			return nil, bad(entry, "lists %s twice", strconv.Quote(f.Path))
		case !strings.HasSuffix(f.Path, mapping.FileExt):
			return nil, bad(entry, "lists %s, which is not a %s file", strconv.Quote(f.Path), mapping.FileExt)
		case len(rel) > maxPathBytes:
			return nil, bad(entry, "lists a path of %d bytes (at most %d)", len(rel), maxPathBytes)
		case f.Size < 8 || f.HeaderSize > uint64(f.Size-8):
			return nil, bad(entry, "records %d bytes with a header of %d for %s", f.Size, f.HeaderSize, strconv.Quote(f.Path))
		case total+f.Size < total:
			return nil, bad(entry, "file sizes overflow")
		}
		for _, seg := range strings.Split(rel, "/") {
			if strings.HasPrefix(seg, ".") || len(seg) > maxNameBytes {
				return nil, bad(entry, "lists %s: a name that begins with a dot or is longer than %d bytes", strconv.Quote(f.Path), maxNameBytes)
			}
		}
		files[f.Path] = true
		total += f.Size
		for d := path.Dir(f.Path); d != m.CacheDir; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	for p := range files {
		if dirs[p] {
			return nil, bad(entry, "lists %s both as a file and as a directory of other files", strconv.Quote(p))
		}
	}
	return m, nil
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

// prepare creates the folder if needed, takes its lock, removes staging
// folders that an unpack which died left and makes the staging folder
// beside the folder. A folder that is, through links, one of the folders
// prepared before (the other folder of a vision model), inside it, or
// holds it is refused before it is locked: swapping one would carry the
// other away.
func (p *part) prepare(before []*part) error {
	st, err := os.Lstat(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := p.mkdirs(filepath.Dir(p.path)); err != nil {
			return err
		}
		switch err := os.Mkdir(p.path, 0o755); {
		case err == nil:
			p.created = append(p.created, p.path)
		case !errors.Is(err, fs.ErrExist): // else made meanwhile: the lock decides
			return &ckpt.WriteError{Op: "creating cache folder", Path: p.path, Err: err}
		}
	case err != nil:
		return &ckpt.WriteError{Op: "opening cache folder", Path: p.path, Err: err}
	case st.Mode()&fs.ModeSymlink == 0 && !st.IsDir():
		return &ckpt.WriteError{Op: "unpacking", Path: p.path, Err: errors.New("exists and is not a directory")}
	}
	real, err := filepath.EvalSymlinks(p.path)
	if err != nil {
		return &ckpt.WriteError{Op: "opening cache folder", Path: p.path, Err: err}
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return &ckpt.WriteError{Op: "unpacking", Path: p.path, Err: errors.New("is a link to something that is not a directory")}
	}
	p.real = real
	for _, q := range before {
		if q.real == real || strings.HasPrefix(real, q.real+string(filepath.Separator)) || strings.HasPrefix(q.real, real+string(filepath.Separator)) {
			return &ckpt.RefusedOutputError{RefusedError: &atomicfile.RefusedError{Flag: "-o", Path: p.path,
				Reason: fmt.Sprintf("is %s through links, and %s is %s: the model's two folders must be two directories, neither inside the other", real, q.path, q.real)}}
		}
	}
	if p.lock, err = cache.LockFolder(real); err != nil {
		return err
	}
	parent, base := filepath.Dir(real), filepath.Base(real)
	prefix := ".unpack-" + base + "-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			// Ours while we hold the folder's lock: an unpack stages only
			// under it, so these are left by one that died. Only the
			// prefix and os.MkdirTemp's decimal suffix: the staging folder
			// of a folder whose name continues this one's (a tag with a
			// dash) is another unpack's.
			if n := strings.TrimPrefix(e.Name(), prefix); e.IsDir() && n != e.Name() && allDigits(n) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	if p.stage, err = os.MkdirTemp(parent, prefix); err != nil {
		return &ckpt.WriteError{Op: "creating staging folder", Path: parent, Err: err}
	}
	if p.root, err = os.OpenRoot(p.stage); err != nil {
		return &ckpt.WriteError{Op: "opening staging folder", Path: p.stage, Err: err}
	}
	p.dirs = map[string]bool{".": true}
	return nil
}

// mkdirs creates dir and its missing parents, recording which it created.
func (p *part) mkdirs(dir string) error {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		switch err := os.Mkdir(missing[i], 0o755); {
		case err == nil:
			p.created = append(p.created, missing[i])
		case !errors.Is(err, fs.ErrExist): // else made meanwhile, or a link: not ours to remove
			return &ckpt.WriteError{Op: "creating", Path: missing[i], Err: err}
		}
	}
	return nil
}

// undo removes the staging folder, releases the locks and removes the
// directories this unpack created (empty again by then).
func (p *part) undo() {
	if p.root != nil {
		p.root.Close()
	}
	p.stageLock.Release()
	if p.stage != "" {
		os.RemoveAll(p.stage)
	}
	p.lock.Release()
	for i := len(p.created) - 1; i >= 0; i-- {
		os.Remove(p.created[i])
	}
}

// extractAll writes every entry into its folder's staging folder and
// checks that every file the manifests list came.
func (u *unpacker) extractAll(ctx context.Context, tr *tar.Reader) error {
	manifests := 0
	if !u.legacy {
		manifests = 1 // readManifest consumed it
	}
	for !u.eof {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := u.pending
		u.pending = nil
		if h == nil {
			var err error
			h, err = tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return asBad("", err)
			}
		}
		if h.Name == cache.ManifestName {
			manifests++
			if manifests > 1 {
				return bad(h.Name, "appears twice")
			}
			b, err := io.ReadAll(io.LimitReader(tr, maxManifestBytes+1))
			if err != nil {
				return asBad(h.Name, err)
			}
			if !bytes.Equal(b, u.mb) {
				return bad(h.Name, "differs from the manifest read before")
			}
			continue
		}
		if h.Name == u.companionEntry {
			return bad(h.Name, "appears twice")
		}
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
	var lacking []string
	for _, p := range u.parts {
		for _, f := range p.m.Files {
			if !u.seen[f.Path] {
				lacking = append(lacking, f.Path)
			}
		}
	}
	if len(lacking) > 0 {
		more := ""
		if len(lacking) > 1 {
			more = fmt.Sprintf(" and %d more", len(lacking)-1)
		}
		return bad("", "it lacks %s%s, which the manifest lists (truncated?)", strconv.Quote(lacking[0]), more)
	}
	return nil
}

// entry checks one tar entry against the manifests and writes it into its
// folder's staging folder: its name, type and declared size first, then
// its header, before any of its data is written; its hashes after.
func (u *unpacker) entry(h *tar.Header, tr *tar.Reader) error {
	name := h.Name
	if h.Typeflag == tar.TypeDir {
		d := strings.TrimSuffix(name, "/")
		if err := cache.CheckRelPath(d); err != nil {
			return bad(name, "%v", err)
		}
		for _, p := range u.parts {
			if cd := p.m.CacheDir; d == cd || cache.UnderDir(d, cd) || strings.HasPrefix(cd, d+"/") {
				return nil // directories come with their files
			}
		}
		return bad(name, "a directory outside the cache folder %s", u.parts[0].m.CacheDir)
	}
	if err := cache.CheckRelPath(name); err != nil {
		return bad(name, "%v", err)
	}
	if err := plainEntry(h); err != nil {
		return err
	}
	p, ok := u.owner[name]
	if !ok && path.Base(name) == cache.ManifestName {
		return bad(name, "a manifest out of place (an archive holds the manifest of a second folder only right after the first one, and only of the folder that one names as its companion)")
	}
	var rec cache.FileRecord
	if ok {
		rec = p.recs[name]
	}
	switch {
	case !ok:
		return bad(name, "not in the manifest")
	case u.seen[name]:
		return bad(name, "appears twice")
	case h.Size != rec.Size:
		return bad(name, "declares %d bytes, the manifest records %d", h.Size, rec.Size)
	}
	u.seen[name] = true
	// The header must describe a file of exactly the declared size before
	// anything is written.
	head, hdr, err := readHead(tr, name, rec.Size)
	if err != nil {
		return err
	}
	if hdr.HeaderSize != rec.HeaderSize {
		return bad(name, "header size %d, the manifest records %d", hdr.HeaderSize, rec.HeaderSize)
	}
	if !u.spaceChecked {
		// Once the first entry's header showed the archive to be what it
		// claims: does all it declares fit?
		u.spaceChecked = true
		if err := u.checkSpace(); err != nil {
			return err
		}
	}
	rel := strings.TrimPrefix(name, p.m.CacheDir+"/")
	if d := path.Dir(rel); !p.dirs[d] {
		if err := p.root.MkdirAll(d, 0o755); err != nil {
			return &ckpt.WriteError{Op: "creating", Path: filepath.Join(p.stage, filepath.FromSlash(d)), Err: err}
		}
		for ; d != "."; d = path.Dir(d) {
			p.dirs[d] = true
		}
	}
	f, err := p.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &ckpt.WriteError{Op: "creating", Path: filepath.Join(p.stage, filepath.FromSlash(rel)), Err: err}
	}
	rh := newRegionHasher()
	w := io.MultiWriter(outputWriter{f}, rh, progressWriter{u.opt.Progress})
	_, err = w.Write(head)
	if err == nil {
		_, err = io.Copy(w, tr) // the tar reader stops at the declared size
	}
	if err == nil && !u.opt.noSync {
		if err = f.Sync(); err != nil {
			err = &ckpt.WriteError{Op: "syncing", Err: err}
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &ckpt.WriteError{Op: "closing", Err: cerr}
	}
	if err != nil {
		if errors.Is(err, ckpt.ErrWrite) {
			return fmt.Errorf("extracting %s: %w", name, err)
		}
		return asBad(name, err)
	}
	switch {
	case rh.n != rec.Size:
		return bad(name, "%d bytes, the manifest records %d", rh.n, rec.Size)
	case rh.sum() != rec.DataXXH3:
		return bad(name, "data hash %s, the manifest records %s", rh.sum(), rec.DataXXH3)
	case rh.headerSum() != rec.HeaderXXH3:
		return bad(name, "header hash %s, the manifest records %s", rh.headerSum(), rec.HeaderXXH3)
	}
	if rec.MTimeNS != 0 {
		// The recorded mtime, as the build left it (a rebuild still
		// rebuilds unpacked files: cache.Unpacked).
		mt := time.Unix(0, rec.MTimeNS)
		if err := p.root.Chtimes(rel, mt, mt); err != nil {
			return &ckpt.WriteError{Op: "setting the mtime of", Path: filepath.Join(p.stage, filepath.FromSlash(rel)), Err: err}
		}
	}
	u.opt.Progress.ItemDone()
	return nil
}

// readHead reads the header of a .tensorbin entry of the declared size
// (its size word, at most tensorbin.MaxHeaderSize bytes of FlatBuffer) and
// parses it: the header must describe a file of exactly that size.
func readHead(r io.Reader, name string, size int64) ([]byte, *tensorbin.Header, error) {
	if size < 8 {
		return nil, nil, bad(name, "%d bytes, too short for a .tensorbin file", size)
	}
	var word [8]byte
	if _, err := io.ReadFull(r, word[:]); err != nil {
		return nil, nil, asBad(name, err)
	}
	hs := binary.LittleEndian.Uint64(word[:])
	if hs > tensorbin.MaxHeaderSize || hs > uint64(size-8) {
		return nil, nil, bad(name, "header size %d exceeds the limit %d or the %d bytes after it", hs, tensorbin.MaxHeaderSize, size-8)
	}
	head := make([]byte, 8+hs)
	copy(head, word[:])
	if _, err := io.ReadFull(r, head[8:]); err != nil {
		return nil, nil, asBad(name, err)
	}
	hdr, err := tensorbin.ReadTensorbinHeader(bytes.NewReader(head), size)
	if err != nil {
		return nil, nil, bad(name, "%v", err)
	}
	if hdr.FileSize() != size {
		return nil, nil, bad(name, "its header describes a file of %d bytes, the entry declares %d", hdr.FileSize(), size)
	}
	return head, hdr, nil
}

// checkSpace refuses (our side: *ckpt.WriteError) an archive whose files
// do not fit in the free space beside their folders: the files of folders
// on one file system (a vision model's two folders, side by side) are
// counted together.
func (u *unpacker) checkSpace() error {
	type pool struct {
		parts []*part
		need  int64
		files int
	}
	var pools []*pool
	for _, p := range u.parts {
		var in *pool
		for _, q := range pools {
			if cache.SameFileSystem(q.parts[0].stage, p.stage) {
				in = q
				break
			}
		}
		if in == nil {
			in = &pool{}
			pools = append(pools, in)
		}
		in.parts = append(in.parts, p)
		for _, f := range p.m.Files {
			in.need += f.Size
		}
		in.files += len(p.m.Files)
	}
	for _, q := range pools {
		avail, ok := u.opt.freeBytes(q.parts[0].stage)
		if !ok || avail >= q.need {
			continue
		}
		first := q.parts[0]
		if len(q.parts) == 1 {
			return &ckpt.WriteError{Op: "unpacking", Path: first.path, Err: fmt.Errorf("the archive's %d files need %s; %s is free beside the folder (the old copy stays until the new one is complete)",
				q.files, ckpt.FormatBytes(q.need), ckpt.FormatBytes(avail))}
		}
		return &ckpt.WriteError{Op: "unpacking", Path: first.path, Err: fmt.Errorf("the archive's %d files of the model's two folders (this one and %s, on one file system) need %s (%d bytes) together; %s (%d bytes) is free beside the folders (the old copies stay until the new ones are complete)",
			q.files, q.parts[1].path, ckpt.FormatBytes(q.need), q.need, ckpt.FormatBytes(avail), avail)}
	}
	return nil
}

// plainEntry refuses an entry that is neither a plain regular file nor a
// directory: links, devices, and sparse files (whose holes the tar reader
// fills with zeros: gigabytes from a few bytes of archive).
func plainEntry(h *tar.Header) error {
	if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeDir {
		return bad(h.Name, "%s, not a regular file", typeName(h.Typeflag))
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return bad(h.Name, "a sparse file (PAX record %s), not a plain regular file", k)
		}
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "a device node"
	case tar.TypeFifo:
		return "a FIFO"
	case tar.TypeGNUSparse:
		return "a sparse file"
	}
	return fmt.Sprintf("of tar type %q", t)
}

// place writes each folder's manifest (marked as unpacked) into its
// staging folder and syncs it, then swaps the staged folders in, the
// vision folder first and the main folder last, each with one atomic
// exchange; the old folders are removed after. When a swap fails, the
// folders already swapped are swapped back: the cache is as it was.
func (u *unpacker) place() (*Unpacked, error) {
	for _, p := range u.parts {
		if err := u.seal(p); err != nil {
			return nil, err
		}
	}
	two := len(u.parts) > 1
	if two {
		// The folder placed first stays locked (by the lock taken in its
		// stage, which becomes the folder) until both are placed.
		for _, p := range u.parts {
			l, err := cache.LockFolder(p.stage)
			if err != nil {
				return nil, err
			}
			p.stageLock = l
		}
	}
	for i := len(u.parts) - 1; i >= 0; i-- {
		p := u.parts[i]
		err := u.swapIn(p)
		if err == nil && i > 0 && !u.opt.noSync {
			// The first rename reaches the disk before the second.
			err = atomicfile.SyncDir(filepath.Dir(p.real))
		}
		if err != nil {
			for _, q := range u.parts[i:] {
				if q.placed {
					if berr := u.swapBack(q); berr != nil {
						err = fmt.Errorf("%w; %v", err, berr)
					}
				}
			}
			return nil, err
		}
	}
	// From here on the new folders are in place: nothing is undone. The
	// old ones (with our locks) are at moved.
	for _, p := range u.parts {
		if !u.opt.noSync {
			if err := atomicfile.SyncDir(filepath.Dir(p.real)); err != nil {
				p.res.Warnings = append(p.res.Warnings, err.Error())
			}
		}
		if err := os.RemoveAll(p.moved); err != nil {
			p.res.Warnings = append(p.res.Warnings, fmt.Sprintf("the unpacked folder %s is in place, but its old copy could not be removed: %v", p.path, err))
		}
		p.lock.Release()
		p.stageLock.Release()
		p.stage = ""
	}
	res := u.parts[0].res
	res.Missing = u.missing
	if two {
		res.Companion = u.parts[1].res
		res.Warnings = append(res.Warnings, res.Companion.Warnings...)
	}
	return res, nil
}

// seal writes the manifest (marked as unpacked) into the staging folder
// and syncs it, and notes what the swap will replace.
func (u *unpacker) seal(p *part) error {
	m := *p.m
	m.Unpacked = &cache.Unpacked{Time: u.opt.now().UTC().Truncate(time.Second)}
	if u.opt.Archive != "" {
		m.Unpacked.Archive = filepath.Base(u.opt.Archive)
	}
	if err := cache.WriteManifest(p.stage, &m); err != nil {
		return err
	}
	if !u.opt.noSync {
		var dirs []string
		for d := range p.dirs {
			dirs = append(dirs, d)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := atomicfile.SyncDir(filepath.Join(p.stage, filepath.FromSlash(d))); err != nil {
				return err
			}
		}
	}
	p.res = &Unpacked{Manifest: &m, Folder: p.folder}
	p.res.Dropped, p.res.Replaced = p.dropped()
	p.root.Close()
	p.root = nil
	return nil
}

// swapIn exchanges the staged folder with the folder.
func (u *unpacker) swapIn(p *part) error {
	moved, err := u.opt.exchange(p.stage, p.real)
	if err != nil {
		return &ckpt.WriteError{Op: "moving the unpacked folder into place at", Path: p.real, Err: err}
	}
	p.moved, p.placed = moved, true
	p.lock.Moved(moved)
	p.stageLock.Moved(p.real)
	p.stage = "" // nothing of it is removed while it is in place
	return nil
}

// swapBack puts the old folder, at moved since swapIn, back in place; the
// unpacked one is then removed by undo. When that fails too the error
// says where each folder is, and neither is removed.
func (u *unpacker) swapBack(p *part) error {
	back, err := u.opt.exchange(p.moved, p.real)
	if err != nil {
		return fmt.Errorf("moving the old folder back also failed (%v): %s holds the archive's folder, the old one is at %s", err, p.real, p.moved)
	}
	p.placed = false
	p.lock.Moved(p.real)
	p.stageLock.Moved(back)
	p.stage = back
	return nil
}

// dropped lists the files of the folder being replaced that the archive
// does not hold (root-relative), and whether it held anything.
func (p *part) dropped() ([]string, bool) {
	var out []string
	held := false
	filepath.WalkDir(p.real, func(fp string, d fs.DirEntry, err error) error {
		if err != nil || fp == p.real {
			return nil
		}
		rel, _ := filepath.Rel(p.real, fp)
		if rel == cache.LockName {
			return nil
		}
		held = true
		if d.IsDir() {
			return nil
		}
		r := p.m.CacheDir + "/" + filepath.ToSlash(rel)
		if _, ok := p.recs[r]; !ok && rel != cache.ManifestName {
			out = append(out, r)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i], out[j]) })
	return out, held
}

// allDigits reports whether s is a non-empty run of decimal digits.
func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// checkFolderNames says why the folders m names cannot be a model's in a
// cache root ("" when they can): its device is one path segment; a vision
// part's folder is named without a mesh (a tag ending in _mesh<R>x<C>
// would give it a text folder's name); its companion, which the unpacked
// manifest keeps and verify, identify, pack and build read, is a cache
// folder of the same device and of the other kind (a main folder's an
// unmeshed vision folder, a vision folder's a meshed one), never a path
// into another device or root; and its part is one ckpt knows.
func checkFolderNames(m *cache.Manifest) string {
	if strings.Contains(m.Device, "/") || m.Device == "" {
		return fmt.Sprintf("device %s is not one path segment", strconv.Quote(m.Device))
	}
	unmeshed := func(dir string) bool { return cache.FolderOf("", dir).Unmeshed() }
	switch m.Part {
	case "":
	case mapping.PartVision:
		if !unmeshed(m.CacheDir) {
			return fmt.Sprintf("cache_dir %s of part %s ends in a mesh: a vision folder is named without a mesh", strconv.Quote(m.CacheDir), mapping.PartVision)
		}
	default:
		return fmt.Sprintf("part %s is neither the main one nor %s", strconv.Quote(m.Part), mapping.PartVision)
	}
	if m.Companion == "" {
		return ""
	}
	c := m.Companion
	want := "an unmeshed vision folder <device>/tensor_cache_<tag>"
	if m.Part == mapping.PartVision {
		want = "a text folder <device>/tensor_cache_<tag>_mesh" + m.Mesh
	}
	switch {
	case cache.CheckRelPath(c) != nil || path.Dir(c) != path.Dir(m.CacheDir) || !cache.IsFolderName(path.Base(c)) || c == m.CacheDir:
	case m.Part == "" && unmeshed(c):
		return ""
	case m.Part == mapping.PartVision && !unmeshed(c) && cache.FolderOf("", c).Mesh() == m.Mesh:
		return ""
	}
	return fmt.Sprintf("companion %s is not %s beside %s", strconv.Quote(c), want, m.CacheDir)
}

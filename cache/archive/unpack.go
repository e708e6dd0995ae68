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

func (e *BadArchiveError) Error() string {
	if e.Entry == "" {
		return "bad archive: " + e.Reason
	}
	return fmt.Sprintf("bad archive: entry %s: %s", strconv.Quote(e.Entry), e.Reason)
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
}

func (e *FolderMismatchError) Error() string {
	return fmt.Sprintf("the archive holds cache folder %s, not %s (named by %s): unpack it into the cache root, or name a folder %s",
		e.Archive, e.Named, e.Path, path.Base(e.Archive))
}

// UnpackOptions tune Unpack.
type UnpackOptions struct {
	Progress *ckpt.Progress // counts bytes extracted (nil-safe)
	// Archive is the archive's name recorded in the unpacked manifest
	// (cache.Unpacked; its base name only).
	Archive string

	noSync bool // (fuzzing) skip the fsyncs
	now    func() time.Time
}

// Unpacked is what Unpack placed.
type Unpacked struct {
	Manifest *cache.Manifest
	// Folder is the cache folder written (its path: Folder.Path()).
	Folder cache.Folder
	// Replaced is set when the folder existed and was replaced; Dropped
	// lists its files (relative to the cache root) that the archive does
	// not hold: they are gone with the old folder.
	Replaced bool
	Dropped  []string
	// Warnings: what went wrong after the new folder was in place (the old
	// copy could not be removed).
	Warnings []string
}

// Unpack extracts an archive written by Pack into dest: a cache root (the
// archive's folder, <device>/tensor_cache_<tag>_mesh<R>x<C>, is written
// under it) or a cache folder (its name is tensor_cache_<tag>_mesh<R>x<C>;
// the archive must hold exactly that folder of that device).
//
// Nothing the archive says is trusted: its manifest (the first entry; an
// archive of an earlier version with the manifest last is read twice when
// r can seek) must name a cache folder consistent with its own device, tag
// and mesh and list only clean .tensorbin paths inside it; every entry must
// be a regular file the manifest lists, once, declaring the recorded size,
// and its header must parse and describe exactly that size before its data
// is written; its bytes must hash to the recorded hashes. Any of these
// failing is a *BadArchiveError naming the entry.
//
// The folder is staged in a temporary folder beside it (same file system,
// also when the device folder is a link to another one), under the
// folder's lock (cache.LockFolder; *cache.LockedError when another process
// holds it), with the manifest (marked cache.Unpacked) written last; only
// then is it swapped in with one atomic rename (an exchange with the
// existing folder, which is then removed). On any failure the existing
// folder, its manifest included, is as it was, and nothing of the unpack is
// left behind.
func Unpack(ctx context.Context, r io.Reader, dest string, opt UnpackOptions) (*Unpacked, error) {
	if opt.now == nil {
		opt.now = time.Now
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
	m, err := checkManifest(mb)
	if err != nil {
		return nil, err
	}
	named := cache.IsFolderName(filepath.Base(filepath.Clean(dest)))
	target := cache.FolderOf(dest, m.CacheDir)
	if named {
		f, err := cache.ResolveFolder(dest, cache.Selector{})
		if err != nil {
			return nil, err
		}
		if f.Dir != m.CacheDir {
			return nil, &FolderMismatchError{Named: f.Dir, Archive: m.CacheDir, Path: dest}
		}
		target = f
	}
	u := &unpacker{opt: opt, m: m, mb: mb, legacy: legacy, folder: target}
	if named {
		u.path = dest
	} else {
		u.path = target.Path()
	}
	return u.run(ctx, tr)
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
func checkManifest(mb []byte) (*cache.Manifest, error) {
	m, err := cache.ParseManifest(mb, "in the archive")
	if err != nil {
		return nil, bad(cache.ManifestName, "%v", err)
	}
	mesh, err := mapping.ParseMesh(m.Mesh)
	if err != nil {
		return nil, bad(cache.ManifestName, "%v", err)
	}
	want := mapping.CacheDir(m.Device, m.Tag, mesh)
	if m.Part == mapping.PartVision {
		want = mapping.UnmeshedCacheDir(m.Device, m.Tag) // a vision folder is named without the mesh
	}
	if m.CacheDir != want || !cache.IsFolderName(path.Base(m.CacheDir)) {
		return nil, bad(cache.ManifestName, "cache_dir %s is not the folder of its device %s, tag %s and mesh %s (%s)",
			strconv.Quote(m.CacheDir), strconv.Quote(m.Device), strconv.Quote(m.Tag), m.Mesh, strconv.Quote(want))
	}
	files := map[string]bool{}
	dirs := map[string]bool{}
	var total int64
	for _, f := range m.Files {
		rel := strings.TrimPrefix(f.Path, m.CacheDir+"/")
		switch {
		case files[f.Path]:
			return nil, bad(cache.ManifestName, "lists %s twice", strconv.Quote(f.Path))
		case !strings.HasSuffix(f.Path, mapping.FileExt):
			return nil, bad(cache.ManifestName, "lists %s, which is not a %s file", strconv.Quote(f.Path), mapping.FileExt)
		case len(rel) > maxPathBytes:
			return nil, bad(cache.ManifestName, "lists a path of %d bytes (at most %d)", len(rel), maxPathBytes)
		case f.Size < 8 || f.HeaderSize > uint64(f.Size-8):
			return nil, bad(cache.ManifestName, "records %d bytes with a header of %d for %s", f.Size, f.HeaderSize, strconv.Quote(f.Path))
		case total+f.Size < total:
			return nil, bad(cache.ManifestName, "file sizes overflow")
		}
		for _, seg := range strings.Split(rel, "/") {
			if strings.HasPrefix(seg, ".") || len(seg) > maxNameBytes {
				return nil, bad(cache.ManifestName, "lists %s: a name that begins with a dot or is longer than %d bytes", strconv.Quote(f.Path), maxNameBytes)
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
			return nil, bad(cache.ManifestName, "lists %s both as a file and as a directory of other files", strconv.Quote(p))
		}
	}
	return m, nil
}

// unpacker is one Unpack at work.
type unpacker struct {
	opt    UnpackOptions
	m      *cache.Manifest
	mb     []byte
	legacy bool
	folder cache.Folder
	path   string // the folder as named (root/cache_dir, or dest)

	real    string      // path with its links resolved: where the swap happens
	created []string    // directories this unpack created, outermost first
	lock    *cache.Lock // the folder's
	stage   string      // the staging folder beside real
	root    *os.Root    // stage
	recs    map[string]cache.FileRecord
	seen    map[string]bool
	dirs    map[string]bool // staged directories (relative to the stage)

	spaceChecked bool
}

// run stages, checks and swaps; on failure it undoes what it created.
func (u *unpacker) run(ctx context.Context, tr *tar.Reader) (res *Unpacked, err error) {
	defer func() {
		if err != nil {
			u.undo()
		}
	}()
	if err := u.prepare(); err != nil {
		return nil, err
	}
	if err := u.extractAll(ctx, tr); err != nil {
		return nil, err
	}
	return u.swap()
}

// prepare creates the folder if needed, takes its lock, removes staging
// folders that an unpack which died left and makes the staging folder
// beside the folder.
func (u *unpacker) prepare() error {
	st, err := os.Lstat(u.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := u.mkdirs(filepath.Dir(u.path)); err != nil {
			return err
		}
		switch err := os.Mkdir(u.path, 0o755); {
		case err == nil:
			u.created = append(u.created, u.path)
		case !errors.Is(err, fs.ErrExist): // else made meanwhile: the lock decides
			return &ckpt.WriteError{Op: "creating cache folder", Path: u.path, Err: err}
		}
	case err != nil:
		return &ckpt.WriteError{Op: "opening cache folder", Path: u.path, Err: err}
	case st.Mode()&fs.ModeSymlink == 0 && !st.IsDir():
		return &ckpt.WriteError{Op: "unpacking", Path: u.path, Err: errors.New("exists and is not a directory")}
	}
	real, err := filepath.EvalSymlinks(u.path)
	if err != nil {
		return &ckpt.WriteError{Op: "opening cache folder", Path: u.path, Err: err}
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return &ckpt.WriteError{Op: "unpacking", Path: u.path, Err: errors.New("is a link to something that is not a directory")}
	}
	u.real = real
	if u.lock, err = cache.LockFolder(real); err != nil {
		return err
	}
	parent, base := filepath.Dir(real), filepath.Base(real)
	prefix := ".unpack-" + base + "-"
	if ents, err := os.ReadDir(parent); err == nil {
		for _, e := range ents {
			// Ours while we hold the folder's lock: an unpack stages only
			// under it, so these are left by one that died.
			if e.IsDir() && strings.HasPrefix(e.Name(), prefix) {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	if u.stage, err = os.MkdirTemp(parent, prefix); err != nil {
		return &ckpt.WriteError{Op: "creating staging folder", Path: parent, Err: err}
	}
	if u.root, err = os.OpenRoot(u.stage); err != nil {
		return &ckpt.WriteError{Op: "opening staging folder", Path: u.stage, Err: err}
	}
	u.recs = map[string]cache.FileRecord{}
	for _, f := range u.m.Files {
		u.recs[f.Path] = f
	}
	u.seen, u.dirs = map[string]bool{}, map[string]bool{".": true}
	return nil
}

// mkdirs creates dir and its missing parents, recording which it created.
func (u *unpacker) mkdirs(dir string) error {
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
			u.created = append(u.created, missing[i])
		case !errors.Is(err, fs.ErrExist): // else made meanwhile, or a link: not ours to remove
			return &ckpt.WriteError{Op: "creating", Path: missing[i], Err: err}
		}
	}
	return nil
}

// undo removes the staging folder, releases the lock and removes the
// directories this unpack created (empty again by then).
func (u *unpacker) undo() {
	if u.root != nil {
		u.root.Close()
	}
	if u.stage != "" {
		os.RemoveAll(u.stage)
	}
	u.lock.Release()
	for i := len(u.created) - 1; i >= 0; i-- {
		os.Remove(u.created[i])
	}
}

// extractAll writes every entry into the staging folder and checks that
// every file the manifest lists came.
func (u *unpacker) extractAll(ctx context.Context, tr *tar.Reader) error {
	manifests := 0
	if !u.legacy {
		manifests = 1 // readManifest consumed it
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return asBad("", err)
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
		if err := u.entry(h, tr); err != nil {
			return err
		}
	}
	var lacking []string
	for _, f := range u.m.Files {
		if !u.seen[f.Path] {
			lacking = append(lacking, f.Path)
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

// entry checks one tar entry against the manifest and writes it into the
// staging folder: its name, type and declared size first, then its
// header, before any of its data is written; its hashes after.
func (u *unpacker) entry(h *tar.Header, tr *tar.Reader) error {
	name := h.Name
	if h.Typeflag == tar.TypeDir {
		d := strings.TrimSuffix(name, "/")
		if err := cache.CheckRelPath(d); err != nil {
			return bad(name, "%v", err)
		}
		if d != u.m.CacheDir && !cache.UnderDir(d, u.m.CacheDir) && !strings.HasPrefix(u.m.CacheDir, d+"/") {
			return bad(name, "a directory outside the cache folder %s", u.m.CacheDir)
		}
		return nil // directories come with their files
	}
	if err := cache.CheckRelPath(name); err != nil {
		return bad(name, "%v", err)
	}
	if err := plainEntry(h); err != nil {
		return err
	}
	rec, ok := u.recs[name]
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
	rel := strings.TrimPrefix(name, u.m.CacheDir+"/")
	if d := path.Dir(rel); !u.dirs[d] {
		if err := u.root.MkdirAll(d, 0o755); err != nil {
			return &ckpt.WriteError{Op: "creating", Path: filepath.Join(u.stage, filepath.FromSlash(d)), Err: err}
		}
		for ; d != "."; d = path.Dir(d) {
			u.dirs[d] = true
		}
	}
	f, err := u.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return &ckpt.WriteError{Op: "creating", Path: filepath.Join(u.stage, filepath.FromSlash(rel)), Err: err}
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
		if err := u.root.Chtimes(rel, mt, mt); err != nil {
			return &ckpt.WriteError{Op: "setting the mtime of", Path: filepath.Join(u.stage, filepath.FromSlash(rel)), Err: err}
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
// do not fit in the free space beside the folder.
func (u *unpacker) checkSpace() error {
	var need int64
	for _, f := range u.m.Files {
		need += f.Size
	}
	if avail, ok := freeBytes(u.stage); ok && avail < need {
		return &ckpt.WriteError{Op: "unpacking", Path: u.path, Err: fmt.Errorf("the archive's %d files need %s; %s is free beside the folder (the old copy stays until the new one is complete)",
			len(u.m.Files), ckpt.FormatBytes(need), ckpt.FormatBytes(avail))}
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

// swap writes the manifest (marked as unpacked) into the staging folder,
// syncs it and exchanges it with the folder in one rename; the old folder
// is removed after.
func (u *unpacker) swap() (*Unpacked, error) {
	m := *u.m
	m.Unpacked = &cache.Unpacked{Time: u.opt.now().UTC().Truncate(time.Second)}
	if u.opt.Archive != "" {
		m.Unpacked.Archive = filepath.Base(u.opt.Archive)
	}
	if err := cache.WriteManifest(u.stage, &m); err != nil {
		return nil, err
	}
	if !u.opt.noSync {
		var dirs []string
		for d := range u.dirs {
			dirs = append(dirs, d)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := atomicfile.SyncDir(filepath.Join(u.stage, filepath.FromSlash(d))); err != nil {
				return nil, err
			}
		}
	}
	res := &Unpacked{Manifest: &m, Folder: u.folder}
	res.Dropped, res.Replaced = u.dropped()
	u.root.Close()
	u.root = nil
	moved, err := exchange(u.stage, u.real)
	if err != nil {
		return nil, &ckpt.WriteError{Op: "moving the unpacked folder into place at", Path: u.real, Err: err}
	}
	// From here on the new folder is in place: nothing is undone. The old
	// one (with our lock file) is at moved.
	u.lock.Moved(moved)
	if !u.opt.noSync {
		if err := atomicfile.SyncDir(filepath.Dir(u.real)); err != nil {
			res.Warnings = append(res.Warnings, err.Error())
		}
	}
	if err := os.RemoveAll(moved); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the unpacked folder is in place, but its old copy could not be removed: %v", err))
	}
	u.lock.Release()
	u.stage = ""
	return res, nil
}

// dropped lists the files of the folder being replaced that the archive
// does not hold (root-relative), and whether it held anything.
func (u *unpacker) dropped() ([]string, bool) {
	var out []string
	held := false
	filepath.WalkDir(u.real, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == u.real {
			return nil
		}
		rel, _ := filepath.Rel(u.real, p)
		if rel == cache.LockName {
			return nil
		}
		held = true
		if d.IsDir() {
			return nil
		}
		r := u.m.CacheDir + "/" + filepath.ToSlash(rel)
		if _, ok := u.recs[r]; !ok && rel != cache.ManifestName {
			out = append(out, r)
		}
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return ckpt.NaturalLess(out[i], out[j]) })
	return out, held
}
